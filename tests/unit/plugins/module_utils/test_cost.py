"""Unit tests for plugins/module_utils/cost.py (utilisation and cost)."""

from __future__ import annotations

import importlib.util
import sys
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from pathlib import Path

import pytest
from conftest import REPO

try:
    from ansible_collections.kaiops.runbooks.plugins.module_utils import cost
except ImportError:  # collection path not set up: load the file itself (stdlib only)
    _path = Path(REPO) / "plugins/module_utils/cost.py"
    _spec = importlib.util.spec_from_file_location("kaiops_cost", _path)
    cost = importlib.util.module_from_spec(_spec)
    sys.modules["kaiops_cost"] = cost
    _spec.loader.exec_module(cost)

D = Decimal
Window, Workload = cost.Window, cost.Workload


# ------------------------------------------------------------- the article's example


def test_article_scenario_reproduces_worked_example_exactly():
    r = cost.article_scenario()
    assert r.available_gpu_hours == D("32")
    assert r.counterfactual_busy_gpu_hours == D("19.2")
    assert r.busy_gpu_hours == D("14.4")
    assert r.lost_busy_gpu_hours == D("4.8")
    assert r.counterfactual_utilisation == D("0.6")
    assert r.utilisation == D("0.45")
    assert r.window_cost == D("96")
    assert r.counterfactual_cost_per_busy_gpu_hour == D("5")
    assert cost.q(r.counterfactual_cost_per_busy_gpu_hour) == D("5.00")
    assert cost.q(r.cost_per_busy_gpu_hour) == D("6.67")
    assert r.cost_per_busy_gpu_hour * D("14.4") == pytest.approx(D("96"))


def test_article_scenario_without_outage_is_the_baseline():
    r = cost.scenario(gpus=4, hours=8, busy_fraction=0.6, outage_hours=0, rate=3)
    assert (r.busy_gpu_hours, r.utilisation, r.cost_per_busy_gpu_hour) == (
        D("19.2"),
        D("0.6"),
        D("5"),
    )
    assert r.lost_busy_gpu_hours == 0
    assert r.delayed_workloads == ()


def test_article_figures_in_rendered_section():
    text = cost.render_markdown(cost.article_scenario(), completed_valid_jobs=7, currency="$")
    for needle in (
        "| available GPU-hours | 32.00 |",
        "| busy GPU-hours | 14.40 |",
        "| utilisation | 45.0 % |",
        "| cost of the window | $96.00 |",
        "| allocated cost per busy GPU-hour | $6.67 |",
        "| cost per busy GPU-hour had that work started | $5.00 |",
        "| busy GPU-hours lost to work that could not start | 4.80 |",
        "| completed valid jobs (counted separately) | 7 |",
        "Busy time is not useful throughput",
    ):
        assert needle in text


def test_render_markdown_without_jobs_or_busy_time():
    window = Window(0, 2, gpus=1)
    text = cost.render_markdown(cost.compute_report(window, [], rate=1))
    assert "| completed valid jobs (counted separately) | not recorded |" in text
    assert "| allocated cost per busy GPU-hour | undefined (no busy time) |" in text


# ------------------------------------------------------------------------ busy time


