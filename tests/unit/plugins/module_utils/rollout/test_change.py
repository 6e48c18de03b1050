"""The change window's pure layers: rollout/change.py (policy, chart, earlier runs, decision),
vocabulary.py's waves, rollout/acceptance.py (verification gates), rollout/probes.py (figures
from watches), rollout/restore.py, rollout/governance.py, and the pipeline's and report's
change-window parts."""

import pytest
from conftest import THRESHOLDS

from ansible_collections.kaiops.runbooks.plugins.module_utils.rollout import acceptance as A
from ansible_collections.kaiops.runbooks.plugins.module_utils.rollout import change as C
from ansible_collections.kaiops.runbooks.plugins.module_utils.rollout import governance as G
from ansible_collections.kaiops.runbooks.plugins.module_utils.rollout import pipeline
from ansible_collections.kaiops.runbooks.plugins.module_utils.rollout import probes as P
from ansible_collections.kaiops.runbooks.plugins.module_utils.rollout import report as R
from ansible_collections.kaiops.runbooks.plugins.module_utils.rollout import restore as RS
from ansible_collections.kaiops.runbooks.plugins.module_utils.rollout.gates import gate
from ansible_collections.kaiops.runbooks.plugins.module_utils.vocabulary import read_waves

# ---------------------------------------------------------------- policy, waves, chart


@pytest.mark.parametrize(
    ("value", "policy", "problem"),
    [
        (None, "rollback", None),
        ({}, "rollback", None),
        ("pause", "pause", None),
        ("rollback", "rollback", None),
        (
            {"policy": "continue", "decision": "known lab latency", "approved_by": "cab"},
            "continue",
            None,
        ),
        ("continue", None, "needs a recorded decision and approver"),
        ({"policy": "continue", "decision": "x"}, None, "has no approved_by"),
        ({"policy": "skip"}, None, "is not one of rollback, pause, continue"),
        ({"policy": "pause", "who": "me"}, None, "unknown keys who"),
        (["rollback"], None, "must be a name or a mapping, got a list"),
    ],
)
def test_read_policy(value, policy, problem):
    read, found = C.read_policy(value)
    if problem:
        assert read is None and problem in found
    else:
        assert found is None and read["policy"] == policy


def test_policy_text_names_the_decision_and_approver():
    read = C.read_policy({"policy": "continue", "decision": "why", "approved_by": "cab"})[0]
    assert C.policy_text(read) == "continue: why (approved by cab)"
    assert C.policy_text(C.read_policy(None)[0]) == "rollback (default)"


@pytest.mark.parametrize(
    ("value", "waves", "problem"),
    [
        (None, [1], False),
        ([1, "25%", "100%"], [1, "25%", "100%"], False),
        ("2", [2], False),
        ([0], None, True),
        (["150%"], None, True),
        ([True], None, True),
    ],
)
def test_read_waves(value, waves, problem):
    read, found = read_waves(value)
    assert (found is not None) == problem
    assert read == waves


def test_chart_replaces_the_version_or_gives_it_as_chart_version():
    assert C.chart("/charts/kai-{version}.tgz", "v1.2.3") == ("/charts/kai-v1.2.3.tgz", None)
    assert C.chart(None, "v1.2.3") == (C.OFFICIAL_CHART, "v1.2.3")


# ---------------------------------------------------------------- earlier runs


def rollout_run(bundle, decision, before=None, after=None, status="complete", upgrade=True):
    change = {"before": before or {}, "after": after or {}}
    if upgrade:
        change["upgrade"] = {"status": "done"}
    return {
        "bundle": bundle,
        "status": status,
        "verified": status == "complete",
        "report": {
            "kind": "rollout",
            "kai_version": "v0.16.14",
            "clusters": {"lab": {"decision": decision, "gates": [], "change": change}},
        },
        "snapshot": None,
        "snapshot_folder": None,
    }


PRE = {"version": "v0.16.13", "revision": 40, "snapshot": "snapshots/before-change-lab"}
AFTER = {"version": "v0.16.14", "revision": 41}


def test_earlier_runs_finds_the_approved_run_at_the_revision_that_runs():
    runs = [rollout_run("b1", "approved", PRE, AFTER)]
    found = C.earlier_runs("lab", "v0.16.14", runs, {"version": "v0.16.14", "revision": "41"})
    assert found["approved"]["bundle"] == "b1"
    assert found["origin"]["before"]["revision"] == 40
    assert found["origin"]["snapshot"] == "b1/snapshots/before-change-lab"


def test_earlier_runs_ignores_an_approved_run_when_the_release_moved_on():
    runs = [rollout_run("b1", "approved", PRE, AFTER)]
    found = C.earlier_runs("lab", "v0.16.14", runs, {"version": "v0.16.14", "revision": 42})
    assert found["approved"] is None
    assert found["origin"]["bundle"] == "b1"  # the state before the change still comes from it


def test_earlier_runs_lists_interrupted_runs_and_resumes_from_their_snapshot():
    interrupted = {
        "bundle": "b2",
        "status": "interrupted",
        "verified": False,
        "report": None,
        "snapshot": {
            "revision": 50,
            "chart": "kai-scheduler-v0.16.13",
            "app_version": "v0.16.13+standin",
        },
        "snapshot_folder": "snapshots/before-change-lab",
        "baseline": {"probes": 9},
        "last_task": "Upgrade KAI through helm to v0.16.14",
    }
    runs = [rollout_run("b1", "rolled_back", PRE, AFTER), interrupted]
    found = C.earlier_runs("lab", "v0.16.14", runs, {"version": "v0.16.14", "revision": 51})
    assert [r["bundle"] for r in found["interrupted"]] == ["b2"]
    assert found["origin"]["before"] == {
        "revision": 50,
        "chart": "kai-scheduler-v0.16.13",
        "version": "v0.16.13",
    }
    assert found["origin"]["baseline"] == {"probes": 9}
    # on the old version still: nothing to resume from
    assert C.earlier_runs("lab", "v0.16.14", runs, {"version": "v0.16.13"})["origin"] is None


