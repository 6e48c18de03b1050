"""Reproduce: the plan (options before any cluster call), rules over watches, the verdict."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from conftest import REPO

from ansible_collections.kaiops.runbooks.plugins.module_utils.errors import KaiopsError
from ansible_collections.kaiops.runbooks.plugins.module_utils.probes import cases as C
from ansible_collections.kaiops.runbooks.plugins.module_utils.probes import watches as W
from ansible_collections.kaiops.runbooks.plugins.module_utils.reproduce import report as R
from ansible_collections.kaiops.runbooks.plugins.module_utils.reproduce import service as S
from ansible_collections.kaiops.runbooks.plugins.module_utils.reproduce.plan import build_plan

FACTS = yaml.safe_load((Path(REPO) / "meta" / "kai_releases.yml").read_text())


def params(**over):
    base = {
        "cases": [],
        "builds": ["pre", "patched"],
        "chart_ref": "/charts/kai-scheduler-{version}.tgz",
        "install": True,
        "window_s": 60,
        "concurrency": 20,
        "allow_non_disposable": False,
        "override_reason": "",
        "pair": FACTS["pair"],
        "releases": FACTS["releases"],
        "behaviours": FACTS["behaviours"],
    }
    base.update(over)
    return base


def test_plan_resolves_the_pair_from_the_release_facts():
    plan = build_plan(params(), lambda p: True)
    pre, patched = plan["builds"]
    assert pre["version"] == FACTS["pair"]["pre"] and pre["exposed"] is True
    assert patched["version"] == FACTS["pair"]["patched"] and patched["exposed"] is False
    assert (
        pre["chart_ref"] == "/charts/kai-scheduler-%s.tgz" % pre["version"]
        and pre["chart_version"] is None
    )
    assert plan["recovery"] is True and "recovery" not in plan["cases"]


def test_plan_oci_reference_uses_the_build_as_chart_version():
    plan = build_plan(
        params(chart_ref="oci://ghcr.io/kai-scheduler/kai-scheduler/kai-scheduler"), lambda p: False
    )
    assert [b["chart_version"] for b in plan["builds"]] == [
        FACTS["pair"]["pre"],
        FACTS["pair"]["patched"],
    ]


@pytest.mark.parametrize(
    "over, expected",
    [
        (
            {"cases": ["nil_dta"]},
            "kai_reproduce_cases: unknown case 'nil_dta' (did you mean nil_data?)",
        ),
        (
            {"builds": ["v9.9.9"]},
            "kai_reproduce_builds: v9.9.9 has no row in meta/kai_releases.yml",
        ),
        ({"builds": ["latest"]}, "'latest' is not a release tag"),
        ({"builds": []}, "kai_reproduce_builds is empty"),
        ({"window_s": 5}, "kai_reproduce_window_s must be a whole number in 10..600, got 5"),
        ({"window_s": "60"}, "kai_reproduce_window_s must be a whole number"),
        ({"concurrency": 1000}, "kai_reproduce_concurrency must be a whole number in 1..100"),
        (
            {"allow_non_disposable": True},
            "kai_reproduce_allow_non_disposable needs kai_reproduce_override_reason",
        ),
        ({"builds": ["patched"]}, "recovery, which needs an exposed build followed by another"),
        ({"builds": ["pre", "pre"]}, "names a build twice"),
        ({"chart_ref": ""}, "kai_reproduce_chart_ref is empty"),
    ],
)
def test_plan_names_each_bad_option_and_its_fix(over, expected):
    with pytest.raises(KaiopsError) as err:
        build_plan(params(**over), lambda p: True)
    assert expected in err.value.msg
    assert err.value.status == "invalid_input"


def test_plan_refuses_a_build_whose_chart_package_is_missing():
    with pytest.raises(KaiopsError) as err:
        build_plan(params(), lambda p: False)
    assert (
        "is not installable - chart package /charts/kai-scheduler-v0.16.13.tgz does not exist"
        in err.value.msg
    )


def test_plan_collects_every_problem_at_once():
    with pytest.raises(KaiopsError) as err:
        build_plan(params(cases=["x"], window_s=0, concurrency=0), lambda p: True)
    assert len(err.value.details["problems"]) == 3


def rec(t, kind, obj):
    return {"t": t, "at": "2026-12-01T00:00:%06.3fZ" % t, "type": kind, "object": obj}


def br(uid, pod, phase=None, reason=None):
    obj = {
        "metadata": {"uid": uid, "name": pod},
        "spec": {"podName": pod, "selectedGPUGroups": ["g-" + uid]},
    }
    if phase:
        obj["status"] = {"phase": phase, "reason": reason}
    return obj


def pod(name, node=None, phase="Pending", uid="u1"):
    return {
        "metadata": {"name": name, "uid": uid, "labels": {}, "annotations": {}},
        "spec": {"nodeName": node} if node else {},
        "status": {"phase": phase},
    }


NIL = "Internal Error: assignment to entry in nil map"


def test_attempts_keep_every_bindrequest_even_deleted_ones():
    records = [
        rec(1.0, "ADDED", br("a", "p")),
        rec(1.1, "MODIFIED", br("a", "p", "Failed", NIL)),
        rec(2.0, "DELETED", br("a", "p", "Failed", NIL)),
        rec(2.01, "ADDED", br("b", "p")),
        rec(2.1, "MODIFIED", br("b", "p", "Failed", NIL)),
    ]
    tries = W.attempts(records, "p")
    assert [t["uid"] for t in tries] == ["a", "b"]
    assert tries[0]["deleted_at"] == 2.0 and tries[1]["deleted_at"] is None
    assert {t["cause"] for t in tries} == {"nil_map_panic"}


@pytest.mark.parametrize(
    "reason, cause",
    [
        (NIL, "nil_map_panic"),
        ('plugin gpusharing failed in PreBind: ConfigMap "x-0" not found', "configmap_cache_lag"),
        ('admission webhook "admission.kai-scheduler.svc" denied the request: no', "admission"),
        ("something else", "other"),
    ],
)
def test_failures_classified_by_cause(reason, cause):
    assert W.classify(reason) == cause


def observation(records, name="p", submitted=0.5, cm=None):
    workload = {
        "name": name,
        "submitted_t": submitted,
        "configmap_name": "x-0",
        "configmaps_after": [cm] if cm else [],
    }
    return S.workload_observation(records, workload)


def test_a_podbound_condition_or_bound_event_is_never_a_bind():
    p = pod("p")
    p["status"]["conditions"] = [{"type": "PodBound", "status": "True"}]
    records = {
        "pods": [rec(1.0, "MODIFIED", p)],
        "bindrequests": [
            rec(1.0, "MODIFIED", br("a", "p", "Failed", NIL)),
            rec(2.0, "MODIFIED", br("b", "p", "Failed", NIL)),
        ],
    }
    obs = observation(records)
    assert (
        obs["node"] is None
        and obs["submit_to_bound_s"] is None
        and obs["pod_bound_condition"] == "True"
    )
    checks = S.assertions("nil_data", "reproduces", [obs], {"binder_restarts_delta": 0})
    assert S.verdict(checks) == "pass"
    # the same observation fails the patched build's expectation
    assert (
        S.verdict(S.assertions("nil_data", "binds", [obs], {"binder_restarts_delta": 0})) == "fail"
    )


def test_binds_expectation_needs_node_keys_and_no_restart():
    cm = {
        "metadata": {"name": "x-0", "ownerReferences": [{"uid": "u1"}]},
        "data": {k: "v" for k in C.CAPABILITY_KEYS} | {"keep-me": "1"},
    }
    records = {"pods": [rec(1.0, "MODIFIED", pod("p", "n1", "Running"))], "bindrequests": []}
    obs = observation(records, cm=cm)
    obs["fixture"] = "stale"
    assert obs["submit_to_bound_s"] == 0.5
    assert (
        S.verdict(S.assertions("normal_update", "binds", [obs], {"binder_restarts_delta": 0}))
        == "pass"
    )
    assert (
        S.verdict(S.assertions("normal_update", "binds", [obs], {"binder_restarts_delta": 1}))
        == "fail"
    )
    cm["data"].pop("keep-me")
    assert (
        S.verdict(
            S.assertions(
                "normal_update",
                "binds",
                [observation(records, cm=cm) | {"fixture": "stale"}],
                {"binder_restarts_delta": 0},
            )
        )
        == "fail"
    )


def test_latency_keeps_missing_attempts_in_the_denominator():
    got = W.latency([0.2, None, 0.4, None], 4)
    assert got["count"] == 2 and got["of"] == 4 and got["missing"] == 2 and got["p50_s"] == 0.2


def test_stale_state_lists_leftovers_of_a_failed_bind():
    stuck = pod("p")
    stuck["metadata"]["labels"] = {"runai-gpu-group": "g"}
    res = {
        "metadata": {
            "name": "gpu-reservation-1",
            "namespace": "kai-resource-reservation",
            "labels": {"runai-gpu-group": "g"},
        },
        "spec": {"nodeName": "n1"},
    }
    cm = {
        "metadata": {
            "name": "p-abc-shared-gpu-0",
            "namespace": "ns",
            "ownerReferences": [{"uid": "u1"}],
        }
    }
    kinds = [f["kind"] for f in S.stale_state([stuck], [cm], [res])]
    assert kinds == [
        "group_label_on_unbound_pod",
        "reservation_pod_without_running_work",
        "gpu_sharing_configmap_of_unbound_pod",
    ]


def case_result(case, version, exposed, verdict, phase=None):
    return {
        "case": case,
        "phase": phase,
        "build": {"version": version, "exposed": exposed},
        "verdict": verdict,
        "declared": {"expect": C.expectation(case, exposed)},
        "assertions": [{"name": "x", "result": verdict, "figure": 1, "expected": 1}],
        "observations": [],
        "metrics": S.case_metrics([]),
        "duration_s": 1.0,
    }


BUILDS = [{"version": "v0.16.13", "exposed": True}, {"version": "v0.16.14", "exposed": False}]
PLAN = {"builds": BUILDS, "cases": ["nil_data"], "recovery": False}


def test_verdict_pass_needs_every_case_on_every_build():
    results = [
        case_result("nil_data", "v0.16.13", True, "pass"),
        case_result("nil_data", "v0.16.14", False, "pass"),
    ]
    assert R.decide(BUILDS, results, R.expected_cases(PLAN)) == ("pass", [])
    assert R.target_version(BUILDS) == "v0.16.14"


def test_pre_patch_that_does_not_reproduce_says_investigate_the_fixture():
    results = [
        case_result("nil_data", "v0.16.13", True, "fail"),
        case_result("nil_data", "v0.16.14", False, "pass"),
    ]
    verdict, reasons = R.decide(BUILDS, results, R.expected_cases(PLAN))
    assert (
        verdict == "fail"
        and "investigate the fixture before declaring the patch validated" in reasons[0]
    )


def test_a_case_that_did_not_run_is_inconclusive():
    results = [case_result("nil_data", "v0.16.13", True, "pass")]
    verdict, reasons = R.decide(BUILDS, results, R.expected_cases(PLAN))
    assert verdict == "inconclusive" and reasons == ["nil_data on v0.16.14 did not run"]


def test_recovery_spans_the_exposed_build_and_the_next():
    plan = dict(PLAN, recovery=True)
    assert R.expected_cases(plan) == {
        "v0.16.13": ["nil_data", "recovery/plant"],
        "v0.16.14": ["nil_data", "recovery/observe"],
    }


def test_junit_has_one_testcase_per_case_and_build():
    results = [
        case_result("nil_data", "v0.16.13", True, "pass"),
        case_result("nil_data", "v0.16.14", False, "fail"),
    ]
    xml = R.render_junit({"cases": results})
    assert xml.count("<testcase") == 2 and xml.count("<failure") == 1


def test_declarations_are_written_in_words_before_the_run():
    d = C.declared("nil_data", {"version": "v0.16.13", "exposed": True})
    assert d["expect"] == "reproduces" and C.NIL_MAP in d["assertions"]
    assert C.declared("nil_data", {"version": "v0.16.14", "exposed": False})["expect"] == "binds"


def test_configmap_names_follow_the_container_layout():
    assert C.configmap_name("p-abc-shared-gpu", "single") == "p-abc-shared-gpu-0"
    assert C.configmap_name("p-abc-shared-gpu", "second") == "p-abc-shared-gpu-1"
    assert C.configmap_name("p-abc-shared-gpu", "init") == "p-abc-shared-gpu-i0"


def test_cost_section_counts_a_failed_bind_window():
    bound = {"name": "ok", "submit_to_bound_s": 1.0, "gpu_group": "g1", "completed": True}
    stuck = {"name": "edge", "submit_to_bound_s": None, "gpu_group": None, "completed": False}
    results = [
        dict(case_result("nil_data", "v0.16.13", True, "pass"), observations=[stuck],
             duration_s=10.0, reservation_held_s=9.0),
        dict(case_result("creation", "v0.16.14", False, "pass"), observations=[bound],
             duration_s=10.0),
    ]  # fmt: skip
    got = R.cost_section(results, gpus=4, rate=2)
    assert "error" not in got, got
    assert got["gpus"] == 4 and got["completed_valid_jobs"] == 1
    assert float(got["lost_busy_gpu_hours"]) > 0
    assert float(got["reservation_held_gpu_hours"]) == pytest.approx(9.0 / 3600, abs=1e-4)
    assert "held idle by reservation pods" in got["markdown"]


BINDER_LOG = (
    '2026-12-01T13:53:18.444606395Z {"level":"error","msg":"Reconciler error",'
    '"BindRequest":{"name":"edge-empty"},"error":"assignment to entry in nil map"}\n'
    '2026-12-01T13:53:18.5Z {"level":"info","msg":"Binding pod","name":"edge-empty-2"}\n'
    "no timestamp on this line\n"
    '2026-12-01T13:53:19Z {"level":"info","msg":"Binding pod","name":"edge-empty"}\n'
    '2026-12-01T13:53:19.5Z {"msg":"Observed a panic","name":"edge-empty",'
    '"error":"assignment to entry in nil map\\ngoroutine 167 [running]:"}\n'
)
T0 = 1796133198.0  # 2026-12-01T13:53:18Z


def test_log_lines_read_the_node_timestamps_and_skip_lines_without():
    lines = S.log_lines(BINDER_LOG)
    assert [round(t - T0, 3) for t, _m in lines] == [0.445, 0.5, 1.0, 1.5]


def test_log_steps_keep_lines_naming_the_workload_as_a_whole_name():
    steps = S.log_steps(BINDER_LOG, T0, "binder b-1 log", mentions="edge-empty")
    assert steps == [
        {
            "s": 0.445,
            "what": "binder b-1 log: Reconciler error: assignment to entry in nil map",
            "clock": "node",
        },
        {"s": 1.0, "what": "binder b-1 log: Binding pod", "clock": "node"},
        {
            "s": 1.5,
            "what": "binder b-1 log: Observed a panic: assignment to entry in nil map "
            "goroutine 167 [running]:",
            "clock": "node",
        },
    ]
    assert len(S.log_steps(BINDER_LOG, T0, "x")) == 4


def test_the_timeline_merges_binder_and_probe_log_lines_with_the_watches():
    from ansible_collections.kaiops.runbooks.plugins.module_utils.reproduce.runner import CaseRun

    run = CaseRun.__new__(CaseRun)
    states = [
        {"name": "edge-empty", "submitted_t": 100.0, "submitted_wall": T0},
        {"name": "probe", "probe": True, "submitted_t": 100.0, "submitted_wall": T0},
    ]
    final = {
        "bindrequests": [],
        "reservations": [],
        "pods": [
            {
                "type": "MODIFIED",
                "t": 101.5,
                "object": {"metadata": {"name": "edge-empty"}, "spec": {"nodeName": "n1"}},
            }
        ],
        "logs": {
            "binder b-1": BINDER_LOG,
            "probe probe": "2026-12-01T13:53:20.25Z gpu probe: 1 device, ok\n",
        },
    }
    timeline = {t["workload"]: t["steps"] for t in run.timeline(final, states)}
    edge = [s["what"] for s in timeline["edge-empty"]]
    assert edge == [
        "gate lifted (submitted to KAI)",
        "binder b-1 log: Reconciler error: assignment to entry in nil map",
        "binder b-1 log: Binding pod",
        "binder b-1 log: Observed a panic: assignment to entry in nil map goroutine 167 [running]:",
        "pod has a node (bound)",
    ]
    assert timeline["probe"][-1] == {
        "s": 2.25,
        "what": "probe log: gpu probe: 1 device, ok",
        "clock": "node",
    }


# ------------------------------------------------- one clock: no negative figure as a measurement


def test_a_pod_the_watchs_first_list_shows_bound_has_no_submit_to_bound_time():
    # recovery/observe on the lab: the patched build bound the pod before the window opened; the
    # LIST's record (controller clock) came 0.055 s before the window's stamp: -0.055 s.
    records = {"pods": [rec(99.945, "INITIAL", pod("p", "n1", "Running"))], "bindrequests": []}
    obs = observation(records, submitted=100.0)
    assert obs["submit_to_bound_s"] is None and obs["submit_to_running_s"] is None
    assert obs["bound_before_window"] is True and obs["node"] == "n1"
    assert obs["timing_notes"][0].startswith("bound: already so when the watch started")
    # also when the LIST came after the stamp: the bind happened before it, at no known time
    later = {"pods": [rec(100.2, "INITIAL", pod("p", "n1", "Running"))], "bindrequests": []}
    assert observation(later, submitted=100.0)["submit_to_bound_s"] is None


def test_a_record_before_the_submission_stamp_is_not_timed():
    records = {"pods": [rec(0.4, "MODIFIED", pod("p", "n1", "Running"))], "bindrequests": []}
    obs = observation(records, submitted=0.5)
    assert obs["submit_to_bound_s"] is None and obs["bound_before_window"] is True
    assert obs["timing_notes"][0] == "bound: seen 0.100 s before the submission stamp; not timed"
    assert W.latency([obs["submit_to_bound_s"]], 1)["count"] == 0


class TickingClock:
    """The controller's monotonic clock: each read 10 ms after the last."""

    def __init__(self):
        self.t = 100.0

    def __call__(self):
        self.t = round(self.t + 0.01, 3)
        return self.t


