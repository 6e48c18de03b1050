"""module_utils/cost.py fed recorded lab windows (not a made-up scenario).

1. The window of a gpu_access run on the lab (molecule converge, bundle
   evidence/20261201T111711Z-converge-bda14784, KAI stand-in v0.16.14, fake GPUs): the pool is
   the real node's two devices, the workloads are the probe pods that held a device, with their
   container start/finish times and portions as gpu_access.json recorded them. No bind failed:
   no loss.
2. Two case windows of a reproduce run on the lab (evidence/20261201T110829Z-reproduce-7df500a0,
   case nil_data): on the exposed pre-patch build (v0.16.13) both fraction pods of one GPU group
   never bound in the 2.241 s window, their reservation pod held the GPU for 1.501 s; on the
   patched build (v0.16.14) they bound 0.557 s and 0.545 s after submission in a 0.719 s window.

Each figure is worked out by hand in the test, from the recorded times. The first window is on
the wall clock (hours; compared to the microsecond in seconds), the reproduce windows on an
axis in seconds (the calculator takes any common unit), where every figure comes out exactly.
"""

from __future__ import annotations

from decimal import Decimal

from ansible_collections.kaiops.runbooks.plugins.module_utils import cost

D = Decimal
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
