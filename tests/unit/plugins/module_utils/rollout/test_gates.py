"""module_utils/rollout/: change-request gates, evidence lookup, cluster gates, snapshot plan."""

import json

import pytest
import yaml
from conftest import PATCHED, PRE, fixture_path

from ansible_collections.kaiops.runbooks.plugins.module_utils.evidence.manifest import (
    build_manifest,
)
from ansible_collections.kaiops.runbooks.plugins.module_utils.rollout import gates as preflight
from ansible_collections.kaiops.runbooks.plugins.module_utils.rollout import pipeline
from ansible_collections.kaiops.runbooks.plugins.module_utils.rollout.client import (
    find_regression_reports,
)
from ansible_collections.kaiops.runbooks.plugins.module_utils.rollout.request import (
    normalize_request,
)

with open(fixture_path("preflight_cases.yml")) as _handle:
    CASES = yaml.safe_load(_handle)
PAIR = {"pre": PRE, "patched": PATCHED}


def request(**override):
    base = dict(CASES["valid"])
    base.update(override)
    return {k: PAIR.get(v, v) if isinstance(v, str) else v for k, v in base.items()}


def judge(req, root=None):
    return preflight.request_gates(normalize_request(req), find_regression_reports, root)


@pytest.mark.parametrize("case", CASES["cases"], ids=[c["id"] for c in CASES["cases"]])
def test_input_gates_fail_exactly_the_named_gates(case):
    gates, _detail = judge(request(**case["override"]))
    assert [g["gate"] for g in preflight.failed(gates)] == case["failed"]
    for g in preflight.failed(gates):
        assert g["message"] and g["fix"], g


def test_refusal_message_names_every_failed_gate_and_fix():
    gates, _unused = judge(
        request(change_owner="", thresholds={}, rollback_target="", regression_waiver={})
    )
    message = preflight.refusal_message("c1", gates)
    assert message.startswith("Rollout refused for c1: ")
    for text in (
        "change owner is missing (fix: set kaiops_change_owner",
        "acceptance thresholds are missing (fix: set kaiops_thresholds",
        "rollback target is missing (fix: set kaiops_rollout_rollback_target",
        "no passing reproduce report for %s" % PATCHED,
    ):
        assert text in message


def test_refusal_message_empty_when_all_passed():
    gates, _unused = judge(request())
    assert preflight.refusal_message("c1", gates) == ""


def write_bundle(root, name, report, status="complete", tamper=False):
    bundle = root / name
    bundle.mkdir(parents=True)
    (bundle / "report.json").write_text(json.dumps(report))
    (bundle / "status").write_text(status + "\n")
    (bundle / "manifest.sha256").write_text(build_manifest(str(bundle)))
    if tamper:
        (bundle / "report.json").write_text(json.dumps(dict(report, verdict="pass", x=1)))
    return bundle


def reproduce(version=PATCHED, verdict="pass"):
    return {
        "schema": "kaiops.report/v1",
        "kind": "reproduce",
        "kai_version": version,
        "verdict": verdict,
    }


def test_find_regression_reports_counts_only_complete_verified_passing_reports(tmp_path):
    write_bundle(tmp_path, "a-reproduce-fail", reproduce(verdict="fail"))
    write_bundle(tmp_path, "b-reproduce-other", reproduce(version=PRE))
    write_bundle(tmp_path, "c-reproduce-interrupted", reproduce(), status="interrupted")
    write_bundle(tmp_path, "d-reproduce-tampered", reproduce(verdict="fail"), tamper=True)
    write_bundle(tmp_path, "e-rollout", dict(reproduce(), kind="rollout"))
    write_bundle(tmp_path, "f-reproduce-pass", reproduce())
    (tmp_path / "latest").symlink_to(tmp_path / "f-reproduce-pass")
    passing, considered = find_regression_reports(str(tmp_path), PATCHED)
    assert passing == ["f-reproduce-pass"]
    rejected = {c["bundle"]: c["rejected"] for c in considered}
    assert rejected["a-reproduce-fail"] == "verdict is fail"
    assert rejected["c-reproduce-interrupted"] == "bundle status is interrupted"
    assert rejected["d-reproduce-tampered"].startswith("manifest does not verify")
    assert "b-reproduce-other" not in rejected and "e-rollout" not in rejected