def test_a_complete_run_supersedes_the_interrupted_ones_before_it():
    interrupted = dict(rollout_run("b1", None, status="interrupted"), snapshot={"revision": 1})
    runs = [interrupted, rollout_run("b2", "refused", upgrade=False)]
    found = C.earlier_runs("lab", "v0.16.14", runs, {"version": "v0.16.13"})
    assert found == {"approved": None, "interrupted": [], "origin": None}


# ---------------------------------------------------------------- decision


def record(*gates, **change):
    return {"cluster": "lab", "gates": list(gates), "change": change}


OK = gate("request", "change_owner", "me", "non-empty", True)
VERIFY_OK = gate("verify", "bind_latency_p50", 1, "<= 2", True)
VERIFY_BAD = gate("verify", "bind_latency_p50", 9, "<= 2", False, "too slow")
ROLLBACK_OK = gate("rollback", "bind_latency_p50", 1, "<= 2", True)
ROLLBACK_BAD = gate("rollback", "bind_latency_p50", 9, "<= 2", False, "too slow")
DONE = {"status": "done"}
# The change's version pair, and a rehearsal of it (rollout/change.py find_rehearsal cites one).
BEFORE = {"version": "v0.16.13"}
REHEARSED = {
    "bundle": "r1",
    "cluster": "lab",
    "from": "v0.16.14",
    "to": "v0.16.13",
    "passed": True,
    "time_to_restore_s": 3.9,
}
WAIVER = {"reason": "drill: the interruption is under test", "approved_by": "cab"}


def requested(rec, waiver=None):
    rec["request"] = {"kai_version": "v0.16.14", "rehearsal_waiver": waiver}
    return rec


@pytest.mark.parametrize(
    ("rec", "decision"),
    [
        (record(gate("request", "change_owner", "missing", "x", False)), "refused"),
        (record(OK), "proceed"),
        (record(OK, prior={"bundle": "b1"}), "approved"),
        (record(OK, VERIFY_OK, upgrade=DONE), "not_approved"),
        (
            requested(record(OK, VERIFY_OK, upgrade=DONE, before=BEFORE, rehearsal=REHEARSED)),
            "approved",
        ),
        (requested(record(OK, VERIFY_OK, upgrade=DONE, before=BEFORE), WAIVER), "approved"),
        (
            requested(record(OK, VERIFY_OK, upgrade=DONE, before=BEFORE), {"reason": "x"}),
            "not_approved",
        ),
        (
            requested(
                record(
                    OK,
                    VERIFY_OK,
                    upgrade=DONE,
                    before={"version": "v0.16.12"},
                    rehearsal=REHEARSED,
                )
            ),
            "not_approved",
        ),
        (
            requested(
                record(
                    OK,
                    VERIFY_OK,
                    upgrade=DONE,
                    before=BEFORE,
                    rehearsal=dict(REHEARSED, passed=False),
                )
            ),
            "not_approved",
        ),
        (requested(record(OK, prior={"bundle": "b1"})), "approved"),
        (requested(record(OK, VERIFY_BAD, upgrade=DONE, rollback=DONE)), "rolled_back"),
        (record(OK, VERIFY_BAD, upgrade=DONE, rollback=DONE), "rolled_back"),
        (record(OK, VERIFY_BAD, ROLLBACK_BAD, upgrade=DONE, rollback=DONE), "rollback_failed"),
        (record(OK, VERIFY_BAD, upgrade=DONE, rollback={"status": "failed"}), "rollback_failed"),
        (record(OK, VERIFY_BAD, upgrade=DONE, policy={"policy": "pause"}), "paused"),
        (record(OK, VERIFY_BAD, upgrade=DONE, policy={"policy": "continue"}), "continued"),
        (record(OK, error="Upgrade: helm failed"), "failed"),
        (record(OK, VERIFY_OK, ROLLBACK_OK, upgrade=DONE, rollback=DONE, error="x"), "rolled_back"),
    ],
)
def test_decide(rec, decision):
    assert C.decide(rec) == decision


@pytest.mark.parametrize(
    ("entry", "found"),
    [
        (
            {
                "decision": "rolled_back",
                "current_version": "v0.16.14",
                "change": {
                    "operation": "rollback",
                    "before": {"version": "v0.16.13"},
                    "rollback": {"status": "done", "version": "v0.16.13", "verified": True},
                },
            },
            {"from": "v0.16.14", "to": "v0.16.13", "passed": True, "operation": "rollback.yml"},
        ),
        (
            {
                "decision": "rolled_back",
                "current_version": "v0.16.13",
                "change": {
                    "before": {"version": "v0.16.13"},
                    "after": {"version": "v0.16.14+standin"},
                    "rollback": {"status": "done", "version": "0.16.13", "verified": True},
                },
            },
            {"from": "v0.16.14", "to": "v0.16.13", "passed": True},
        ),
        (
            {
                "decision": "rollback_failed",
                "change": {
                    "before": {"version": "v0.16.13"},
                    "after": {"version": "v0.16.14"},
                    "rollback": {"status": "done", "version": "v0.16.12", "verified": False},
                },
            },
            {
                "to": "v0.16.12",
                "passed": False,
                "problem": "decision rollback_failed; its verification did not pass; it runs "
                "v0.16.12 after it, not the recorded v0.16.13",
            },
        ),
        ({"decision": "approved", "change": {"after": {"version": "v0.16.14"}}}, None),
    ],
    ids=["rollback.yml", "rollout-rolled-back", "failed", "no-rollback"],
)
def test_rehearsal_of_reads_the_pair_and_the_outcome_of_a_report_entry(entry, found):
    got = C.rehearsal_of({"kind": "rollout", "clusters": {"lab": entry}}, "lab")
    if found is None:
        assert got is None
    else:
        assert {k: got[k] for k in found} == found


