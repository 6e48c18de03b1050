"""module_utils/evidence/: the writer, the manifest, the folder lookup (real temp folders)."""

import os
import subprocess

import pytest

from ansible_collections.kaiops.runbooks.plugins.module_utils.errors import KaiopsError
from ansible_collections.kaiops.runbooks.plugins.module_utils.evidence.manifest import (
    MANIFEST,
    build_manifest,
    verify_manifest,
)
from ansible_collections.kaiops.runbooks.plugins.module_utils.evidence.redact import RedactionPolicy
from ansible_collections.kaiops.runbooks.plugins.module_utils.evidence.writer import (
    EvidenceWriter,
    resolve_evidence_dir,
    safe_name,
)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("before-upgrade", "before-upgrade"),
        ("../../etc/passwd", "etc_passwd"),
        ("a b/c", "a_b_c"),
        (".hidden", "hidden"),
        ("", "unnamed"),
        (None, "unnamed"),
    ],
)
def test_safe_name_confines_characters(text, expected):
    assert safe_name(text) == expected


def test_resolve_evidence_dir_takes_the_option_and_never_the_environment(tmp_path, monkeypatch):
    other = tmp_path / "other"
    other.mkdir()
    monkeypatch.setenv("KAIOPS_EVIDENCE_DIR", str(other))
    assert resolve_evidence_dir(str(tmp_path)) == str(tmp_path)
    assert resolve_evidence_dir(None) is None
    assert resolve_evidence_dir("") is None


def test_resolve_evidence_dir_rejects_missing_folder(tmp_path):
    with pytest.raises(
        KaiopsError, match=r"Failed to open evidence folder .* \(from evidence_dir\)"
    ):
        resolve_evidence_dir(str(tmp_path / "nope"))


def test_writer_never_replaces_a_file(tmp_path):
    writer = EvidenceWriter(str(tmp_path), RedactionPolicy())
    writer.write_text("a/b.txt", "one")
    with pytest.raises(KaiopsError, match="already exists and is never replaced"):
        writer.write_text("a/b.txt", "two")
    assert (tmp_path / "a" / "b.txt").read_text() == "one"
    assert [p.name for p in (tmp_path / "a").iterdir()] == ["b.txt"]  # no temp file left


@pytest.mark.parametrize("bad", ["../escape.txt", "a/../../x", "", "/", "a/.git/x", "a b.txt"])
def test_writer_refuses_paths_outside_or_unsafe(tmp_path, bad):
    with pytest.raises(KaiopsError, match="Failed to write evidence file"):
        EvidenceWriter(str(tmp_path / "root"), RedactionPolicy()).write_text(bad, "x")


def test_writer_unique_dir_suffixes_taken_names(tmp_path):
    writer = EvidenceWriter(str(tmp_path), RedactionPolicy())
    assert writer.unique_dir("snapshots/x") == "snapshots/x"
    assert writer.unique_dir("snapshots/x") == "snapshots/x-2"
    assert writer.unique_dir("snapshots/x") == "snapshots/x-3"


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