def regression(tmp_path, waiver=None, root=None):
    gates, detail = judge(request(regression_waiver=waiver), str(root or tmp_path))
    return gates[-1], detail


def test_regression_gate_passes_on_a_passing_report(tmp_path):
    write_bundle(tmp_path, "r1", reproduce())
    gate, detail = regression(tmp_path, {})
    assert gate["gate"] == "regression_evidence"
    assert gate["passed"] and gate["figure"] == "reproduce report r1/report.json"
    assert detail["bundle"] == "r1"


def test_regression_gate_fails_and_lists_rejected_reports(tmp_path):
    write_bundle(tmp_path, "r1", reproduce(verdict="fail"))
    gate, _unused = regression(tmp_path, None)
    assert not gate["passed"]
    assert gate["message"] == (
        "no passing reproduce report for %s in %s (rejected: r1: verdict is fail)"
        % (PATCHED, tmp_path)
    )


def test_regression_gate_waiver_reason_and_approver_are_recorded(tmp_path):
    waiver = {"reason": " vendor-tested build ", "approved_by": "cab"}
    gate, detail = regression(tmp_path, waiver)
    assert gate["passed"] and gate["figure"] == "waived: vendor-tested build (approved by cab)"
    assert detail["waiver"] == {"reason": "vendor-tested build", "approved_by": "cab"}


@pytest.mark.parametrize(
    ("waiver", "problem"),
    [
        (
            "vendor-tested build",
            "regression waiver must be a mapping {reason, approved_by}, got a string "
            "('vendor-tested build')",
        ),
        (["a"], "regression waiver must be a mapping {reason, approved_by}, got a list"),
        ({"reason": "r"}, "regression waiver has no approved_by"),
        ({"reason": " ", "approved_by": "cab"}, "regression waiver has no reason"),
        ({"reason": "r", "approved_by": "c", "by": "x"}, "regression waiver has unknown keys by"),
    ],
)
def test_regression_gate_refuses_a_waiver_that_is_not_a_complete_mapping(tmp_path, waiver, problem):
    gate, detail = regression(tmp_path, waiver)
    assert not gate["passed"] and gate["figure"] == "invalid waiver" and detail is None
    assert gate["message"].startswith(problem), gate["message"]
    assert gate["fix"] == preflight.WAIVER_FIX


def test_regression_gate_with_missing_store_fails(tmp_path):
    gate, _unused = regression(tmp_path, {}, root=tmp_path / "nope")
    assert not gate["passed"]


def inventory(installed=True, status="ok", version="v0.16.13", revision=2, cms=0, listed=0):
    return {
        "status": status,
        "error": "Failed to reach the API server" if status == "unreachable" else None,
        "kai": {
            "installed": installed,
            "namespace": "kai-scheduler",
            "version": version if installed else None,
            "helm": {"release": "kai-scheduler", "revision": revision} if installed else {},
        },
        "affected_path": {
            "configmaps": cms,
            "configmap_list": [{"namespace": "team-a", "name": "cm-%d" % n} for n in range(listed)],
        },
    }


def test_cluster_gates_without_kai_name_the_cluster():
    gates = preflight.cluster_gates("lab", inventory(installed=False, status="not_installed"))
    assert [(g["gate"], g["passed"]) for g in gates] == [
        ("reachable", True),
        ("kai_release", False),
    ]
    assert gates[1]["message"] == "no KAI release on cluster lab (namespace kai-scheduler)"


def test_cluster_gates_unreachable_is_one_failed_gate():
    gates = preflight.cluster_gates("c1", inventory(status="unreachable"))
    assert [(g["gate"], g["passed"]) for g in gates] == [("reachable", False)]
    assert "unreachable - Failed to reach the API server" in gates[0]["message"]


def test_cluster_gates_missing_inventory_fails():
    assert not preflight.cluster_gates("c1", None)[0]["passed"]