def test_next_action_follows_the_policy_and_never_continues_without_the_target():
    assert C.next_action(record(OK, VERIFY_OK, upgrade=DONE)) == "none"
    assert C.next_action(record(OK, VERIFY_BAD, upgrade=DONE)) == "rollback"
    assert (
        C.next_action(record(OK, VERIFY_BAD, upgrade=DONE, policy={"policy": "pause"})) == "pause"
    )
    failed_upgrade = record(
        OK, upgrade={"status": "failed"}, error="helm", policy={"policy": "continue"}
    )
    assert C.next_action(failed_upgrade) == "rollback"


# ---------------------------------------------------------------- acceptance gates


def figures(bound=(0.5, 0.6), running=(0.6, 2.5), completed=2, of=2, restarts=0, failed=0, stale=0):
    return {
        "submit_to_bound": {"p50_s": bound[0], "p95_s": bound[1], "count": of, "of": of},
        "submit_to_running": {"p50_s": running[0], "p95_s": running[1], "count": of, "of": of},
        "completion": {
            "completed": completed,
            "of": of,
            "failed": of - completed,
            "timed_out": 0,
            "rate": completed / float(of),
        },
        "binder_restarts": {"count": restarts},
        "failed_bindrequests": {
            "count": failed,
            "reasons": {"Internal Error: nil map": failed} if failed else {},
        },
        "stale_objects": {"count": stale},
        "evidence": "verify/lab/verify/figures.json",
        # the field failures' probes, healthy: one gang bound, a burst bound, no device over one
        # GPU, no API refusal (test_acceptance.py fails each)
        "gangs": {"requested": 1, "count": 1, "bound": 1, "members": 2, "members_bound": 2},
        "burst": {"requested": 4, "node": "kwok-a", "node_gpus": 8, "of": 4, "bound": 4},
        "device_portions": {"max": 1.0, "pods": of, "over": [], "unknown": [], "limit": 1.0},
        "auth_errors": {"count": 0, "pods_read": 7, "unreadable": []},
    }


def by_name(gates):
    return {g["gate"]: g for g in gates}


def test_verify_gates_all_pass_with_their_evidence():
    gates = A.verify_gates("verify", figures(), THRESHOLDS)
    assert [g["gate"] for g in gates] == [d["name"] for d in A.ACCEPTANCE_GATES]
    assert all(g["passed"] for g in gates)
    assert {g["evidence"] for g in gates} == {"verify/lab/verify/figures.json"}
    assert by_name(gates)["bind_latency_p50"]["threshold"] == "<= 2 s (bind_latency_p50_s)"


def test_verify_gates_name_each_failure():
    gates = by_name(
        A.verify_gates(
            "verify", figures(bound=(3, 9), completed=1, restarts=1, failed=2, stale=1), THRESHOLDS
        )
    )
    assert gates["bind_latency_p50"]["message"] == (
        "submit-to-bound p50 3.000 s is above bind_latency_p50_s 2 s"
    )
    assert not gates["bind_latency_p95"]["passed"]
    assert (
        "completion rate 0.500 (1 of 2; failed 1, timed out 0)"
        in gates["completion_rate"]["message"]
    )
    assert gates["binder_restarts"]["message"] == "binder restarts 1 is above binder_restarts_max 0"
    assert gates["failed_bindrequests"]["message"].startswith("2 BindRequests Failed")
    assert not gates["stale_objects"]["passed"]


def test_verify_gates_fail_when_no_probe_got_there():
    f = figures()
    f["submit_to_bound"] = {"p50_s": None, "p95_s": None, "count": 0, "of": 2}
    gates = by_name(A.verify_gates("verify", f, THRESHOLDS))
    assert (
        gates["bind_latency_p50"]["message"] == "submit-to-bound p50: no probe got there (0 of 2)"
    )


def test_rollback_is_held_to_the_old_versions_own_figures():
    tight = dict(THRESHOLDS, bind_latency_p50_s=0.001)
    after = figures(bound=(0.7, 0.8))
    assert not by_name(A.verify_gates("verify", after, tight))["bind_latency_p50"]["passed"]
    gates = by_name(A.verify_gates("rollback", after, tight, baseline=figures(bound=(0.5, 0.6))))
    assert gates["bind_latency_p50"]["passed"]
    assert "no worse than before the change" in gates["bind_latency_p50"]["threshold"]
    # restarts keep their threshold after a rollback
    bad = by_name(A.verify_gates("rollback", figures(restarts=1), tight, baseline=figures()))
    assert not bad["binder_restarts"]["passed"]


