"""module_utils/gpu_access/runner.py and the kai_gpu_access_* modules: the report files, check
mode, no evidence folder; the plan and the watch through an in-memory client (reads only); and
main() (argument spec = documentation, errors)."""

import json
import os

import pytest
from conftest import ExitJson, FailJson
from fakeapi import FakeClient
from test_modules import load, run_main

from ansible_collections.kaiops.runbooks.plugins.module_utils.bundle.report import (
    no_evidence_warning,
)
from ansible_collections.kaiops.runbooks.plugins.module_utils.errors import KaiopsError
from ansible_collections.kaiops.runbooks.plugins.module_utils.gpu_access import runner
from plugins.module_utils.gpu_access.test_plan import LAB, NEEDS, OPTIONS
from plugins.module_utils.gpu_access.test_service import DECLARED, lab_node, make_pod, probe_line

NOW = "2026-11-30T07:54:30.000000Z"


def params(evidence_dir=None, outsider_devices=None):
    return {
        "cluster": "lab",
        "cases": DECLARED,
        "declared_at": "2026-11-30T07:53:50.000000Z",
        "pods": [
            make_pod("whole-gpu", "whole_gpu"),
            make_pod("outsider", "policy_denial", gpu=None),
        ],
        "logs": {
            "whole-gpu": probe_line("whole-gpu"),
            "outsider": probe_line("outsider", outsider_devices),
        },
        "nodes": [lab_node()],
        "kai": {"installed": False},
        "skipped": {"fractional_sharing": "KAI Scheduler is not installed on this cluster"},
        "not_selected": [],
        "expected_isolation": "none",
        "require_sharing": False,
        "fraction": "0.5",
        "rate": "3",
        "window_start": None,
        "namespace": "kaiops-gpu-access",
        "probe_image": "kaiops.dev/gpuprobe:0.1.0",
        "evidence_dir": evidence_dir,
    }


def run(fake_module, p, **kw):
    module = fake_module(p, **kw)
    with pytest.raises(ExitJson) as done:
        runner.run_gpu_access_report(module, now=lambda: NOW)
    return module, done.value.result


def test_run_gpu_access_report_writes_json_and_markdown(fake_module, tmp_path):
    _unused, result = run(fake_module, params(str(tmp_path)))
    assert result["changed"] is False
    assert result["files"] == ["gpu_access.json", "gpu_access.md"]
    document = json.loads((tmp_path / "gpu_access.json").read_text())
    assert document["schema"] == "kaiops.gpu_access/v1"
    assert document["generated_at"] == NOW
    verdicts = {c["id"]: c["verdict"] for c in document["cases"]}
    assert verdicts["whole_gpu"] == "passed" and verdicts["policy_denial"] == "passed"
    assert verdicts["fractional_sharing"] == "not_run"
    assert document["cost"]["computed"] is True
    assert document["cost"]["window_start"] == "2026-11-30T07:53:50.000000Z"
    markdown = (tmp_path / "gpu_access.md").read_text()
    assert markdown.startswith("# GPU access: lab")
    assert "| case | expectation (declared before the run) | observed | verdict |" in markdown


def test_run_gpu_access_report_fails_the_summary_when_the_outsider_sees_devices(
    fake_module, tmp_path
):
    _unused, result = run(
        fake_module, params(str(tmp_path), outsider_devices="GPU-injected-by-test")
    )
    assert result["summary"]["outcome"] == "failed"
    assert result["summary"]["failed_cases"] == ["policy_denial"]
    assert "**FAILED**" in (tmp_path / "gpu_access.md").read_text()


def test_run_gpu_access_report_writes_under_check_mode(fake_module, tmp_path):
    _unused, result = run(fake_module, params(str(tmp_path)), check_mode=True)
    assert result["changed"] is False and (tmp_path / "gpu_access.json").is_file()


def test_run_gpu_access_report_warns_without_an_evidence_folder(fake_module):
    module, result = run(fake_module, params())
    assert result["files"] == [] and result["evidence_dir"] is None
    assert module.warnings == [no_evidence_warning("gpu_access.json, gpu_access.md")]


def test_run_gpu_access_report_never_replaces_a_report(fake_module, tmp_path):
    run(fake_module, params(str(tmp_path)))
    module = fake_module(params(str(tmp_path)))
    with pytest.raises(KaiopsError, match="already exists and is never replaced"):
        runner.run_gpu_access_report(module, now=lambda: NOW)
    assert sorted(os.listdir(tmp_path)) == ["gpu_access.json", "gpu_access.md"]


