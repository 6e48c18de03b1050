"""module_utils/rollout/: change-request gates, evidence lookup, cluster gates, snapshot plan."""

import json

import pytest
import yaml
from conftest import fixture_path

from ansible_collections.kaiops.runbooks.plugins.module_utils.evidence.manifest import (
    build_manifest,
)
from ansible_collections.kaiops.runbooks.plugins.module_utils.rollout import gates as preflight

with open(fixture_path("preflight_cases.yml")) as _handle:
    CASES = yaml.safe_load(_handle)


def request(**override):
    base = dict(CASES["valid"])
    base.update(override)
    return base


def judge(req, root=None):
    return preflight.input_gates(
        req["change_owner"],
        req["target_version"],
        req["thresholds"],
        req["rollback_target"],
        req["regression_waiver"],
        root,
    )


@pytest.mark.parametrize("case", CASES["cases"], ids=[c["id"] for c in CASES["cases"]])
def test_input_gates_fail_exactly_the_named_gates(case):
    gates, _detail = judge(request(**case["override"]))
    assert [g["gate"] for g in preflight.failed(gates)] == case["failed"]
    for g in preflight.failed(gates):
        assert g["message"] and g["fix"], g


def test_refusal_message_names_every_failed_gate_and_fix():
    gates, _ = judge(
        request(change_owner="", thresholds={}, rollback_target="", regression_waiver={})
    )
    message = preflight.refusal_message("c1", gates)
    assert message.startswith("Rollout refused for c1: ")
    for text in (
        "change owner is missing (fix: set kaiops_rollout_change_owner",
        "acceptance thresholds are missing (fix: set kaiops_rollout_thresholds",
        "rollback target is missing (fix: set kaiops_rollout_rollback_target",
        "no passing reproduce report for v0.16.14",
    ):
        assert text in message


def test_refusal_message_empty_when_all_passed():
    gates, _ = judge(request())
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


def reproduce(version="v0.16.14", verdict="pass"):
    return {
        "schema": "kaiops.report/v1",
        "kind": "reproduce",
        "kai_version": version,
        "verdict": verdict,
    }


def test_find_regression_reports_counts_only_complete_verified_passing_reports(tmp_path):
    write_bundle(tmp_path, "a-reproduce-fail", reproduce(verdict="fail"))
    write_bundle(tmp_path, "b-reproduce-other", reproduce(version="v0.16.13"))
    write_bundle(tmp_path, "c-reproduce-interrupted", reproduce(), status="interrupted")
    write_bundle(tmp_path, "d-reproduce-tampered", reproduce(verdict="fail"), tamper=True)
    write_bundle(tmp_path, "e-rollout", dict(reproduce(), kind="rollout"))
    write_bundle(tmp_path, "f-reproduce-pass", reproduce())
    (tmp_path / "latest").symlink_to(tmp_path / "f-reproduce-pass")
    passing, considered = preflight.find_regression_reports(str(tmp_path), "v0.16.14")
    assert passing == ["f-reproduce-pass"]
    rejected = {c["bundle"]: c["rejected"] for c in considered}
    assert rejected["a-reproduce-fail"] == "verdict is fail"
    assert rejected["c-reproduce-interrupted"] == "bundle status is interrupted"
    assert rejected["d-reproduce-tampered"].startswith("manifest does not verify")
    assert "b-reproduce-other" not in rejected and "e-rollout" not in rejected


def test_regression_gate_passes_on_a_passing_report(tmp_path):
    write_bundle(tmp_path, "r1", reproduce())
    gate, detail = preflight.regression_gate("v0.16.14", str(tmp_path), {})
    assert gate["passed"] and gate["figure"] == "reproduce report r1/report.json"
    assert detail["bundle"] == "r1"


def test_regression_gate_fails_and_lists_rejected_reports(tmp_path):
    write_bundle(tmp_path, "r1", reproduce(verdict="fail"))
    gate, _ = preflight.regression_gate("v0.16.14", str(tmp_path), None)
    assert not gate["passed"]
    assert gate["message"] == (
        "no passing reproduce report for v0.16.14 in %s (rejected: r1: verdict is fail)" % tmp_path
    )


def test_regression_gate_waiver_reason_is_recorded(tmp_path):
    gate, detail = preflight.regression_gate("v0.16.14", str(tmp_path), "vendor-tested build")
    assert gate["passed"] and gate["figure"] == "waived: vendor-tested build"
    assert detail["waiver"] == {"reason": "vendor-tested build", "approved_by": None}


def test_regression_gate_with_missing_store_fails(tmp_path):
    gate, _ = preflight.regression_gate("v0.16.14", str(tmp_path / "nope"), {})
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
    selections, note = preflight.snapshot_selections(
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
    _selections, note = preflight.snapshot_selections(
        inventory(cms=80, listed=50), "kai", "kai-resource-reservation", "kai"
    )
    assert note == "GPU-sharing ConfigMaps: 50 of 80 captured (the inventory lists at most 50)"


def test_tag_pattern_is_exact():
    assert preflight.TAG.match("v0.16.14")
    for bad in ("v0.16.14 ", "v00.16.14", "0.16.14", "v0.16.14+build"):
        assert not preflight.TAG.match(bad), bad