class WatchedRecords:
    def __init__(self, records):
        self.records = records
        self.errors = []

    def objects(self, key):
        return list(self.records.get(key, []))

    def stop(self):
        pass


def observe_run(clock, pods, **params):
    """A recovery/observe CaseRun whose cluster reads are the given watch records (``pods``
    builds the pod records from the LIST's time)."""
    from ansible_collections.kaiops.runbooks.plugins.module_utils.reproduce.runner import CaseRun

    run = CaseRun.__new__(CaseRun)
    run.clock, run.wall = clock, lambda: T0
    run.p = dict({"phase": "observe", "workloads": [{"name": "edge"}], "window_s": 5}, **params)
    run.p["keep_namespaces"] = True
    run.build = {"version": "v0.16.14", "exposed": False}
    run.case, run.namespace, run.writer, run.files, run.interventions = (
        "recovery",
        "ns",
        None,
        [],
        [],
    )
    run.create_namespace = run.write_watches = lambda *a: None
    run.restarts = lambda: 0
    run.follow = lambda *a: False
    run.listed, run.client = [], None

    def start_watches():
        t = clock()
        run.listed.append(t)
        got = pods(t)
        return WatchedRecords(got if isinstance(got, dict) else {"pods": got})

    def collect(rec_, states):
        empty = ("configmaps", "events", "reservations")
        final = {k: [] for k in empty + ("pods_now", "configmaps_now", "reservations_now")}
        return dict(
            final, pods=rec_.objects("pods"), bindrequests=rec_.objects("bindrequests"), logs={}
        )

    run.start_watches, run.collect = start_watches, collect
    return run