@pytest.mark.parametrize(
    ("workloads", "busy", "over"),
    [
        pytest.param([], D("0"), D("0"), id="no workloads"),
        pytest.param([Workload("a", "0", 1, start=0, end=10)], D("10"), D("0"), id="whole GPU"),
        pytest.param([Workload("a", "0", "0.25", start=2, end=6)], D("1"), D("0"), id="fraction"),
        pytest.param(
            [Workload("a", "0", "0.5", start=0, end=4), Workload("b", "0", "0.25", start=2, end=6)],
            D("3"),
            D("0"),
            id="overlapping portions add up",
        ),
        pytest.param(
            [Workload("a", "0", "0.75", start=0, end=4), Workload("b", "0", "0.5", start=2, end=4)],
            D("3.5"),
            D("0.5"),
            id="sum above one is capped and reported",
        ),
        pytest.param(
            [Workload("a", "0", "0.5", start=0, end=4), Workload("b", "1", "0.5", start=0, end=4)],
            D("4"),
            D("0"),
            id="different GPUs do not interact",
        ),
        pytest.param(
            [Workload("a", "0", 1, start=-5, end=3), Workload("b", "1", "0.5", start=8, end=99)],
            D("4"),
            D("0"),
            id="partly outside the window is clipped",
        ),
        pytest.param([Workload("a", "0", 1, start=20, end=30)], D("0"), D("0"), id="all outside"),
        pytest.param(
            [Workload("a", ["0", "1"], "0.5", start=0, end=2)], D("2"), D("0"), id="2 GPUs"
        ),
        pytest.param([Workload("a", "0", "0.5", start=6)], D("2"), D("0"), id="still running"),
        pytest.param([Workload("a", "0", "0.5")], D("0"), D("0"), id="never started"),
        pytest.param(
            [{"name": "a", "gpu": "1", "portion": 0.1, "start": 0, "end": 10}],
            D("1"),
            D("0"),
            id="record dict with float portion",
        ),
    ],
)
def test_busy_gpu_hours(workloads, busy, over):
    window = Window(0, 10, gpus=2)
    r = cost.compute_report(window, workloads, rate=1)
    assert r.available_gpu_hours == D("20")
    assert r.busy_gpu_hours == busy
    assert r.oversubscribed_gpu_hours == over
    assert cost.busy_gpu_hours(window, workloads) == busy


def test_busy_gpu_hours_with_datetimes():
    t0 = datetime(2026, 10, 26, 8, 0, tzinfo=UTC)
    window = Window(t0, t0 + timedelta(hours=8), gpus=["node-a/0", "node-a/1"])
    workloads = [
        Workload(
            "p1", "node-a/0", "0.5", start=t0 + timedelta(minutes=30), end="2026-10-26T10:30:00Z"
        ),
        Workload("p2", "node-a/1", 1, start=t0 - timedelta(hours=1), end=t0 + timedelta(hours=1)),
    ]
    r = cost.compute_report(window, workloads, rate="2.5")
    assert r.available_gpu_hours == D("16")
    assert r.busy_gpu_hours == D("2")
    assert r.utilisation == D("0.125")
    assert r.window_cost == D("40")
    assert r.cost_per_busy_gpu_hour == D("20")


# ----------------------------------------------------------------------- edge cases


@pytest.mark.parametrize(
    ("window", "message"),
    [
        pytest.param(Window(5, 5, 4), "Failed to compute window length", id="zero length"),
        pytest.param(Window(5, 1, 4), "Failed to compute window length", id="negative length"),
        pytest.param(Window(0, "x", 4), "Failed to read window end", id="not a number"),
        pytest.param(Window(0, 1, -1), "Failed to read window GPUs", id="negative GPUs"),
        pytest.param(Window(0, 1, ["a", "a"]), "duplicate", id="duplicate GPU names"),
        pytest.param(
            Window(datetime(2026, 1, 1, tzinfo=UTC), 3, 1), "mix datetimes", id="mixed kinds"
        ),
        pytest.param(
            Window(datetime(2026, 1, 1), datetime(2026, 1, 2), 1), "time zone", id="naive"
        ),
    ],
)
def test_window_errors(window, message):
    with pytest.raises(cost.CostError, match=message) as info:
        cost.compute_report(window, [], rate=3)
    assert str(info.value).startswith("Failed to ")


@pytest.mark.parametrize(
    ("workload", "message"),
    [
        pytest.param(Workload("w", "0", 0, start=0, end=1), "portion 0", id="zero portion"),
        pytest.param(Workload("w", "0", "1.5", start=0, end=1), "not in", id="portion above 1"),
        pytest.param(Workload("w", "9", 1, start=0, end=1), "not in the window", id="unknown GPU"),
        pytest.param(Workload("w", "0", 1, start=3, end=1), "ends before", id="ends first"),
        pytest.param(Workload("w", "0", True, start=0, end=1), "not a number", id="bool portion"),
        pytest.param({"name": "w", "portion": 1}, "required", id="record without gpus"),
    ],
)
def test_workload_errors(workload, message):
    with pytest.raises(cost.CostError, match=message):
        cost.compute_report(Window(0, 4, 2), [workload], rate=1)


