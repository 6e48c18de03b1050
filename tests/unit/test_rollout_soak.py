"""Issue 21 item 2: the soak after a passing verification and the progress deadline per cluster.

The progress deadline is a pure function of the record's times and a given clock reading
(``rollout/waves.py``); the soak's verification is judged by the same acceptance gates under the
stage ``soak``, and both are answered by the failed-gate policy at the decision."""

import pytest
from conftest import PATCHED, PRE, THRESHOLDS
from plugins.module_utils.rollout.test_change import figures
from plugins.module_utils.rollout.test_change_runner import step

from ansible_collections.kaiops.runbooks.plugins.module_utils.rollout import change_runner as CR
from ansible_collections.kaiops.runbooks.plugins.module_utils.rollout import pipeline
from ansible_collections.kaiops.runbooks.plugins.module_utils.rollout import waves as W
from ansible_collections.kaiops.runbooks.plugins.module_utils.rollout.report import (
    build,
    render_markdown,
)

# ---------------------------------------------------------------- the progress deadline (pure)


def change(deadline=60, started_at=1000.0, soak=False):
    out = {"progress_deadline_s": deadline, "upgrade": {"status": "done"}}
    if started_at is not None:
        out["upgrade"]["started_at"] = started_at
    if soak:
        out["figures"] = {"verify": figures(), "soak": figures()}
    return out


@pytest.mark.parametrize("deadline", [0, None, "0"])
def test_progress_gate_is_none_without_a_deadline(deadline):
    assert W.progress_gate(change(deadline=deadline), 99999.0) is None


@pytest.mark.parametrize(
    ("started_at", "decided_at", "passed", "figure"),
    [
        (1000.0, 1059.9, True, 59.9),
        (1000.0, 1060.0, True, 60.0),  # on the deadline is in time
        (1000.0, 1060.2, False, 60.2),
        ("1000.0", 1030.0, True, 30.0),  # the role's set_fact gives the start as text
        (1000.0, 5000.0, False, 4000.0),
    ],
)
def test_progress_gate_measures_the_upgrades_start_to_the_decision(
    started_at, decided_at, passed, figure
):
    found = W.progress_gate(change(started_at=started_at), decided_at)
    assert (found["gate"], found["stage"], found["passed"]) == (
        "progress_deadline",
        "verify",
        passed,
    )
    assert found["figure"] == figure and found["unit"] == "s"
    assert "<= 60 s" in found["threshold"]
    if passed:
        assert found["message"] == "" and found["fix"] == ""
    else:
        assert "over the progress deadline of 60 s" in found["message"]
        assert "kaiops_rollout_progress_deadline_s" in found["fix"]


@pytest.mark.parametrize(
    ("started_at", "decided_at"),
    [
        (None, 1100.0),
        ("not a time", 1100.0),
        (1000.0, None),
        (float("nan"), 1100.0),
        (1200.0, 1100.0),
    ],
)
def test_progress_gate_fails_on_no_data(started_at, decided_at):
    found = W.progress_gate(change(started_at=started_at), decided_at)
    assert found["passed"] is False and found["figure"] == "no data"
    assert "no data is not a pass" in found["message"]


def test_progress_gate_is_judged_under_the_soak_after_a_soak():
    assert W.progress_gate(change(soak=True), 1010.0)["stage"] == "soak"


# ---------------------------------------------------------------- the soak's verification


def upgraded(**extra):
    """The record of a change whose target runs, before its verification."""
    return {
        "cluster": "lab",
        "request": {"kai_version": PATCHED, "thresholds": THRESHOLDS},
        "gates": [],
        "steps": [],
        "evidence": [],
        "change": dict(
            {
                "before": {"version": PRE, "revision": 40},
                "upgrade": {"status": "done", "started_at": 1000.0},
                "policy": {"policy": "rollback", "source": "default"},
                "soak_s": 300,
            },
            **extra,
        ),
    }


def soaked(soak_figures):
    record = pipeline.add_figures(upgraded(), "verify", figures(), THRESHOLDS)
    assert all(g["passed"] for g in record["gates"])
    return pipeline.add_figures(record, "soak", soak_figures, THRESHOLDS)