def test_recovery_observe_opens_its_window_before_the_watches_and_times_nothing_negative():
    clock = TickingClock()
    # the LIST: the patched build has bound the pod already
    run = observe_run(clock, lambda t: [rec(t, "INITIAL", pod("edge", "n1", "Running"))])
    result = run.run()
    listed = run.listed
    (state,) = result["workloads"]
    assert state["submitted_t"] < listed[0]  # the window opened first, on the same clock
    (obs,) = result["observations"]
    assert obs["submit_to_bound_s"] is None and obs["bound_before_window"] is True
    bound = next(c for c in result["assertions"] if c["name"] == "edge: pod bound (has a node)")
    assert bound["result"] == "pass"
    (timeline,) = result["timeline"]
    assert all(s["s"] is None or s["s"] >= 0 for s in timeline["steps"])
    untimed = [s for s in timeline["steps"] if s["s"] is None]
    assert [s["what"] for s in untimed] == ["pod has a node (bound)", "container running"]
    assert timeline["steps"][0] == untimed[0]  # untimed steps first
    doc_case = dict(result, verdict="pass", declared={"expect": "binds"})
    observed = R._case_columns(doc_case)["observed"]
    assert "edge bound (before the window opened, not timed)" in observed


def test_recovery_observe_started_before_the_switch_keeps_a_bind_and_deletion_made_during_it(
    monkeypatch,
):
    # make test under two CPU burners: the patched binder bound the stuck pod during the switch
    # and KAI deleted it 0.4 s later, before the window opened; watched from before the switch,
    # the bind is a recorded pod with a node and the deletion is reported, never "not found".
    from ansible_collections.kaiops.runbooks.plugins.module_utils.reproduce import runner

    clock = TickingClock()
    switched = []

    def wait_rolled_out(client, namespace, version, timeout_s, **kw):
        assert kw == {"read_errors_retried": True}
        clock.t += 12.5  # the switch's seconds
        switched.append((namespace, version, timeout_s, clock()))
        return {"implementation": "standin"}, 12.5, True, []

    monkeypatch.setattr(runner.I, "wait_rolled_out", wait_rolled_out)

    def pods(t):
        return {
            "pods": [
                rec(t, "INITIAL", pod("edge", None, "Pending")),
                rec(t + 0.001, "MODIFIED", pod("edge", "n1", "Running")),
                rec(t + 0.002, "DELETED", pod("edge", "n1", "Running")),
            ],
            # the old build's last failed attempt, watched during the switch
            "bindrequests": [
                rec(t, "INITIAL", br("b1", "edge")),
                rec(t + 0.0005, "MODIFIED", br("b1", "edge", "Failed", NIL)),
            ],
        }

    run = observe_run(clock, pods, switch_to="v0.16.14", switch_timeout_s=300, kai_namespace="k")
    restarts = iter([4, 0, 0])  # the old build's binder restarted; the new one's did not
    run.restarts = lambda: next(restarts)
    result = run.run()
    (state,) = result["workloads"]
    assert switched[0][:3] == ("k", "v0.16.14", 300)
    assert run.listed[0] < switched[0][3] <= state["submitted_t"]  # watches, switch, window
    (obs,) = result["observations"]
    assert obs["node"] == "n1" and obs["deleted"] and obs["seen"]
    assert obs["bound_before_window"] is True and obs["submit_to_bound_s"] is None
    # the old build's failure is kept with the attempts, not counted as the new build's
    assert [a["before_window"] for a in obs["attempts"]] == [True]
    assert obs["failed_attempts"] == 0 and obs["failed_attempts_before_window"] == 1
    assert result["metrics"]["failed_attempts"] == 0
    assert result["metrics"]["failures_by_cause"] == {}
    checks = dict((c["name"], c) for c in result["assertions"])
    assert checks["edge: pod bound (has a node)"]["result"] == "pass"
    assert checks["binder_not_restarted"]["figure"] == 0
    assert checks["v0.16.14 rolled out"] == {
        "name": "v0.16.14 rolled out",
        "result": "pass",
        "figure": "12.5s",
        "expected": "within 300s",
    }
    assert result["build"]["implementation"] == "standin"
    # the case's duration (its cost window) starts with the window, not before the switch
    assert result["duration_s"] < 1
    observed = R._case_columns(dict(result, declared={"expect": "binds"}))["observed"]
    assert observed == "edge bound (before the window opened, not timed), then deleted"