def test_kai_gpu_access_report_main_turns_kaiops_error_into_failure(capsys, tmp_path):
    module = load("kai_gpu_access_report")
    args = {"cluster": "lab", "cases": [{"id": "bogus", "expectation": "x"}]}
    code, result = run_main(module, dict(args, evidence_dir=str(tmp_path)), capsys)
    assert code == 1 and result["failed"] is True
    assert result["msg"].startswith("Failed to judge case 'bogus': no rule for it")
    assert result["status"] == "invalid_input"


def test_kai_gpu_access_report_main_rejects_an_unknown_isolation(capsys):
    module = load("kai_gpu_access_report")
    args = {"cluster": "lab", "cases": [], "expected_isolation": "hard"}
    code, result = run_main(module, args, capsys)
    assert code == 1 and "expected_isolation" in result["msg"]


def test_fail_json_is_never_reached_by_the_runner(fake_module, tmp_path):
    # The runner exits once, with exit_json; failures are KaiopsError for main() to turn.
    with pytest.raises((ExitJson, FailJson)) as done:
        runner.run_gpu_access_report(fake_module(params(str(tmp_path))), now=lambda: NOW)
    assert done.type is ExitJson


# ------------------------------------------------------------------ plan and watch (reads only)


def factory(client):
    seen = {}

    def make(kubeconfig, context, timeout):
        seen.update(kubeconfig=kubeconfig, context=context, timeout=timeout)
        return client

    return make, seen


def test_run_gpu_access_plan_reads_and_plans_without_writing(fake_module):
    client = FakeClient(objects=LAB, served=["scheduling.run.ai/v2"])
    make, seen = factory(client)
    p = dict(OPTIONS, cluster="lab", kai_namespace="kai-scheduler", kai={"installed": True},
             kubeconfig="/k", context=None, request_timeout=7)  # fmt: skip
    with pytest.raises(ExitJson) as done:
        runner.run_gpu_access_plan(fake_module(p), client_factory=make)
    result = done.value.result
    assert result["changed"] is False and result["plan"]["problems"] == []
    assert result["plan"]["contention"]["alloc_mib"] == 9831
    assert seen == {"kubeconfig": "/k", "context": None, "timeout": 7}
    assert {entry[0] for entry in client.log} == {"read", "list"}


def test_run_gpu_access_plan_under_check_mode_plans_every_case_as_not_run(fake_module):
    client = FakeClient(objects=LAB, served=["scheduling.run.ai/v2"])
    make, _unused = factory(client)
    p = dict(OPTIONS, cluster="lab", kai_namespace="kai-scheduler", kai={"installed": True})
    with pytest.raises(ExitJson) as done:
        runner.run_gpu_access_plan(fake_module(p, check_mode=True), client_factory=make)
    assert set(done.value.result["plan"]["skipped"]) == set(NEEDS)


def test_run_gpu_access_watch_returns_one_observation_per_stage(fake_module):
    pod = make_pod("whole-gpu", "whole_gpu")
    pod["apiVersion"], pod["kind"] = "v1", "Pod"
    client = FakeClient(objects=[pod])
    make, _unused = factory(client)
    p = {"namespace": "kaiops-gpu-access", "case": "whole_gpu", "stages": ["running", "ended"],
         "timeout_s": 10, "poll_s": 1, "reservation_namespace": "kai-resource-reservation",
         "reasons": {}}  # fmt: skip
    with pytest.raises(ExitJson) as done:
        runner.run_gpu_access_watch(
            fake_module(p), client_factory=make, clock=lambda: 0.0, now=lambda: NOW, sleep=None
        )
    result = done.value.result
    assert result["changed"] is False and result["met"] is True and result["case"] == "whole_gpu"
    assert [s["stage"] for s in result["snapshots"]] == ["running", "ended"]
    assert result["snapshots"][1]["pods"]["whole-gpu"]["phase"] == "Succeeded"
    assert result["snapshots"][1]["seen_at"] == NOW


def test_kai_gpu_access_watch_main_refuses_an_unknown_stage_before_any_request(capsys):
    module = load("kai_gpu_access_watch")
    args = {"namespace": "n", "case": "c", "stages": ["later"]}
    code, result = run_main(module, args, capsys)
    assert code == 1 and result["msg"].startswith("Failed to watch the case: unknown stages")
    assert result["status"] == "invalid_input"
