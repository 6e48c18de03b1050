"""module_utils/evidence/writer.py: the writer and the folder lookup (real temp folders)."""

import pytest

from ansible_collections.kaiops.runbooks.plugins.module_utils.errors import KaiopsError
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