def test_reserved_gpu_time_counts_only_from_the_case_start():
    from ansible_collections.kaiops.runbooks.plugins.module_utils.reproduce.runner import CaseRun

    reservation = {"metadata": {"uid": "r1", "labels": {"runai-gpu-group": "g-b2"}}}
    final = {
        "reservations": [
            rec(90.0, "ADDED", reservation),  # made during the switch, before the window
            rec(104.0, "DELETED", reservation),
        ]
    }
    failed = {"failed_at": 101.0, "before_window": False, "gpu_groups": ["g-b2"]}
    old = {"failed_at": 95.0, "before_window": True, "gpu_groups": ["g-old"]}
    obs = [{"attempts": [failed, old]}]
    run = CaseRun.__new__(CaseRun)
    assert run.reservation_held(final, obs, 100.0, 110.0) == 4.0
    assert run.reservation_held(final, obs, 80.0, 110.0) == 14.0


def test_recovery_observe_whose_switch_never_rolls_out_fails_with_the_reasons(monkeypatch):
    from ansible_collections.kaiops.runbooks.plugins.module_utils.reproduce import runner

    reasons = ["binder runs v0.16.13"]
    monkeypatch.setattr(
        runner.I,
        "wait_rolled_out",
        lambda *a, **kw: ({"implementation": "kai"}, 300.2, False, reasons),
    )
    run = observe_run(
        TickingClock(),
        lambda t: [rec(t, "INITIAL", pod("edge", None, "Pending"))],
        switch_to="v0.16.14",
        switch_timeout_s=300,
        kai_namespace="k",
    )
    result = run.run()
    check = next(c for c in result["assertions"] if c["name"] == "v0.16.14 rolled out")
    assert check["result"] == "fail" and check["figure"] == "300.2s: binder runs v0.16.13"
    assert result["verdict"] == "fail"