def test_a_soak_is_verified_on_the_version_under_test():
    assert CR.verify_inputs(upgraded(), "soak")["version"] == PATCHED


def test_a_regressed_gate_at_the_end_of_the_soak_decides_rollback(fake_module):
    record = soaked(figures(bound=(3.0, 9.0)))
    soak_gates = [g for g in record["gates"] if g["stage"] == "soak"]
    assert {g["gate"] for g in soak_gates if not g["passed"]} == {
        "bind_latency_p50",
        "bind_latency_p95",
    }
    steps = {s["step"]: s for s in record["steps"]}
    assert "after a soak of 300 s, failed: bind_latency_p50" in steps["soak"]["reason"]
    decided = step(fake_module, record=record, decision={}, wall=lambda: 1100.0)
    assert decided["action"] == "rollback" and decided["passed"] is False
    reason = {s["step"]: s for s in decided["record"]["steps"]}["decision"]["reason"]
    assert reason.startswith("failed gates bind_latency_p50, bind_latency_p95: policy rollback")


def test_a_soak_that_held_leaves_the_change(fake_module):
    decided = step(fake_module, record=soaked(figures()), decision={}, wall=lambda: 1100.0)
    assert decided["action"] == "none"


def test_a_pause_policy_answers_a_regressed_soak_too(fake_module):
    record = soaked(figures(restarts=2))
    record["change"]["policy"] = {"policy": "pause", "source": "request"}
    decided = step(fake_module, record=record, decision={}, wall=lambda: 1100.0)
    assert decided["action"] == "pause" and decided["decision"] == "paused"


# ---------------------------------------------------------------- the deadline at the decision


@pytest.mark.parametrize(("now", "action"), [(1059.0, "none"), (1061.0, "rollback")])
def test_the_decision_judges_the_progress_deadline_by_its_clock(fake_module, now, action):
    record = pipeline.add_figures(upgraded(progress_deadline_s=60), "verify", figures(), THRESHOLDS)
    decided = step(fake_module, record=record, decision={}, wall=lambda: now)
    assert decided["action"] == action
    gate = [g for g in decided["record"]["gates"] if g["gate"] == "progress_deadline"]
    assert [(g["stage"], g["figure"], g["passed"]) for g in gate] == [
        ("verify", round(now - 1000.0, 1), action == "none")
    ]


def test_no_deadline_adds_no_gate(fake_module):
    record = pipeline.add_figures(upgraded(), "verify", figures(), THRESHOLDS)
    decided = step(fake_module, record=record, decision={}, wall=lambda: 99999.0)
    assert decided["action"] == "none"
    assert "progress_deadline" not in {g["gate"] for g in decided["record"]["gates"]}


def test_the_policy_entry_records_soak_and_deadline_only_when_set(fake_module):
    rec = upgraded()
    del rec["change"]["soak_s"]
    out = step(fake_module, record=rec, policy={"soak_s": 0, "progress_deadline_s": 0})
    assert "soak_s" not in out["record"]["change"]
    out = step(fake_module, record=rec, policy={"soak_s": 600, "progress_deadline_s": 1800})
    assert (out["record"]["change"]["soak_s"], out["record"]["change"]["progress_deadline_s"]) == (
        600,
        1800,
    )


# ---------------------------------------------------------------- the report


def test_the_report_shows_the_soaks_gates_and_figures_beside_the_verifications():
    record = soaked(figures(bound=(3.0, 9.0)))
    record["change"]["figures"]["baseline"] = dict(figures(), version=PRE)
    record["change"]["figures"]["verify"]["version"] = PATCHED
    record["decision"] = "rolled_back"
    report = build({"kai_version": PATCHED}, {"lab": record}, "2026-12-06T00:00:00Z", run_id="r")
    markdown = render_markdown(report)
    assert "| lab | soak | bind_latency_p50 | 3.0" in markdown
    assert "| lab | verify | bind_latency_p50 | 0.5" in markdown
    assert "| After (%s) | After a soak of 300 s |" % PATCHED in markdown
    assert "| submit-to-bound p50 (s) | 0.5 | 0.5 | 3.0 |" in markdown