def test_a_rollback_of_a_request_tied_to_its_baseline_gets_the_same_slack():
    """Bind p50 4.424 s before the change: the default slack (x2 + 1 s) allows 9.848 s after the
    rollback, the request's own x2 + 2 s 10.848 s; 10.0 s fails the one and passes the other."""
    baseline = figures(bound=(4.424, 4.689), running=(4.603, 7.154))
    after = figures(bound=(10.0, 10.2), running=(10.1, 10.3))
    plain = by_name(A.verify_gates("rollback", after, THRESHOLDS, baseline=baseline))
    assert not plain["bind_latency_p50"]["passed"]
    assert "x2.0 + 1.0 s" in plain["bind_latency_p50"]["threshold"]
    tied = dict(THRESHOLDS, latency_baseline_factor=2, latency_baseline_plus_s=2)
    gates = by_name(A.verify_gates("rollback", after, tied, baseline=baseline))
    assert gates["bind_latency_p50"]["passed"] and gates["ready_latency_p50"]["passed"]
    assert gates["bind_latency_p50"]["threshold"] == (
        "<= 10.848 s (bind_latency_p50_s) - no worse than before the change "
        "(bind_latency_p50_s: 4.424, x2.0 + 2.0 s)"
    )
    # a tie narrower than the default slack does not tighten a rollback's limits
    narrow = dict(THRESHOLDS, latency_baseline_factor=1, latency_baseline_plus_s=0)
    assert A.rollback_slack(narrow) == (2.0, 1.0)
    # still no worse than the tie: twice as slow plus 2 s more fails
    slower = figures(bound=(11.0, 11.5), running=(11.2, 12.0))
    assert not by_name(A.verify_gates("rollback", slower, tied, baseline=baseline))[
        "bind_latency_p50"
    ]["passed"]


def test_a_healthy_rollback_on_the_loaded_lab_is_within_the_default_slack():
    """drill_failing_gate in make test's three streams: bind p50 1.599 s before the change and
    3.677 s after the rollback to the same healthy build (x1.5 + 0.5 s = 2.9 s failed it)."""
    gates = by_name(
        A.verify_gates(
            "rollback",
            figures(bound=(3.677, 4.409), running=(4.083, 4.568)),
            dict(THRESHOLDS, bind_latency_p50_s=0.001),
            baseline=figures(bound=(1.599, 2.0), running=(2.0, 2.5)),
        )
    )
    assert gates["bind_latency_p50"]["passed"], gates["bind_latency_p50"]


def test_verify_latency_follows_the_baseline_when_the_request_ties_it():
    tied = dict(THRESHOLDS, latency_baseline_factor=2, latency_baseline_plus_s=1)
    slow_machine = figures(bound=(2.5, 3.0), running=(2.6, 3.1))
    # without the tie, a machine slower than the written 2 s fails; with it, the limit is the
    # baseline measured in the same run (1.8 s x2 + 1 s) and the gate says where it came from
    assert not by_name(A.verify_gates("verify", slow_machine, THRESHOLDS))["bind_latency_p50"][
        "passed"
    ]
    gates = by_name(
        A.verify_gates("verify", slow_machine, tied, baseline=figures(bound=(1.8, 2.2)))
    )
    assert gates["bind_latency_p50"]["passed"]
    assert gates["bind_latency_p50"]["threshold"] == (
        "<= 4.6 s (bind_latency_p50_s) - from this run's baseline: 1.8 s x2.0 + 1.0 s = 4.6 s"
        " (written 2.0 s)"
    )
    # a regression well past the machine's noise still fails (a binder waiting out a timeout)
    regressed = figures(bound=(40.0, 41.0))
    bad = by_name(A.verify_gates("verify", regressed, tied, baseline=figures(bound=(1.8, 2.2))))
    assert not bad["bind_latency_p50"]["passed"]
    assert "40.000 s is above bind_latency_p50_s 4.6 s" in bad["bind_latency_p50"]["message"]


def test_verify_latency_keeps_the_written_floor_and_no_baseline_eases_nothing():
    tied = dict(THRESHOLDS, latency_baseline_factor=2)
    fast = by_name(A.verify_gates("verify", figures(), tied, baseline=figures(bound=(0.1, 0.2))))
    assert fast["bind_latency_p50"]["threshold"].startswith("<= 2.0 s (bind_latency_p50_s)")
    slow = figures(bound=(2.5, 3.0))
    missing = by_name(A.verify_gates("verify", slow, tied, baseline=None))
    assert not missing["bind_latency_p50"]["passed"]
    assert missing["bind_latency_p50"]["threshold"].endswith(
        "the baseline was not measured: the written threshold alone"
    )


def test_upgrade_gates():
    ok = by_name(
        A.upgrade_gates("upgrade", {"version": "v2", "all_rolled_out": True}, "v2", 3.2, 180)
    )
    assert ok["running_version"]["passed"] and ok["rolled_out"]["figure"] == "3.2 s"
    bad = by_name(
        A.upgrade_gates("upgrade", {"version": "v1", "all_rolled_out": False}, "v2", None, 180)
    )
    assert bad["running_version"]["message"] == "the binder runs v1, not v2"
    assert not bad["rolled_out"]["passed"]


def test_upgrade_gates_fail_a_rollout_over_its_bound():
    # Found on the real KAI: rolled out at 301.7 s passed a gate "within 180 s".
    late = by_name(
        A.upgrade_gates("rollback", {"version": "v1", "all_rolled_out": True}, "v1", 301.7, 180)
    )
    assert not late["rolled_out"]["passed"]
    assert "over the bound of 180 s" in late["rolled_out"]["message"]


