"""module_utils/inventory/runner.py: params in, result dict out."""

import json

import pytest
from conftest import AFFECTED_RANGE, ExitJson

from ansible_collections.kaiops.runbooks.plugins.module_utils.errors import KaiopsError
from ansible_collections.kaiops.runbooks.plugins.module_utils.evidence.manifest import (
    verify_manifest,
)
from ansible_collections.kaiops.runbooks.plugins.module_utils.inventory.runner import (
    run_inventory_info,
    run_inventory_report,
)


def never_called(*_args):
    raise AssertionError("the cluster must not be contacted")


def factory(client):
    def make(kubeconfig, context, timeout):
        make.args = (kubeconfig, context, timeout)
        return client

    return make


def facts_params(**extra):
    params = {
        "kubeconfig": None,
        "context": None,
        "request_timeout": 5,
        "cluster": "lab",
        "namespace": "kai-scheduler",
        "affected_range": AFFECTED_RANGE,
        "helm_release": "kai-scheduler",
        "binder_deployment": "binder",
        "operator_deployment": "kai-operator",
        "admission_deployment": "admission",
        "restart_threshold": 5,
    }
    params.update(extra)
    return params


def test_run_inventory_info_returns_inventory_and_helm_path(fake_module, fake_client):
    module = fake_module(facts_params(), bin_paths={"helm": "/usr/bin/helm"})
    with pytest.raises(ExitJson) as done:
        run_inventory_info(module, client_factory=factory(fake_client("kai-sharing")))
    result = done.value.result
    assert result["changed"] is False and result["helm_path"] == "/usr/bin/helm"
    assert result["inventory"]["exposure"]["verdict"] == "exposed"
    assert result["inventory"]["cluster"] == "lab"
    assert result["inventory"]["duration_s"] >= 0


def test_run_inventory_info_bad_range_fails_before_cluster(fake_module):
    with pytest.raises(KaiopsError) as info:
        run_inventory_info(
            fake_module(facts_params(affected_range="<=banana")), client_factory=never_called
        )
    assert info.value.status == "invalid_input"


def test_run_inventory_info_forbidden_namespace_raises_with_status(fake_module, fake_client):
    client = fake_client("kai-sharing", forbidden=[("apps/v1", "Deployment")])
    with pytest.raises(KaiopsError) as info:
        run_inventory_info(fake_module(facts_params()), client_factory=factory(client))
    assert info.value.status == "forbidden"
    assert info.value.msg == (
        "Failed to read Deployments in namespace kai-scheduler: forbidden by RBAC"
    )


def test_run_inventory_report_writes_json_and_markdown(tmp_path, fake_module):
    clusters = {
        "a": {"status": "unreachable", "error": "Failed to reach"},
        "b": {"status": "not_installed", "exposure": {"verdict": "not_installed"}},
    }
    module = fake_module(
        {"clusters": clusters, "affected_range": ">=1.0.0", "evidence_dir": str(tmp_path)}
    )
    with pytest.raises(ExitJson) as done:
        run_inventory_report(module)
    result = done.value.result
    assert result["files"] == ["inventory.json", "inventory.md"]
    assert [f["cluster"] for f in result["summary"]["failed"]] == ["a"]
    document = json.loads((tmp_path / "inventory.json").read_text())
    assert document["clusters"] == clusters and document["affected_range"] == ">=1.0.0"
    assert "## b" in (tmp_path / "inventory.md").read_text()
    assert verify_manifest(str(tmp_path)) == ["manifest.sha256 is missing"]


def test_inventory_report_names_helm_and_the_binder_disagreeing(tmp_path, fake_module):
    """Issue 19: after a helm rollback to an upgrade revision helm reads the old version while
    the binder runs the new one; the inventory names it (a split), with the fix."""
    kai = {
        "installed": True,
        "version": "v0.16.14",
        "findings": ["operator runs v0.16.13, binder runs v0.16.14: split"],
        "helm": {"release": "kai-scheduler", "app_version": "v0.16.13", "status": "deployed"},
    }
    clusters = {"lab": {"status": "ok", "kai": kai, "exposure": {"verdict": "not_exposed"}}}
    module = fake_module(
        {"clusters": clusters, "affected_range": ">=1.0.0", "evidence_dir": str(tmp_path)}
    )
    with pytest.raises(ExitJson) as done:
        run_inventory_report(module)
    assert done.value.result["summary"]["split"] == ["lab"]
    document = json.loads((tmp_path / "inventory.json").read_text())
    assert document["clusters"]["lab"]["kai"]["findings"] == [
        "operator runs v0.16.13, binder runs v0.16.14: split",
        "helm says v0.16.13, binder runs v0.16.14: split",
    ]
    markdown = (tmp_path / "inventory.md").read_text()
    assert "**helm says v0.16.13, binder runs v0.16.14: split**" in markdown
    assert "disagrees with helm or within KAI on: lab" in markdown