@pytest.mark.parametrize(
    ("rollback", "passed"),
    [("v0.16.13", True), ("v0.16.12", False), (2, True), ("1", True), (3, False), ("", None)],
)
def test_cluster_gates_rollback_target_must_be_recorded(rollback, passed):
    gates = {g["gate"]: g for g in preflight.cluster_gates("c1", inventory(), rollback)}
    assert gates["kai_release"]["passed"] and gates["current_version"]["passed"]
    if passed is None:
        assert "rollback_target_recorded" not in gates
    else:
        assert gates["rollback_target_recorded"]["passed"] is passed


def test_cluster_gates_unreadable_version_fails():
    gates = preflight.cluster_gates("c1", inventory(version="latest"))
    assert [g["gate"] for g in preflight.failed(gates)] == ["current_version"]


def test_snapshot_selections_cover_kai_state_and_each_sharing_configmap():
    selections, note = pipeline.snapshot_selections(
        inventory(cms=2, listed=2), "kai-scheduler", "kai-resource-reservation", "kai-scheduler"
    )
    kinds = [s["kind"] for s in selections]
    assert kinds == [
        "Deployment",
        "Config",
        "SchedulingShard",
        "Queue",
        "Pod",
        "Secret",
        "ConfigMap",
        "ConfigMap",
    ]
    assert selections[-1]["field_selectors"] == ["metadata.name=cm-1"]
    assert selections[5]["label_selectors"] == ["owner=helm", "name=kai-scheduler"]
    assert note == ""


def test_snapshot_selections_note_when_inventory_list_is_capped():
    _selections, note = pipeline.snapshot_selections(
        inventory(cms=80, listed=50), "kai", "kai-resource-reservation", "kai"
    )
    assert note == "GPU-sharing ConfigMaps: 50 of 80 captured (the inventory lists at most 50)"


def test_tag_pattern_is_exact():
    assert preflight.TAG.match(PATCHED) and preflight.TAG.match("v0.16.14")
    for bad in ("v0.16.14 ", "v00.16.14", "0.16.14", "v0.16.14+build"):
        assert not preflight.TAG.match(bad), bad


# ---------------------------------------------------------------- reading the request (issue 16)


def failed_messages(req):
    gates, _unused = judge(req)
    return {g["gate"]: g["message"] for g in preflight.failed(gates)}


@pytest.mark.parametrize(
    ("value", "got"),
    [
        ([1, 2], "a list"),
        ("fast", "a string ('fast')"),
        ({"p": 1}, "a mapping"),
        (True, "a boolean"),
    ],
)
def test_threshold_of_the_wrong_type_says_what_it_must_be_and_what_it_got(value, got):
    thresholds = dict(CASES["valid"]["thresholds"], bind_latency_p50_s=value)
    message = failed_messages(request(thresholds=thresholds))["threshold:bind_latency_p50_s"]
    assert message.startswith(
        "threshold bind_latency_p50_s (submission-to-bound latency, p50): "
        "must be a number of seconds, got %s" % got
    ), message


@pytest.mark.parametrize(
    ("name", "value", "text"),
    [
        ("completion_rate_min", [1], "must be a fraction in (0, 1], got a list"),
        ("binder_restarts_max", "none", "must be a whole number, 0 or more, got a string ('none')"),
        (
            "observation_window_s",
            {},
            "must be a whole number of seconds, 60 to 86400, got a mapping",
        ),
    ],
)
def test_each_threshold_kind_names_its_rule(name, value, text):
    thresholds = dict(CASES["valid"]["thresholds"], **{name: value})
    assert text in failed_messages(request(thresholds=thresholds))["threshold:" + name]


@pytest.mark.parametrize(
    ("thresholds", "message"),
    [
        (
            [2, 5],
            "kaiops_thresholds must be a mapping of threshold names to numbers, got a list",
        ),
        (
            "=fast",
            "kaiops_thresholds must be a mapping of threshold names to numbers, got a string "
            "('=fast')",
        ),
        ({}, "acceptance thresholds are missing"),
    ],
)
def test_thresholds_that_are_not_a_mapping_are_not_called_missing(thresholds, message):
    assert failed_messages(request(thresholds=thresholds))["thresholds"] == message