def test_upgrade_gates_name_a_split_install():
    split = {
        "version": "v2",
        "all_rolled_out": True,
        "findings": ["helm says v1, binder runs v2: split"],
    }
    gates = by_name(A.upgrade_gates("rollback", split, "v2", 10, 180))
    assert not gates["agreement"]["passed"]
    assert gates["agreement"]["message"] == "helm says v1, binder runs v2: split"
    assert by_name(A.upgrade_gates("upgrade", dict(split, findings=[]), "v2", 10, 180))[
        "agreement"
    ]["passed"]


# ---------------------------------------------------------------- probes


def pod_rec(t, name, node=None, phase="Pending", kind="MODIFIED", group=None, uid="u1"):
    meta = {"name": name, "uid": uid, "labels": {"runai-gpu-group": group} if group else {}}
    return {
        "t": t,
        "at": "x",
        "type": kind,
        "object": {
            "metadata": meta,
            "spec": {"nodeName": node} if node else {},
            "status": {"phase": phase},
        },
    }


def test_figures_count_a_bind_only_when_the_pod_has_a_node():
    states = [
        {"name": "probe-real-00", "kind": "real", "submitted_t": 10.0},
        {"name": "probe-kwok-00", "kind": "kwok", "submitted_t": 10.0},
        {"name": "probe-kwok-01", "kind": "kwok", "submitted_t": 10.0},
    ]
    records = {
        "pods": [
            pod_rec(10.5, "probe-real-00", node="kaiops-node", group="g1"),
            pod_rec(12.0, "probe-real-00", node="kaiops-node", phase="Succeeded", group="g1"),
            pod_rec(10.4, "probe-kwok-00", node="kwok-0", phase="Running", group="g2"),
            # PodBound-style noise: no node ever, then deleted by someone else
            pod_rec(10.6, "probe-kwok-01"),
            pod_rec(11.0, "probe-kwok-01", kind="DELETED"),
        ],
        "bindrequests": [
            {
                "t": 10.3,
                "at": "x",
                "type": "MODIFIED",
                "object": {
                    "metadata": {"uid": "br1"},
                    "spec": {"podName": "probe-kwok-01"},
                    "status": {
                        "phase": "Failed",
                        "reason": "Internal Error: assignment to entry in nil map",
                    },
                },
            }
        ],
    }
    out = P.figures(records, states, 300, False, {})
    rows = {r["name"]: r for r in out["probe_results"]}
    assert rows["probe-real-00"]["outcome"] == "completed"
    assert rows["probe-kwok-01"]["outcome"] == "lost"
    assert out["submit_to_bound"]["count"] == 2 and out["submit_to_bound"]["of"] == 3
    assert out["completion"] == {
        "completed": 2,
        "of": 3,
        "failed": 1,
        "lost": 1,
        "timed_out": 0,
        "rate": 0.667,
    }
    assert out["valid_completions"] == 1
    assert out["failed_bindrequests"] == {
        "count": 1,
        "reasons": {"Internal Error: assignment to entry in nil map": 1},
        "retried": {"count": 0, "reasons": {}},
    }
    assert out["queue_age"]["max_s"] == 300.0  # the one never bound counts at the full window
    assert P.done(records, states)


def _failed_br(t, pod, reason, uid):
    status = {"phase": "Failed", "reason": reason}
    obj = {"metadata": {"uid": uid}, "spec": {"podName": pod}, "status": status}
    return {"t": t, "at": "x", "type": "MODIFIED", "object": obj}


def test_a_bind_that_lost_the_cache_race_and_then_bound_is_retried_not_failed():
    # the healthy build's binder read the group's reservation pod from its cache before the GPU
    # index annotation reached it (KAI's findGPUIndexByGroup); the scheduler retried and the
    # probe bound. The same reason for a probe that never bound counts; so does any other reason.
    race = "failed to find annotation on reservation pod gpu-reservation-33eb5fcee2c8d41a"
    states = [
        {"name": "probe-kwok-00", "kind": "kwok", "submitted_t": 10.0},
        {"name": "probe-kwok-01", "kind": "kwok", "submitted_t": 10.0},
        {"name": "probe-kwok-02", "kind": "kwok", "submitted_t": 10.0},
    ]
    records = {
        "pods": [
            pod_rec(12.0, "probe-kwok-00", node="kwok-0", phase="Running", group="g1"),
            pod_rec(10.6, "probe-kwok-01"),
            pod_rec(12.0, "probe-kwok-02", node="kwok-0", phase="Running", group="g1"),
        ],
        "bindrequests": [
            _failed_br(10.5, "probe-kwok-00", race, "br0"),
            _failed_br(10.5, "probe-kwok-01", race, "br1"),
            _failed_br(10.5, "probe-kwok-02", "failed waiting for GPU reservation pod", "br2"),
        ],
    }
    out = P.figures(records, states, 300, False, {})["failed_bindrequests"]
    assert out["count"] == 2
    assert out["reasons"] == {race: 1, "failed waiting for GPU reservation pod": 1}
    assert out["retried"] == {"count": 1, "reasons": {race: 1}}


def test_binder_restarts_count_a_replaced_pod():
    def binder(uid, restarts, kind="MODIFIED"):
        return {
            "t": 1,
            "type": kind,
            "object": {
                "metadata": {"uid": uid},
                "status": {"containerStatuses": [{"restartCount": restarts}]},
            },
        }

    records = [binder("a", 0), binder("a", 0, "DELETED"), binder("b", 0), binder("b", 1)]
    assert P.binder_restarts(records, {"a": 0}) == {
        "count": 2,
        "container_restarts": 1,
        "replaced_pods": 1,
    }
    assert P.binder_restarts([binder("a", 2)], {"a": 2})["count"] == 0


