"""module_utils/evidence/manifest.py: the bundle's sha256sum manifest, built and verified (real temp
folders, checked with sha256sum itself)."""

import os
import subprocess

from ansible_collections.kaiops.runbooks.plugins.module_utils.evidence.manifest import (
    MANIFEST,
    build_manifest,
    verify_manifest,
)
from ansible_collections.kaiops.runbooks.plugins.module_utils.evidence.redact import RedactionPolicy
from ansible_collections.kaiops.runbooks.plugins.module_utils.evidence.writer import (
    EvidenceWriter,
)


def test_manifest_verifies_with_sha256sum(tmp_path):
    writer = EvidenceWriter(str(tmp_path), RedactionPolicy())
    writer.write_json("run.json", {"a": 1})
    writer.write_text("snapshots/s/01-configmap/ns/c.json", "{}\n")
    (tmp_path / ".kaiops-tmp-partial").write_text("half")  # a module mid-write is skipped
    (tmp_path / MANIFEST).write_text(build_manifest(str(tmp_path)))
    listed = (tmp_path / MANIFEST).read_text()
    assert "run.json" in listed and ".kaiops-tmp" not in listed
    (tmp_path / ".kaiops-tmp-partial").unlink()
    done = subprocess.run(
        ["sha256sum", "-c", MANIFEST], cwd=tmp_path, capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert verify_manifest(str(tmp_path)) == []


def test_verify_manifest_reports_tampering_and_unlisted_files(tmp_path):
    (tmp_path / "a.txt").write_text("a")
    (tmp_path / MANIFEST).write_text(build_manifest(str(tmp_path)))
    (tmp_path / "a.txt").write_text("changed")
    (tmp_path / "b.txt").write_text("new")
    assert verify_manifest(str(tmp_path)) == [
        "a.txt: checksum mismatch",
        "b.txt: present but not in the manifest",
    ]
    os.remove(tmp_path / MANIFEST)
    assert verify_manifest(str(tmp_path)) == [MANIFEST + " is missing"]
