"""module_utils/snapshot/ for Helm: history + values, redacted, filed; failures raised."""

import json

import pytest
from conftest import ExitJson

from ansible_collections.kaiops.runbooks.plugins.module_utils.errors import KaiopsError
from ansible_collections.kaiops.runbooks.plugins.module_utils.evidence.redact import is_redacted
from ansible_collections.kaiops.runbooks.plugins.module_utils.snapshot.client import HelmCli
from ansible_collections.kaiops.runbooks.plugins.module_utils.snapshot.runner import (
    run_helm_snapshot,
)
from ansible_collections.kaiops.runbooks.plugins.module_utils.snapshot.service import (
    capture_helm_release,
)

HISTORY = [
    {
        "revision": 1,
        "chart": "kai-scheduler-v0.16.12",
        "app_version": "v0.16.12",
        "status": "superseded",
    },
    {
        "revision": 2,
        "chart": "kai-scheduler-v0.16.13",
        "app_version": "v0.16.13",
        "status": "deployed",
    },
]
VALUES = {
    "global": {"gpuSharing": True, "registry": "ghcr.io/x"},
    "pull": {"token": "s3cr3t", "apiKey": "k"},
}


def fake_helm(calls, fail=None):
    def run(argv):
        calls.append(argv)
        if fail and fail in argv:
            return 1, "", "Error: release: not found"
        if "history" in argv:
            return 0, json.dumps(HISTORY), ""
        if "values" in argv:
            return 0, json.dumps(VALUES), ""
        return 1, "", "unexpected"

    return run


def test_capture_reads_current_revision_and_redacts_values():
    calls = []
    cli = HelmCli(fake_helm(calls), "helm", "/kc", "ctx")
    snap = capture_helm_release(cli, "kai-scheduler", "kai-scheduler")
    assert snap["revision"] == 2 and snap["app_version"] == "v0.16.13"
    assert snap["values"]["global"] == {"gpuSharing": True, "registry": "ghcr.io/x"}
    assert "s3cr3t" not in json.dumps(snap)
    assert sorted(snap["redacted"]) == ["pull.apiKey", "pull.token"]
    assert calls[1][:5] == ["helm", "--kubeconfig", "/kc", "--kube-context", "ctx"]
    assert calls[1][5:10] == ["get", "values", "kai-scheduler", "--revision", "2"]


def test_capture_missing_release_raises_not_found():
    cli = HelmCli(fake_helm([], fail="history"), "helm")
    with pytest.raises(KaiopsError) as err:
        capture_helm_release(cli, "kai-scheduler", "kai-scheduler")
    assert err.value.status == "not_found"
    assert err.value.msg.startswith("Failed to read history of release kai-scheduler with helm")


def test_run_helm_snapshot_writes_files_and_returns_no_values(fake_module, tmp_path):
    module = fake_module(
        {
            "name": "before",
            "release": "kai-scheduler",
            "namespace": "kai-scheduler",
            "kubeconfig": None,
            "context": None,
            "binary_path": "/bin/helm",
            "evidence_dir": str(tmp_path),
        }
    )
    module.run_command = fake_helm([])
    with pytest.raises(ExitJson) as done:
        run_helm_snapshot(module)
    result = done.value.result
    assert result["revision"] == 2 and result["folder"] == "snapshots/before"
    assert "values" not in result and "s3cr3t" not in json.dumps(result)
    written = json.loads((tmp_path / "snapshots/before/values.json").read_text())
    assert is_redacted(written["pull"]["token"])
    assert (tmp_path / "snapshots/before/history.json").is_file()


def test_run_helm_snapshot_without_helm_fails(fake_module, tmp_path):
    module = fake_module(
        {
            "name": "b",
            "release": "r",
            "namespace": "n",
            "kubeconfig": None,
            "context": None,
            "binary_path": None,
            "evidence_dir": str(tmp_path),
        }
    )
    with pytest.raises(KaiopsError, match="Failed to find helm"):
        run_helm_snapshot(module)