def test_zero_busy_time_gives_none_not_division_error():
    r = cost.compute_report(Window(0, 8, 4), [], rate=3)
    assert r.busy_gpu_hours == 0
    assert r.utilisation == 0
    assert r.window_cost == D("96")
    assert r.cost_per_busy_gpu_hour is None
    assert r.counterfactual_cost_per_busy_gpu_hour is None


def test_zero_gpus_gives_undefined_utilisation():
    r = cost.compute_report(Window(0, 8, 0), [], rate=3)
    assert (r.available_gpu_hours, r.utilisation, r.window_cost) == (0, None, 0)


def test_negative_rate_is_rejected():
    with pytest.raises(cost.CostError, match="Failed to read rate"):
        cost.compute_report(Window(0, 1, 1), [], rate=-1)


def test_as_dict_is_json_friendly():
    d = cost.article_scenario().as_dict()
    assert d["busy_gpu_hours"] == "14.40"
    assert d["utilisation"] == "0.45"
    assert d["delayed_workloads"] == ["mix-0", "mix-1", "mix-2", "mix-3"]


# --------------------------------------------------------------------- failure loss


def test_failure_loss_counts_wait_between_submission_and_start():
    workloads = [
        Workload("late", "0", "0.5", submitted=1, start=3, end=8),
        Workload("on-time", "1", 1, submitted=0, start=0, end=8),
    ]
    loss = cost.failure_loss(Window(0, 8, 2), workloads)
    assert loss["lost_busy_gpu_hours"] == D("1")
    assert loss["delayed_workloads"] == ["late"]
    assert loss["waiting_gpu_hours"] == D("1")


def test_failure_loss_never_started_waits_to_window_end():
    loss = cost.failure_loss(Window(0, 8, 1), [Workload("stuck", "0", "0.25", submitted=6)])
    assert loss["lost_busy_gpu_hours"] == D("0.5")


def test_failure_loss_restricted_to_failure_window():
    workloads = [Workload("late", "0", 1, submitted=0, start=5, end=8)]
    loss = cost.failure_loss(Window(0, 8, 1), workloads, failure_window=(1, 3))
    assert loss["lost_busy_gpu_hours"] == D("2")
    outside = cost.failure_loss(Window(0, 8, 1), workloads, failure_window=(6, 7))
    assert outside["lost_busy_gpu_hours"] == 0
    assert outside["delayed_workloads"] == []


def test_failure_loss_overlapping_delays_on_one_gpu_are_capped():
    workloads = [
        Workload("a", "0", "0.75", submitted=0, start=2, end=4),
        Workload("b", "0", "0.75", submitted=0, start=2, end=4),
    ]
    loss = cost.failure_loss(Window(0, 4, 1), workloads)
    # counterfactual: 1.5 on one GPU for 4 h, capped at 1.0 -> 4; actual: capped 1.0 x 2 h
    assert loss["lost_busy_gpu_hours"] == D("2")
    assert loss["waiting_gpu_hours"] == D("3")


def test_failure_loss_clips_submissions_before_window():
    workloads = [Workload("old", "0", 1, submitted=-10, start=2, end=5)]
    assert cost.failure_loss(Window(0, 5, 1), workloads)["lost_busy_gpu_hours"] == D("2")


def test_scenario_rejects_outage_longer_than_window():
    with pytest.raises(cost.CostError, match="Failed to build scenario"):
        cost.scenario(gpus=1, hours=2, busy_fraction=1, outage_hours=3, rate=1)