def test_log_lines_before_the_submission_by_the_nodes_clock_are_not_timed():
    steps = S.log_steps(BINDER_LOG, T0 + 1.2, "binder b-1 log", mentions="edge-empty")
    assert [s["s"] for s in steps] == [None, None, 0.3]
    assert steps[0]["note"] == "before the submission by the node's clock; not timed"


# ----------------------------------------------------------------- the cost section's failures


def test_cost_section_lists_only_work_that_could_not_start_as_failure():
    probe = {"name": "probe", "submit_to_bound_s": 2.1, "gpu_group": "g1", "completed": True}
    retried = {
        "name": "retried",
        "submit_to_bound_s": 4.0,
        "gpu_group": "g2",
        "completed": True,
        "failed_attempts": 1,
    }
    early = {
        "name": "early",
        "submit_to_bound_s": None,
        "node": "n1",
        "bound_before_window": True,
        "gpu_group": "g3",
        "completed": True,
    }
    stuck = {"name": "edge", "submit_to_bound_s": None, "gpu_group": None, "completed": False}
    results = [
        dict(case_result("nil_data", "v0.16.13", True, "pass"), observations=[stuck],
             duration_s=10.0),
        dict(case_result("creation", "v0.16.14", False, "pass"),
             observations=[probe, retried, early], duration_s=10.0),
    ]  # fmt: skip
    got = R.cost_section(results, gpus=4, rate=2)
    line = next(
        x for x in got["markdown"].splitlines() if x.startswith("Workloads that could not start")
    )
    assert line == (
        "Workloads that could not start when submitted: v0.16.13/nil_data/edge, "
        "v0.16.14/creation/retried."
    )
    # queue age: the timed binds and the never-bound work at its window; no figure for "early"
    assert got["queue_age"] == {"p50_s": 4.0, "max_s": 10.0, "count": 3}


