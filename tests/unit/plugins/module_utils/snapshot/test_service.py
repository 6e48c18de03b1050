"""module_utils/snapshot/: the service, with the client layer faked in memory; the filing."""

import json

import pytest
from fakeapi import FakeClient

from ansible_collections.kaiops.runbooks.plugins.module_utils.bundle.policy import DEFAULT_POLICY
from ansible_collections.kaiops.runbooks.plugins.module_utils.errors import KaiopsError
from ansible_collections.kaiops.runbooks.plugins.module_utils.evidence.writer import (
    EvidenceWriter,
)
from ansible_collections.kaiops.runbooks.plugins.module_utils.snapshot.report import file_objects
from ansible_collections.kaiops.runbooks.plugins.module_utils.snapshot.service import (
    SnapshotService,
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


def test_file_writes_one_file_per_object_and_an_index(tmp_path, fake_client):
    service = SnapshotService(fake_client("kai-sharing"))
    captured = service.capture([{"kind": "ConfigMap", "namespace": "team-a"}, {"kind": "Node"}])
    writer = EvidenceWriter(str(tmp_path), DEFAULT_POLICY)
    root, folder, files = file_objects(None, "before change", captured, writer=writer)
    assert root == str(tmp_path)
    assert folder == "snapshots/before_change"
    assert "snapshots/before_change/00-configmap/team-a/trainer-0-shared-gpu-0.json" in files
    assert "snapshots/before_change/01-node/_cluster/gpu-node-1.json" in files
    assert len(files) == 3 + 2 + 1
    index = json.loads((tmp_path / folder / "index.json").read_text())
    assert [s["count"] for s in index["selections"]] == [3, 2]
    _root, again, _unused = file_objects(None, "before change", captured, writer=writer)
    assert again == "snapshots/before_change-2"  # never overwritten