def test_capacity_counts_whole_gpus_of_live_bound_pods():
    nodes = [
        {"metadata": {"name": "n1"}, "status": {"allocatable": {"nvidia.com/gpu": "8"}}},
        {"metadata": {"name": "cpu"}, "status": {"allocatable": {}}},
    ]
    gpu = {"containers": [{"resources": {"requests": {"nvidia.com/gpu": "1"}}}], "nodeName": "n1"}
    pods = [
        {"metadata": {}, "spec": gpu, "status": {"phase": "Running"}},
        {"metadata": {}, "spec": gpu, "status": {"phase": "Succeeded"}},
        {"metadata": {}, "spec": dict(gpu, nodeName=None), "status": {"phase": "Pending"}},
    ]
    assert P.capacity(nodes, pods) == {"gpus": 8, "held": 1, "idle": 7, "nodes": 1}


def test_groups_in_use_are_those_of_live_bound_pods_outside_the_reservation_namespace():
    def pod(ns, group, node="n", phase="Running", deleting=False):
        meta = {"namespace": ns, "labels": {"runai-gpu-group": group}}
        if deleting:
            meta["deletionTimestamp"] = "t"
        return {"metadata": meta, "spec": {"nodeName": node}, "status": {"phase": phase}}

    pods = [
        pod("team", "g1"),
        pod("kai-resource-reservation", "g2"),
        pod("team", "g3", node=None),
        pod("team", "g4", phase="Succeeded"),
        pod("team", "g5", deleting=True),
    ]
    assert P.groups_in_use(pods, "kai-resource-reservation") == {"g1"}


def test_probe_manifest_is_reproduces_fraction_pod():
    real, kwok = P.workloads(1, 1, {"spec": {"nodeSelector": {"kubernetes.io/hostname": "n"}}})
    pod = P.manifest(real, "ns", P.PROBE_IMAGE, {"a": "b"})
    assert pod["metadata"]["annotations"] == {"gpu-fraction": "0.5"}
    assert pod["spec"]["schedulerName"] == "kai-scheduler"
    assert pod["spec"]["containers"][0]["command"] == ["/usr/local/bin/gpuprobe"]
    assert "schedulingGates" not in pod["spec"]
    assert P.manifest(kwok, "ns", P.PROBE_IMAGE, {})["spec"]["nodeSelector"] == {"type": "kwok"}


# ---------------------------------------------------------------- restore


def obj(kind, name, spec, rv="1", managers=None):
    meta = {"name": name, "resourceVersion": rv, "uid": "u-" + name}
    if managers:
        meta["managedFields"] = managers
    return {"apiVersion": "kai.scheduler/v1", "kind": kind, "metadata": meta, "spec": spec}


def test_restore_plan_puts_back_what_the_upgrade_changed_only():
    recorded = [
        obj("Config", "kai-config", {"a": 1}),
        obj("Queue", "q-gone", {"x": 1}),
        obj("Queue", "q-same", {"x": 1}),
        obj("Queue", "q-theirs", {"x": 1}),
    ]
    now = [
        obj("Config", "kai-config", {"a": 2}, rv="5"),
        obj("Queue", "q-same", {"x": 1}),
        obj(
            "Queue",
            "q-theirs",
            {"x": 2},
            rv="9",
            managers=[{"manager": "kubectl", "operation": "Update", "time": "t"}],
        ),
        obj("Queue", "q-new", {"x": 3}),
    ]
    after = {"Config//kai-config": "5", "Queue//q-theirs": "7"}
    before = {"Config//kai-config": "5", "Queue//q-theirs": "9"}
    actions = {a["object"]: a["action"] for a in RS.plan(recorded, before, after, now)}
    assert actions == {
        "Config//kai-config": "replace",
        "Queue//q-gone": "recreate",
        "Queue//q-same": "none",
        "Queue//q-theirs": "not_restored",
        "Queue//q-new": "left",
    }
    why = next(
        a["why"] for a in RS.plan(recorded, before, after, now) if a["object"] == "Queue//q-theirs"
    )
    assert "changed in between" in why and "kubectl (Update at t)" in why


def test_restore_plan_leaves_an_object_deleted_in_between():
    recorded = [obj("Queue", "q-team", {"x": 1}), obj("Queue", "q-upgrade", {"x": 1})]
    after = {"Queue//q-team": "7"}  # q-upgrade was gone right after the upgrade
    actions = {a["object"]: a for a in RS.plan(recorded, {}, after, [])}
    assert actions["Queue//q-team"]["action"] == "not_restored"
    assert actions["Queue//q-team"]["why"].startswith("deleted in between")
    assert actions["Queue//q-upgrade"]["action"] == "recreate"
    assert RS.plan(recorded, {}, None, [])[0]["action"] == "recreate"


def test_merge_patch_turns_current_into_desired():
    current = {"a": 1, "b": {"c": 1, "d": 2}, "e": [1]}
    desired = {"a": 1, "b": {"c": 3}, "f": 4}
    assert RS.merge_patch(current, desired) == {"b": {"c": 3, "d": None}, "e": None, "f": 4}


def test_recreate_body_drops_server_fields():
    body = RS.recreate_body(dict(obj("Queue", "q", {"x": 1}), status={"y": 1}))
    assert body["metadata"] == {"name": "q"} and "status" not in body


# ---------------------------------------------------------------- governance

