"""module_utils/gpu_access/runner.py and modules/kai_gpu_access_report.py: the report files,
check mode, no evidence folder, and main() (argument spec = documentation, errors)."""

import json
import os

import pytest
from conftest import ExitJson, FailJson
from test_gpu_access import DECLARED, lab_node, make_pod, probe_line
from test_modules import compare, documented_options, load, run_main

from ansible_collections.kaiops.runbooks.plugins.module_utils.errors import KaiopsError
from ansible_collections.kaiops.runbooks.plugins.module_utils.evidence.report import (
    no_evidence_warning,
)
from ansible_collections.kaiops.runbooks.plugins.module_utils.gpu_access import runner

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


def test_kai_gpu_access_report_argspec_matches_documentation():
    module = load("kai_gpu_access_report")
    compare(module.argspec(), documented_options(module), "kai_gpu_access_report")


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
