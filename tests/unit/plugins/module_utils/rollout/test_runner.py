"""module_utils/rollout/runner.py: the rollout's report modules (the files written, the request
link, the inventory's gates, a refusal without a bundle, the hosts' records from the journal), and
refused_by_request."""

import json
import xml.etree.ElementTree as ET

import pytest
from conftest import PATCHED, ExitJson

from ansible_collections.kaiops.runbooks.plugins.module_utils.errors import KaiopsError
from ansible_collections.kaiops.runbooks.plugins.module_utils.evidence.report import run_facts
from ansible_collections.kaiops.runbooks.plugins.module_utils.rollout import (
    report as rollout_report,
)
from ansible_collections.kaiops.runbooks.plugins.module_utils.rollout.record import RolloutRecord
from ansible_collections.kaiops.runbooks.plugins.module_utils.rollout.runner import (
    refused_by_request,
    run_rollout_inventory,
    run_rollout_refusal,
    run_rollout_report,
    run_rollout_request,
)
from plugins.module_utils.rollout.test_report import PENDING, REQUEST, clusters


def request_params(**extra):
    params = {
        "cluster": "c1",
        "change_owner": "me",
        "kai_version": PATCHED,
        "thresholds": None,
        "rollback_target": 3,
        "regression_waiver": None,
        "evidence_root": None,
        "evidence_dir": None,
        "variables": ["kaiops_change_owner"],
        "stray_extra_vars": [],
    }
    params.update(extra)
    return params


def test_run_rollout_report_writes_three_files(fake_module, tmp_path):
    module = fake_module(
        {
            "request": REQUEST,
            "clusters": clusters(),
            "evidence_dir": str(tmp_path),
            "run_id": None,
            "pending_steps": PENDING,
        }
    )
    with pytest.raises(ExitJson) as done:
        run_rollout_report(module)
    result = done.value.result
    assert result["files"] == ["report.json", "report.md", "junit.xml"]
    assert result["decision"] == "refused" and result["changed"] is False
    saved = json.loads((tmp_path / "report.json").read_text())
    assert saved["run_id"] == tmp_path.name and saved["schema"] == "kaiops.report/v1"
    ET.parse(str(tmp_path / "junit.xml"))


def test_run_rollout_report_without_evidence_folder_warns(fake_module):
    module = fake_module(
        {
            "request": REQUEST,
            "clusters": clusters(),
            "evidence_dir": None,
            "run_id": None,
            "pending_steps": [],
        }
    )
    with pytest.raises(ExitJson) as done:
        run_rollout_report(module)
    assert done.value.result["files"] == [] and module.warnings


def test_run_rollout_request_link_is_relative_to_the_run(fake_module, tmp_path):
    bundle = tmp_path / "20261129-reproduce-1"
    bundle.mkdir()
    (bundle / "report.json").write_text(
        json.dumps({"kind": "reproduce", "kai_version": PATCHED, "verdict": "pass"})
    )
    (bundle / "status").write_text("complete\n")
    from ansible_collections.kaiops.runbooks.plugins.module_utils.evidence.manifest import (
        build_manifest,
    )

    (bundle / "manifest.sha256").write_text(build_manifest(str(bundle)))
    run = tmp_path / "20261130-rollout-2"
    run.mkdir()
    module = fake_module(request_params(evidence_root=str(tmp_path), evidence_dir=str(run)))
    with pytest.raises(ExitJson) as done:
        run_rollout_request(module)
    result = done.value.result
    assert "record" not in result  # the record is in the run's journal, never returned
    record = RolloutRecord(str(run), "c1").record()
    assert record["regression"]["bundle"] == "20261129-reproduce-1"
    assert record["evidence"] == ["../20261129-reproduce-1/report.json"]
    assert result["failed_gates"] == ["thresholds"] and result["passed"] is False
    assert result["well_formed"] is False and record["request_well_formed"] is False
    assert result["kai_version"] == PATCHED == record["request"]["kai_version"]
    assert record["steps"] == [
        {"step": "request", "status": "done", "reason": "failed gates: thresholds"}
    ]
    assert "failed" not in result  # a failed gate is not a failed task


def test_run_rollout_inventory_adds_the_cluster_gates_and_the_snapshot_plan(fake_module, tmp_path):
    journal = RolloutRecord(str(tmp_path), "c1")
    journal.add("request", {"record": {"cluster": "c1", "request": {"rollback_target": ""}}})
    module = fake_module(
        {
            "cluster": "c1",
            "evidence_dir": str(tmp_path),
            "inventory": {"status": "not_installed", "kai": {"installed": False}},
            "judge": True,
            "namespace": "kai",
            "reservation_namespace": "rr",
            "helm_release": "kai",
        }
    )
    with pytest.raises(ExitJson) as done:
        run_rollout_inventory(module)
    result = done.value.result
    assert result["failed_gates"] == ["kai_release"] and result["snapshot_due"] is False
    assert result["selections"][0]["namespace"] == "kai" and "record" not in result
    record = journal.record()
    assert record["snapshot_plan"]["selections"] == result["selections"]
    steps = {s["step"]: s for s in record["steps"]}
    assert steps["snapshot"] == {
        "step": "snapshot",
        "status": "not_run",
        "reason": "preflight refused: kai_release",
    }