# --------------------------------------------------------------------------- the binder flags


def test_builds_table_gives_the_binder_flags_whole():
    flags = ["--leader-elect=true", "--resource-reservation-app-label=kai-resource-reservation"]
    flags += ["--max-concurrent-reconciles=%d" % i for i in range(8)]
    flags.append("--scale-adjust-namespace=kai-scale-adjust-with-a-long-name")
    builds = [
        {
            "version": "v0.16.14",
            "exposed": False,
            "behaviour": "fixed",
            "behaviour_source": "meta",
            "identity": {"binder_flags": flags, "helm": {"chart": "kai-scheduler-v0.16.14"}},
        }
    ]
    doc = {
        "builds": builds,
        "kai_version": "v0.16.14",
        "verdict": "pass",
        "reasons": [],
        "run_id": "r",
        "generated_at": "now",
        "cluster": "lab",
        "cases": [],
    }
    text = R.render_markdown(doc)
    assert "| 11, listed below |" in text
    listed = [x[3:-1] for x in text.splitlines() if x.startswith("- `--")]
    assert listed == flags


# ------------------------------------- a pod gone before or during the window is said so


def test_a_pod_the_watches_never_saw_is_reported_as_gone_not_as_pending():
    # make test under two CPU burners: KAI bound the stuck pod during the switch of build and
    # deleted it (its reservation pod was gone) before recovery/observe's window opened
    obs = observation({"pods": [], "bindrequests": []}, name="stuck")
    assert obs["seen"] is False and obs["node"] is None and obs["phase"] is None
    assert R._observed(obs) == "stuck not found: it no longer existed when the window opened"


def test_a_pod_deleted_in_the_window_is_reported_deleted_unless_made_again():
    bound = pod("p", "n1", "Running")
    deleted = {
        "pods": [rec(1.0, "MODIFIED", bound), rec(1.5, "DELETED", bound)],
        "bindrequests": [],
    }
    obs = observation(deleted)
    assert obs["seen"] is True and obs["deleted"] is True
    assert R._observed(obs).startswith("p bound (") and R._observed(obs).endswith(", then deleted")
    again = dict(deleted, pods=deleted["pods"] + [rec(2.0, "ADDED", pod("p", uid="u2"))])
    obs = observation(again)
    assert obs["deleted"] is False
    assert R._observed(obs) == "p Pending, 0 failed attempts"