RBAC = {
    "cluster_roles": [
        {
            "metadata": {"name": "cm-writer"},
            "kind": "ClusterRole",
            "rules": [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["update", "get"]}],
        },
        {
            "metadata": {"name": "queue-admin"},
            "kind": "ClusterRole",
            "rules": [
                {"apiGroups": ["scheduling.run.ai"], "resources": ["queues"], "verbs": ["*"]}
            ],
        },
        {
            "metadata": {"name": "reader"},
            "kind": "ClusterRole",
            "rules": [{"apiGroups": ["*"], "resources": ["*"], "verbs": ["get", "list"]}],
        },
    ],
    "cluster_role_bindings": [
        {
            "metadata": {"name": "alice-cm"},
            "roleRef": {"kind": "ClusterRole", "name": "cm-writer"},
            "subjects": [{"kind": "User", "name": "alice"}],
        },
        {
            "metadata": {"name": "binder"},
            "roleRef": {"kind": "ClusterRole", "name": "cm-writer"},
            "subjects": [
                {"kind": "ServiceAccount", "name": "binder", "namespace": "kai-scheduler"}
            ],
        },
        {
            "metadata": {"name": "readers"},
            "roleRef": {"kind": "ClusterRole", "name": "reader"},
            "subjects": [{"kind": "Group", "name": "everyone"}],
        },
    ],
    "roles": [],
    "role_bindings": [
        {
            "metadata": {"name": "bob-queues", "namespace": "team-a"},
            "roleRef": {"kind": "ClusterRole", "name": "queue-admin"},
            "subjects": [{"kind": "User", "name": "bob"}],
        },
        {
            "metadata": {"name": "carol-cm", "namespace": "team-a"},
            "roleRef": {"kind": "ClusterRole", "name": "cm-writer"},
            "subjects": [{"kind": "User", "name": "carol"}],
        },
    ],
}


def test_governance_resolves_bindings_to_subjects_and_flags_broad_grants():
    out = G.resolve(RBAC, G.targets("kai-scheduler", ["team-a"]), "kai-scheduler")
    editors = {t["target"]: [e["subject"] for e in t["editors"]] for t in out["targets"]}
    cms = editors["GPU-sharing ConfigMaps in team-a"]
    assert cms == ["ServiceAccount kai-scheduler/binder", "User alice", "User carol"]
    assert editors["Queues"] == []  # a RoleBinding never grants a cluster-scoped object
    assert editors["Config kai-config"] == []  # read-only grants are not edits
    assert out["broad"] == [
        {
            "subject": "User alice",
            "via": "ClusterRoleBinding alice-cm -> ClusterRole cm-writer (cluster-wide)",
            "why": ["cluster-wide ConfigMap write"],
        }
    ]


def test_governance_gate_refuses_only_with_the_rule():
    summary = G.resolve(RBAC, G.targets("kai-scheduler", ["team-a"]), "kai-scheduler")
    assert G.governance_gate(summary)["passed"]
    refused = G.governance_gate(summary, {"refuse_broad_grants": True})
    assert not refused["passed"] and "User alice" in refused["message"]
    assert G.governance_gate({"error": "forbidden"})["passed"]


# ---------------------------------------------------------------- pipeline and report


def test_a_malformed_policy_makes_the_request_malformed():
    rec = pipeline.new_record("lab", {}, [OK])
    out = pipeline.add_policy(rec, "continue", None)
    assert not out["request_well_formed"]
    assert out["steps"][0]["reason"] == "failed gates: failed_gate_policy"
    assert pipeline.add_policy(rec, None, [1, "50%"])["request_well_formed"]


def test_rollback_record_refuses_a_bundle_without_this_cluster():
    rec = pipeline.new_rollback_record("lab", "b1", {"kind": "rollout", "clusters": {}})
    assert not rec["request_well_formed"]
    assert rec["gates"][0]["message"] == "bundle b1 has no record of cluster lab"
    assert pipeline.new_rollback_record("lab", "", None)["gates"][0]["message"].startswith(
        "no bundle"
    )


def test_rollback_record_from_a_rollout_bundle(tmp_path):
    bundle = tmp_path / "b1"
    (bundle / "snapshots" / "before-change-lab").mkdir(parents=True)
    report = {
        "kind": "rollout",
        "clusters": {
            "lab": {
                "request": {"change_owner": "me", "thresholds": THRESHOLDS},
                "change": {"before": PRE, "after": AFTER, "figures": {"baseline": {"probes": 9}}},
            }
        },
    }
    rec = pipeline.new_rollback_record("lab", "b1", report, bundle_path=str(bundle))
    assert rec["request_well_formed"] and rec["change"]["action"] == "rollback"
    assert rec["change"]["before"]["snapshot"] == str(bundle / "snapshots" / "before-change-lab")
    assert rec["change"]["figures"] == {"baseline": {"probes": 9}}


def test_run_decision_takes_the_worst_cluster():
    assert R.run_decision(["approved", "approved"]) == "approved"
    assert R.run_decision(["approved", "rolled_back"]) == "rolled_back"
    assert R.run_decision(["paused", "refused"]) == "refused"
    assert R.run_decision([]) == "refused"