def test_run_rollout_refusal_without_a_bundle_fails_with_the_reasons(fake_module):
    module = fake_module(
        {
            "cluster": "c1",
            "evidence_dir": None,
            "problems": [{"field": "kaiops_x", "message": "unknown variable kaiops_x"}],
            "request": {},
            "operation": "rollout",
        }
    )
    with pytest.raises(KaiopsError, match="Rollout refused for c1: unknown variable kaiops_x"):
        run_rollout_refusal(module)


def test_run_rollout_report_reads_each_hosts_record_from_the_journal(fake_module, tmp_path):
    for name, record in clusters().items():
        RolloutRecord(str(tmp_path), name).add("request", {"record": dict(record, request=REQUEST)})
    module = fake_module(
        {
            "hosts": list(clusters()) + ["never-judged"],
            "request": None,
            "clusters": None,
            "evidence_dir": str(tmp_path),
            "run_id": None,
            "pending_steps": PENDING,
        }
    )
    with pytest.raises(ExitJson) as done:
        run_rollout_report(module)
    saved = json.loads((tmp_path / "report.json").read_text())
    expected = rollout_report.build(
        REQUEST,
        dict({n: dict(r, request=REQUEST) for n, r in clusters().items()}, **{"never-judged": {}}),
        saved["generated_at"],
        tmp_path.name,
        PENDING,
        run=run_facts(str(tmp_path)),
    )
    assert saved == json.loads(json.dumps(expected))
    assert done.value.result["inventoried"] == [
        n for n, r in clusters().items() if r.get("inventory_status")
    ]


@pytest.mark.parametrize(
    ("request_value", "clusters_value"),
    [
        (dict(REQUEST, regression_waiver="yes please"), "not a mapping of records"),
        ("just a string", {"c1": {"gates": "not a list"}}),
        (dict(REQUEST), {"c1": {"gates": [{"no": "gate key"}]}}),
    ],
)
def test_run_rollout_report_writes_three_files_whatever_its_input(
    fake_module, tmp_path, request_value, clusters_value
):
    module = fake_module(
        {
            "request": request_value,
            "clusters": clusters_value,
            "evidence_dir": str(tmp_path),
            "run_id": None,
            "pending_steps": None,
        }
    )
    with pytest.raises(KaiopsError) as done:
        run_rollout_report(module)
    assert done.value.msg.startswith("Failed to build the rollout report: ")
    assert done.value.msg.endswith(
        "(an error report was written: report.json, report.md, junit.xml)"
    )
    assert sorted(p.name for p in tmp_path.iterdir()) == ["junit.xml", "report.json", "report.md"]
    saved = json.loads((tmp_path / "report.json").read_text())
    assert saved["decision"] == "refused" and saved["error"].startswith(
        "the rollout report could not be built"
    )
    assert (
        "**Error**: the rollout report could not be built" in (tmp_path / "report.md").read_text()
    )
    junit = ET.parse(str(tmp_path / "junit.xml")).getroot()
    assert junit.get("errors") == "1" and junit.find("testsuite/testcase/error") is not None


def test_run_rollout_report_with_a_string_waiver_in_a_record_still_renders(fake_module, tmp_path):
    data = clusters()
    data["lab"]["request"] = dict(REQUEST, regression_waiver="yes please")
    module = fake_module(
        {
            "request": dict(REQUEST, regression_waiver="yes please"),
            "clusters": data,
            "evidence_dir": str(tmp_path),
            "run_id": None,
            "pending_steps": None,
        }
    )
    with pytest.raises(ExitJson):
        run_rollout_report(module)
    text = (tmp_path / "report.md").read_text()
    assert "| Regression waiver | invalid (not a mapping): yes please |" in text


# -------------------------------------------------------------------------------------------------
# rollout/runner.refused_by_request: a rollout or rollback refused on its request alone is a
# refused run (the bundle's status), one that read a cluster or changed one is not.


def cluster(decision="refused", stages=("request",), ran=()):
    steps = [{"step": "request", "status": "done"}] + [
        {"step": s, "status": "done" if s in ran else "not_run"}
        for s in ("inventory", "snapshot", "upgrade")
    ]
    gates = [{"stage": s, "gate": s, "passed": False} for s in stages]
    return {"decision": decision, "gates": gates, "steps": steps}


def test_every_cluster_refused_on_its_request_is_a_refused_run():
    assert refused_by_request({"clusters": {"c1": cluster(), "c2": cluster()}})


def test_a_cluster_that_was_read_or_changed_is_not():
    read = cluster(ran=("inventory",))
    assert not refused_by_request({"clusters": {"c1": cluster(), "c2": read}})
    assert not refused_by_request({"clusters": {"c1": cluster(stages=("request", "preflight"))}})
    assert not refused_by_request({"clusters": {"c1": cluster(decision="proceed")}})


def test_no_cluster_is_no_refusal():
    assert not refused_by_request({"clusters": {}})