def test_full_outage_leaves_no_busy_time():
    r = cost.scenario(gpus=2, hours=4, busy_fraction="0.5", outage_hours=4, rate=1)
    assert r.busy_gpu_hours == 0
    assert r.cost_per_busy_gpu_hour is None
    assert r.lost_busy_gpu_hours == D("4")


# -------------------------------------------------------------------------------------------------
# module_utils/cost.py fed recorded lab windows (not a made-up scenario).
#
# 1. The window of a gpu_access run on the lab (molecule converge, bundle
#    evidence/20261201T111711Z-converge-bda14784, KAI stand-in v0.16.14, fake GPUs): the pool is
#    the real node's two devices, the workloads are the probe pods that held a device, with their
#    container start/finish times and portions as gpu_access.json recorded them. No bind failed:
#    no loss.
# 2. Two case windows of a reproduce run on the lab (evidence/20261201T110829Z-reproduce-7df500a0,
#    case nil_data): on the exposed pre-patch build (v0.16.13) both fraction pods of one GPU group
#    never bound in the 2.241 s window, their reservation pod held the GPU for 1.501 s; on the
#    patched build (v0.16.14) they bound 0.557 s and 0.545 s after submission in a 0.719 s window.
#
# Each figure is worked out by hand in the test, from the recorded times. The first window is on
# the wall clock (hours; compared to the microsecond in seconds), the reproduce windows on an
# axis in seconds (the calculator takes any common unit), where every figure comes out exactly.


DEV_A = "kaiops-node/GPU-22957e35-0849-dd1c-3720-1f6121f7b48b"
DEV_B = "kaiops-node/GPU-5e946423-63c3-1593-819c-3e4855bd5ef8"
WINDOW = cost.Window("2026-12-01T11:17:14.107929Z", "2026-12-01T11:18:36.674281Z", [DEV_A, DEV_B])
# (pod, device, portion, container started, finished) - gpu_access.json "workloads"
RECORDED = [
    ("whole-gpu", DEV_A, "1", "2026-12-01T11:17:16Z", "2026-12-01T11:17:16Z"),
    ("concurrent-a", DEV_B, "1", "2026-12-01T11:17:20Z", "2026-12-01T11:17:28Z"),
    ("concurrent-b", DEV_A, "1", "2026-12-01T11:17:20Z", "2026-12-01T11:17:28Z"),
    ("fraction", DEV_B, "0.50", "2026-12-01T11:17:31Z", "2026-12-01T11:17:39Z"),
    ("sharing-a", DEV_B, "0.50", "2026-12-01T11:17:45Z", "2026-12-01T11:17:53Z"),
    ("sharing-b", DEV_B, "0.50", "2026-12-01T11:17:45Z", "2026-12-01T11:17:53Z"),
    ("contention-a", DEV_B, "0.50", "2026-12-01T11:17:58Z", "2026-12-01T11:18:06Z"),
    ("contention-b", DEV_B, "0.50", "2026-12-01T11:17:58Z", "2026-12-01T11:18:06Z"),
]


def seconds(hours):
    """GPU-hours as GPU-seconds, to the microsecond (the wall-clock axis is in hours)."""
    return cost.q(hours * 3600, "0.000001")


def workloads():
    return [cost.Workload(n, g, p, start=s, end=e) for n, g, p, s, e in RECORDED]


