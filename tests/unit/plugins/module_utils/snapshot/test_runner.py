"""module_utils/snapshot/runner.py for Helm (history + values, redacted, filed; failures raised)
and for objects (run_snapshot: params in, files out)."""

import json

import pytest
from conftest import ExitJson

from ansible_collections.kaiops.runbooks.plugins.module_utils.bundle.report import (
    no_evidence_warning,
)
from ansible_collections.kaiops.runbooks.plugins.module_utils.errors import KaiopsError
from ansible_collections.kaiops.runbooks.plugins.module_utils.evidence.redact import is_redacted
from ansible_collections.kaiops.runbooks.plugins.module_utils.snapshot.runner import (
    run_helm_snapshot,
    run_snapshot,
)
from plugins.module_utils.snapshot.test_service import fake_helm


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


# -------------------------------------------------------------------------------------------------
# snapshot/runner.py's run_snapshot: params in, files and result dict out.


def never_called(*_args):
    raise AssertionError("the cluster must not be contacted")


def factory(client):
    def make(kubeconfig, context, timeout):
        make.args = (kubeconfig, context, timeout)
        return client

    return make


def snapshot_params(**extra):
    params = {
        "kubeconfig": "/k",
        "context": "ctx",
        "request_timeout": 7,
        "evidence_dir": None,
        "name": "s1",
        "return_objects": True,
        "selections": [
            {
                "kind": "ConfigMap",
                "api_version": "v1",
                "namespace": "team-a",
                "label_selectors": [],
                "field_selectors": [],
            }
        ],
    }
    params.update(extra)
    return params


def test_run_snapshot_writes_into_the_evidence_folder_and_returns_objects(
    tmp_path, fake_module, fake_client
):
    make = factory(fake_client("kai-sharing"))
    with pytest.raises(ExitJson) as done:
        run_snapshot(fake_module(snapshot_params(evidence_dir=str(tmp_path))), client_factory=make)
    result = done.value.result
    assert make.args == ("/k", "ctx", 7)
    assert result["changed"] is False
    assert (result["count"], result["files"], result["api_calls"]) == (3, 4, 1)
    assert result["folder"] == "snapshots/s1"
    assert result["evidence_dir"] == str(tmp_path)
    assert {o["metadata"]["name"] for o in result["objects"]} >= {"trainer-0-shared-gpu-0"}
    assert (tmp_path / "snapshots/s1/index.json").is_file()


def test_run_snapshot_without_folder_warns_and_writes_nothing(
    tmp_path, monkeypatch, fake_module, fake_client
):
    monkeypatch.setenv("KAIOPS_EVIDENCE_DIR", str(tmp_path))  # ignored: no environment lookup
    module = fake_module(snapshot_params(return_objects=False))
    with pytest.raises(ExitJson) as done:
        run_snapshot(module, client_factory=factory(fake_client("kai-sharing")))
    assert module.warnings == [no_evidence_warning("the snapshot")]
    assert list(tmp_path.iterdir()) == []
    assert done.value.result["folder"] is None and "objects" not in done.value.result


def test_run_snapshot_bad_evidence_dir_fails_before_cluster(tmp_path, fake_module):
    module = fake_module(snapshot_params(evidence_dir=str(tmp_path / "missing")))
    with pytest.raises(KaiopsError, match="Failed to open evidence folder"):
        run_snapshot(module, client_factory=never_called)