def test_report_of_a_change_has_the_change_boards_part():
    rec = record(
        OK,
        VERIFY_OK,
        upgrade=dict(DONE, changed=True),
        before=PRE,
        after=AFTER,
        policy={"policy": "rollback", "source": "default"},
    )
    rec["request"] = {"kai_version": "v0.16.14", "change_owner": "me"}
    rec = C.add_rehearsal(rec, dict(REHEARSED, time_to_verified_s=15.8, operation="rollback.yml"))
    rec["decision"] = C.decide(rec)
    rec["steps"] = []
    report = R.build({"change_owner": "me"}, {"lab": rec}, "t", "run")
    assert report["decision"] == "approved"
    md = R.render_markdown(report)
    assert "The target runs, every verification gate passed and the rollback is rehearsed" in md
    assert (
        "Rollback rehearsal for lab: [r1](../r1/report.md) (rollback.yml), v0.16.14 -> v0.16.13, "
        "time to restore 3.9 s, 15.8 s to a passing verification, verified." in md
    )
    assert (
        "| lab | **APPROVED** | v0.16.13 (rev 40) -> v0.16.14 (rev 41) | me | rollback (default) |"
        in md
    )
    assert "| lab | verify | bind_latency_p50 | 1 | <= 2 | pass | - |" in md


def test_change_cost_over_the_probes_lifetimes():
    fig = {
        "started_wall": 1000.0,
        "finished_wall": 1036.0,
        "capacity": {"gpus": 2},
        "valid_completions": 1,
        "probe_results": [
            {"name": "p1", "gpu_group": "g1", "submitted_wall": 1000.0, "submit_to_bound_s": 0.0},
            {"name": "p2", "gpu_group": "g1", "submitted_wall": 1000.0, "submit_to_bound_s": None},
        ],
    }
    cost = R.change_cost({"lab": {"change": {"figures": {"verify": fig}}}}, rate=2)
    assert cost["gpus"] == 2 and cost["completed_valid_jobs"] == 1
    assert cost["available_gpu_hours"] == "0.02"  # 2 GPUs x 36 s
    assert "Busy time is not useful throughput" in cost["markdown"]


def test_change_cost_counts_only_probes_that_could_not_start_as_loss():
    """Found on the real KAI: every probe was listed as 'could not start when submitted'
    although each bound within seconds at its first attempt (queue age, not loss)."""
    fig = {
        "started_wall": 1000.0,
        "finished_wall": 1036.0,
        "capacity": {"gpus": 4},
        "probe_results": [
            {"name": "quick", "gpu_group": "g1", "submitted_wall": 1000.0,
             "submit_to_bound_s": 2.1, "failed_attempts": 0},
            {"name": "retried", "gpu_group": "g2", "submitted_wall": 1000.0,
             "submit_to_bound_s": 30.0, "failed_attempts": 1},
            {"name": "never", "gpu_group": "g3", "submitted_wall": 1000.0,
             "submit_to_bound_s": None},
        ],
    }  # fmt: skip
    cost = R.change_cost({"lab": {"change": {"figures": {"verify": fig}}}})
    assert (
        "could not start when submitted: lab/verify/never, lab/verify/retried."
        in (cost["markdown"])
    )
    assert "quick" not in cost["markdown"]


def test_a_rehearsal_on_another_implementation_does_not_count():
    """Found on the lab: the stand-in's rehearsal of v0.16.14 -> v0.16.13 approved the real KAI's
    first rollout of the same pair on the same cluster."""
    report = {
        "kind": "rollout",
        "clusters": {
            "lab": {
                "decision": "rolled_back",
                "current_version": "v2",
                "implementation_label": "KAI stand-in",
                "change": {
                    "operation": "rollback",
                    "before": {"version": "v1"},
                    "rollback": {"status": "done", "verified": True, "version": "v1"},
                },
            }
        },
    }
    runs = [{"bundle": "b1", "report": report, "verified": True}]
    pair = {"from": "v2", "to": "v1", "implementation": "KAI"}
    cited, rejected = C.find_rehearsal(runs, "lab", pair)
    assert cited is None
    assert rejected[0]["problem"] == "rehearsed on KAI stand-in, this change runs on KAI"
    cited = C.find_rehearsal(runs, "lab", dict(pair, implementation="KAI stand-in"))[0]
    assert cited["bundle"] == "b1"


def test_the_race_wrapped_by_kai_s_binder_is_retried_when_the_probe_bound():
    # Real KAI, 2026-12-07: the binder wraps the cache race in its reservation error; the probe
    # bound on the scheduler's retry, so the attempt is retried, not a failed bind.
    race = (
        "failed to reserve GPUs for pod <ns/probe-kwok-00> in gpu group <g0>: failed to find "
        "annotation on reservation pod gpu-reservation-390fd55ad101b6b9"
    )
    states = [{"name": "probe-kwok-00", "kind": "kwok", "submitted_t": 10.0}]
    records = {
        "pods": [pod_rec(12.0, "probe-kwok-00", node="kwok-0", phase="Running", group="g1")],
        "bindrequests": [_failed_br(10.5, "probe-kwok-00", race, "br0")],
    }
    out = P.figures(records, states, 300, False, {})["failed_bindrequests"]
    assert out["count"] == 0
    assert out["retried"] == {"count": 1, "reasons": {race: 1}}


def test_a_rehearsal_waiver_counts_only_as_the_request_gate_reads_it():
    def given(waiver):
        return C.waiver_given({"request": {"rehearsal_waiver": waiver}})

    assert given({"reason": " drill done by hand ", "approved_by": "sre-lead"}) == {
        "reason": "drill done by hand",
        "approved_by": "sre-lead",
    }
    # What the gate refuses approves nothing: an unknown key, a blank field, no mapping.
    assert given({"reason": "r", "approved_by": "a", "aproved_by": "b"}) is None
    assert given({"reason": "r", "approved_by": " "}) is None
    assert given("waived") is None
    assert given(None) is None
