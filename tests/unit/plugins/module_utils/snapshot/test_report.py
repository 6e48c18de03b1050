"""module_utils/snapshot/report.py: the filing - one file per object and an index."""

import json

from ansible_collections.kaiops.runbooks.plugins.module_utils.bundle.policy import DEFAULT_POLICY
from ansible_collections.kaiops.runbooks.plugins.module_utils.evidence.writer import (
    EvidenceWriter,
)
from ansible_collections.kaiops.runbooks.plugins.module_utils.snapshot.report import file_objects
from ansible_collections.kaiops.runbooks.plugins.module_utils.snapshot.service import (
    SnapshotService,
)


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
