"""module_utils/snapshot/service.py: capture with the client layer faked in memory - objects by
selection, and a Helm release's history and values, redacted; failures raised."""

import json

import pytest
from fakeapi import FakeClient

from ansible_collections.kaiops.runbooks.plugins.module_utils.errors import KaiopsError
from ansible_collections.kaiops.runbooks.plugins.module_utils.snapshot.client import HelmCli
from ansible_collections.kaiops.runbooks.plugins.module_utils.snapshot.service import (
    SnapshotService,
    capture_helm_release,
    normalize_selection,
    selection_label,
)


def many_configmaps(count, namespace="bulk"):
    return [
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "cm-%04d" % i, "namespace": namespace, "labels": {"app": "x"}},
            "data": {"i": str(i)},
        }
        for i in range(count)
    ]


def test_normalize_selection_fills_defaults():
    assert normalize_selection({"kind": "ConfigMap"}) == {
        "api_version": "v1",
        "kind": "ConfigMap",
        "namespace": None,
        "label_selectors": [],
        "field_selectors": [],
    }


def test_normalize_selection_requires_kind():
    with pytest.raises(KaiopsError, match="'kind' is required"):
        normalize_selection({"namespace": "x"})


def test_selection_label_reads_like_kubectl_args():
    sel = normalize_selection(
        {"kind": "Pod", "namespace": "a", "label_selectors": ["app=x", "t=y"]}
    )
    assert selection_label(sel) == "v1 Pod a app=x,t=y"


def test_capture_batches_one_list_per_selection():
    client = FakeClient(objects=many_configmaps(1000))
    captured = SnapshotService(client).capture(
        [
            {"kind": "ConfigMap", "namespace": "bulk", "label_selectors": ["app=x"]},
            {"kind": "Deployment", "api_version": "apps/v1"},
        ]
    )
    assert [len(c["items"]) for c in captured] == [1000, 0]
    assert client.calls == 2
    assert client.log[0] == ("list", "v1", "ConfigMap", "bulk", "app=x", None, False)


def test_capture_sanitizes_and_reports_redactions(fake_client):
    captured = SnapshotService(fake_client("kai-sharing")).capture(
        [
            {"kind": "Secret", "namespace": "kai-scheduler"},
            {
                "kind": "Deployment",
                "api_version": "apps/v1",
                "namespace": "kai-scheduler",
                "field_selectors": ["metadata.name=kai-operator"],
            },
        ]
    )
    secrets, deployments = captured
    assert len(secrets["items"]) == 2
    assert "SECRET-RELEASE-PAYLOAD" not in json.dumps(captured)
    assert {r["name"] for r in secrets["redactions"]} == {
        "sh.helm.release.v1.kai-scheduler.v1",
        "sh.helm.release.v1.kai-scheduler.v2",
    }
    assert deployments["redactions"] == [
        {
            "kind": "Deployment",
            "namespace": "kai-scheduler",
            "name": "kai-operator",
            "removed": ["env operator/API_TOKEN"],
        }
    ]
    assert "hunter2" not in json.dumps(captured)


def test_capture_propagates_client_errors():
    with pytest.raises(KaiopsError) as info:
        SnapshotService(FakeClient(forbidden=[("v1", "Secret")])).capture([{"kind": "Secret"}])
    assert info.value.status == "forbidden"


# -------------------------------------------------------------------------------------------------
# snapshot/service.py for Helm: the release's history and values, redacted; failures raised.


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