def test_numbers_are_stored_as_numbers():
    thresholds = dict(
        CASES["valid"]["thresholds"],
        observation_window_s=" 300 ",
        bind_latency_p95_s="5.5",
        binder_restarts_max="0",
    )
    read = normalize_request(request(thresholds=thresholds, rollback_target=" 7 "))
    assert read["thresholds"]["observation_window_s"] == 300
    assert isinstance(read["thresholds"]["observation_window_s"], int)
    assert read["thresholds"]["bind_latency_p95_s"] == 5.5
    assert read["thresholds"]["binder_restarts_max"] == 0
    assert read["rollback_target"] == 7
    gates, _unused = judge(request(thresholds=thresholds, rollback_target=" 7 "))
    figures = {g["gate"]: g["figure"] for g in gates}
    assert figures["threshold:observation_window_s"] == 300
    assert not preflight.failed(gates)


def test_unknown_threshold_names_the_nearest_known_one():
    thresholds = dict(CASES["valid"]["thresholds"], max_component_restarts=5)
    message = failed_messages(request(thresholds=thresholds))["thresholds:unknown"]
    assert message == (
        "unknown threshold name(s) max_component_restarts (did you mean component_restarts_max?)"
    )


@pytest.mark.parametrize(
    ("name", "text"),
    [
        (
            "kaiops_rollout_owner",
            "unknown variable kaiops_rollout_owner (did you mean kaiops_change_owner?)",
        ),
        ("kaiops_thresold", "unknown variable kaiops_thresold (did you mean kaiops_thresholds?)"),
        ("kaiops_rollout_waiver", "(did you mean kaiops_rollout_regression_waiver?)"),
        ("kaiops_rollout_change_owner", "kaiops_rollout_change_owner is now kaiops_change_owner"),
        (
            "kaiops_rollout_target_version",
            "kaiops_rollout_target_version is now kaiops_kai_version",
        ),
        (
            "kaiops_rollout_evidence_root",
            "kaiops_rollout_evidence_root is no longer read: the evidence store is",
        ),
    ],
)
def test_unknown_kaiops_variables_are_refused_with_the_nearest_known_name(name, text):
    message = failed_messages(request(variables=["kaiops_change_owner", name]))["variables"]
    assert text in message, message


def test_extra_vars_that_are_a_plain_string_are_refused():
    message = failed_messages(request(stray_extra_vars=['"just a string"']))["variables"]
    assert message == (
        "extra vars '\"just a string\"' are neither name=value pairs nor a mapping: nothing was "
        "set from them"
    )


def test_a_malformed_request_is_not_well_formed_but_missing_evidence_alone_is():
    gates, _unused = judge(request(variables=["kaiops_rollout_owner"]))
    assert pipeline.new_record("c1", {}, gates)["request_well_formed"] is False
    gates, _unused = judge(request(regression_waiver={}))
    assert [g["gate"] for g in preflight.failed(gates)] == ["regression_evidence"]
    assert pipeline.new_record("c1", {}, gates)["request_well_formed"] is True


def test_names_under_another_features_prefix_are_left_to_that_feature():
    names = ["kaiops_reproduce_not_yet_listed", "kaiops_gpu_access_typo", "kaiops_reprodce_x"]
    messages = failed_messages(request(variables=names))["variables"]
    assert "kaiops_reprodce_x" in messages
    assert "kaiops_reproduce_not_yet_listed" not in messages
    assert "kaiops_gpu_access_typo" not in messages


def test_threshold_gates_give_the_rule_not_just_the_unit():
    gates = {
        g["gate"]: g["threshold"]
        for g in preflight.threshold_gates(
            {
                "bind_latency_p50_s": 2,
                "bind_latency_p95_s": 5,
                "completion_rate_min": 1,
                "binder_restarts_max": 0,
                "observation_window_s": 300,
            }
        )
    }
    assert gates["threshold:bind_latency_p50_s"] == "> 0 s and p50 <= p95 (bind_latency_p95_s)"
    assert gates["threshold:bind_latency_p95_s"] == "> 0 s and p95 >= p50 (bind_latency_p50_s)"
    assert gates["threshold:completion_rate_min"] == "> 0 and <= 1"
    assert gates["threshold:binder_restarts_max"] == "a whole number >= 0"
    assert gates["threshold:observation_window_s"] == "a whole number of seconds, 60 to 86400"