def test_a_recorded_gpu_access_window():
    report = cost.compute_report(WINDOW, workloads(), rate=3)
    length_s = D("82.566352")  # 11:17:14.107929 to 11:18:36.674281
    assert seconds(report.window_hours) == length_s
    assert seconds(report.available_gpu_hours) == 2 * length_s
    # busy GPU-seconds: 8 + 8 (the two whole GPUs) + 0.5 x 8 (fraction) + (0.5 + 0.5) x 8 (two
    # pods sharing one GPU) + (0.5 + 0.5) x 8 (contention) = 36; whole-gpu ran for 0 s
    assert seconds(report.busy_gpu_hours) == D("36")
    assert cost.q(report.utilisation, "0.000000001") == cost.q(
        D(36) / (2 * length_s), "0.000000001"
    )
    assert cost.q(report.utilisation * 100, "0.1") == D("21.8")
    assert cost.q(report.window_cost, "0.000001") == cost.q(3 * 2 * length_s / 3600, "0.000001")
    assert cost.q(report.cost_per_busy_gpu_hour) == D("13.76")
    assert report.oversubscribed_gpu_hours == 0
    assert report.lost_busy_gpu_hours == 0 and report.delayed_workloads == ()
    text = cost.render_markdown(report, completed_valid_jobs=8)
    assert "| utilisation | 21.8 % |" in text
    assert "| completed valid jobs (counted separately) | 8 |" in text


def test_the_recorded_window_with_the_fraction_held_back_by_a_failure():
    # The same window had the fraction pod's bind failed from its submission (11:17:30) to its
    # start (11:17:31): 0.5 GPU x 1 s of busy time lost, on a GPU otherwise idle then.
    held = [
        w
        if w.name != "fraction"
        else cost.Workload(
            w.name, w.gpus, w.portion, start=w.start, end=w.end, submitted="2026-12-01T11:17:30Z"
        )
        for w in workloads()
    ]
    report = cost.compute_report(WINDOW, held, rate=3)
    assert seconds(report.lost_busy_gpu_hours) == D("0.5")
    assert report.delayed_workloads == ("fraction",)
    assert seconds(report.counterfactual_busy_gpu_hours) == D("36.5")


GROUP_PRE = "7d9871e4-0f0d-44e9-912d-31c414200e80"
GROUP_PATCHED = "9266feb5-5986-47c2-ba30-8f3dbd0b539d"


def test_a_recorded_reproduce_failure_window_on_the_exposed_build():
    # v0.16.13 nil_data: 2.241 s, two pods of 0.5 on one group, submitted at 0, never bound.
    window = cost.Window(D(0), D("2.241"), [GROUP_PRE])
    pods = [
        cost.Workload(name, GROUP_PRE, "0.5", submitted=D(0))
        for name in ("edge-omitted", "edge-empty")
    ]
    report = cost.compute_report(window, pods, rate=3, failure_window=(D(0), D("2.241")))
    assert report.busy_gpu_hours == 0 and report.utilisation == 0
    assert report.cost_per_busy_gpu_hour is None  # undefined, not a division error
    # both halves of the GPU waited the whole window: one GPU's worth, 2.241 GPU-seconds lost
    assert report.lost_busy_gpu_hours == D("2.241")
    assert report.counterfactual_utilisation == 1
    assert report.delayed_workloads == ("edge-empty", "edge-omitted")
    # The reservation pod (1.501 s recorded) held the GPU idle meanwhile: capacity, not busy
    # time; the calculator has no workload for it, so the reports give it apart.
    assert D("1.501") <= report.available_gpu_hours and report.busy_gpu_hours == 0


def test_a_recorded_reproduce_window_on_the_patched_build():
    # v0.16.14 nil_data: 0.719 s, bound 0.557 s and 0.545 s after submission, running to the end.
    end = D("0.719")
    window = cost.Window(D(0), end, [GROUP_PATCHED])
    pods = [
        cost.Workload("edge-omitted", GROUP_PATCHED, "0.5", D("0.557"), end, D(0)),
        cost.Workload("edge-empty", GROUP_PATCHED, "0.5", D("0.545"), end, D(0)),
    ]
    report = cost.compute_report(window, pods, rate=3)
    # busy: 0.5 x (0.719 - 0.557) + 0.5 x (0.719 - 0.545) = 0.081 + 0.087 = 0.168 GPU-seconds
    assert report.busy_gpu_hours == D("0.168")
    # lost: both halves waiting until 0.545 (0.545), then one half until 0.557 (0.006)
    assert report.lost_busy_gpu_hours == D("0.551")
    assert report.counterfactual_busy_gpu_hours == D("0.719")