def test_preflight_refuses_a_split_or_failed_release_with_the_fix():
    """Issue 19: a cluster whose helm and components disagree, or whose release was left failed
    (a helm rollback to the install revision), is refused by preflight and named."""
    from ansible_collections.kaiops.runbooks.plugins.module_utils.rollout import gates as G

    kai = {
        "installed": True,
        "version": "v0.16.14",
        "namespace": "kai-scheduler",
        "findings": [],
        "helm": {"release": "kai-scheduler", "revision": 3, "status": "failed",
                 "app_version": "v0.16.13"},
    }  # fmt: skip
    gates = {g["gate"]: g for g in G.cluster_gates("lab", {"status": "ok", "kai": kai})}
    assert not gates["agreement"]["passed"]
    assert "is failed at revision 3" in gates["agreement"]["message"]
    assert "helm says v0.16.13, binder runs v0.16.14: split" in gates["agreement"]["message"]
    assert "never helm rollback" in gates["agreement"]["fix"]
    kai["helm"] = {"release": "kai-scheduler", "status": "deployed", "app_version": "v0.16.14"}
    gates = {g["gate"]: g for g in G.cluster_gates("lab", {"status": "ok", "kai": kai})}
    assert gates["agreement"]["passed"]


def test_the_rehearsal_waiver_is_judged_like_the_regression_waiver_and_kept_as_read():
    waiver = {"reason": " rolled back in staging ", "approved_by": "cab"}
    read = normalize_request(request(rehearsal_waiver=waiver))
    assert read["rehearsal_waiver"] == {"reason": "rolled back in staging", "approved_by": "cab"}
    gates, _detail = preflight.request_gates(read, find_regression_reports, None)
    (judged,) = [g for g in gates if g["gate"] == "rehearsal_waiver"]
    assert judged["passed"] and judged["figure"] == "rolled back in staging (approved by cab)"
    gates, _detail = judge(request(rehearsal_waiver="yes please"))
    (judged,) = preflight.failed(gates)
    assert judged["message"] == (
        "rehearsal waiver must be a mapping {reason, approved_by}, got a string ('yes please')"
    )
    assert "kaiops_rollout_rehearsal_waiver" in judged["fix"]
    # none given: no gate (an approval without a rehearsal is judged after verification)
    assert "rehearsal_waiver" not in [g["gate"] for g in judge(request())[0]]


def test_a_malformed_rehearsal_waiver_makes_the_request_malformed():
    from ansible_collections.kaiops.runbooks.plugins.module_utils.rollout import pipeline

    gates, detail = judge(request(rehearsal_waiver={"reason": "x"}))
    record = pipeline.new_record("c1", {}, gates, detail)
    assert record["request_well_formed"] is False


def test_a_resumed_change_judges_only_the_rollback_target_on_the_earlier_version():
    # Found by make test's drill_interruption: the resumed run judged every gate on the version
    # the interrupted run recorded before its change, so helm (already at the new version) read
    # as a split from a binder that also ran the new version.
    from ansible_collections.kaiops.runbooks.plugins.module_utils.rollout import pipeline

    inventory = {
        "status": "ok",
        "kai": {
            "installed": True,
            "version": "v0.16.14",
            "helm": {
                "release": "kai-scheduler",
                "app_version": "v0.16.14",
                "revision": 4,
                "status": "deployed",
                "chart_version": "v0.16.14",
            },  # fmt: skip
            "findings": [],
        },
    }
    record = {
        "cluster": "c1",
        "request": {"rollback_target": "v0.16.13"},
        "gates": [],
        "steps": [],
        "evidence": [],
        "change": {"resume": {"bundle": "b1", "before": {"version": "v0.16.13", "revision": 3}}},
    }
    out = pipeline.add_inventory(
        record, inventory, "kai-scheduler", "kai-resource-reservation", "kai-scheduler"
    )
    gates = {g["gate"]: g for g in out["gates"]}
    assert gates["agreement"]["passed"], gates["agreement"]
    assert gates["rollback_target_recorded"]["passed"], gates["rollback_target_recorded"]
    assert gates["resumed"]["passed"]
    assert out["current_version"] == "v0.16.14"
