"""bundle/journal.py: a run's append-only journal in its bundle - typed entries in order, a line
on disk when append returns, parallel appenders serialized, a torn last line skipped and never
glued to the next, secrets redacted, another (interrupted) run's journal read back."""

import json
import multiprocessing
import os
import stat

import pytest

from ansible_collections.kaiops.runbooks.plugins.module_utils.bundle import journal as J
from ansible_collections.kaiops.runbooks.plugins.module_utils.errors import KaiopsError


def clock():
    return "2026-12-02T10:00:00.000000Z"


def test_journal_appends_typed_entries_in_order(tmp_path):
    journal = J.Journal(str(tmp_path), clock=clock)
    first = journal.append("lab-a", "request", {"kai_version": "v0.16.14"})
    journal.append("lab-b", "request", {"kai_version": "v0.16.14"})
    journal.append("lab-a", "inventory", {"status": "ok"})
    assert first == {
        "seq": 1,
        "at": clock(),
        "subject": "lab-a",
        "type": "request",
        "data": {"kai_version": "v0.16.14"},
    }
    assert [(e["seq"], e["type"]) for e in journal.entries("lab-a")] == [
        (1, "request"),
        (3, "inventory"),
    ]
    assert [e["seq"] for e in journal.entries()] == [1, 2, 3]
    assert journal.subjects() == ["lab-a", "lab-b"]
    assert stat.S_IMODE(os.stat(journal.path).st_mode) == 0o644
    assert os.path.basename(journal.path) == "journal.jsonl"


def test_journal_without_a_bundle_refuses(tmp_path):
    with pytest.raises(KaiopsError, match="no bundle folder"):
        J.Journal(None)
    with pytest.raises(KaiopsError, match="no bundle folder"):
        J.Journal(str(tmp_path / "missing"))


def test_journal_of_a_run_that_wrote_nothing_is_empty(tmp_path):
    assert J.Journal(str(tmp_path)).entries("lab") == []


def test_journal_skips_a_torn_last_line_and_starts_the_next_on_its_own(tmp_path):
    journal = J.Journal(str(tmp_path), clock=clock)
    journal.append("lab", "request", {})
    with open(journal.path, "a") as handle:
        handle.write('{"seq": 2, "subject": "lab", "ty')  # killed mid-write
    assert [e["seq"] for e in journal.entries()] == [1]
    assert journal.torn == ['{"seq": 2, "subject": "lab", "ty']
    journal.append("lab", "inventory", {})
    again = J.Journal(str(tmp_path))
    assert [(e["seq"], e["type"]) for e in again.entries()] == [(1, "request"), (2, "inventory")]
    assert again.torn == ['{"seq": 2, "subject": "lab", "ty']
    lines = (tmp_path / "journal.jsonl").read_text().splitlines()
    assert len(lines) == 3 and json.loads(lines[2])["type"] == "inventory"


def test_journal_redacts_what_it_writes(tmp_path):
    journal = J.Journal(str(tmp_path), clock=clock)
    written = journal.append("lab", "snapshot", {"values": {"password": "hunter2"}})
    assert "hunter2" not in (tmp_path / "journal.jsonl").read_text()
    assert written["data"]["values"]["password"] != "hunter2"


def test_journal_keeps_what_a_record_holds(tmp_path):
    """Versions, uids, figures and times read back exactly as given (the record is built from
    them)."""
    data = {
        "version": "v0.16.14",
        "uids": ["6f1c2e9a-1b2c-4d5e-8f90-a1b2c3d4e5f6"],
        "p95_s": 0.123,
        "count": 3,
        "ok": True,
        "none": None,
        "sha": "0" * 64,
    }
    journal = J.Journal(str(tmp_path), clock=clock)
    journal.append("lab", "figures", data)
    assert J.Journal(str(tmp_path)).entries("lab")[0]["data"] == data


def _append_many(path, subject):
    journal = J.Journal(path)
    for n in range(20):
        journal.append(subject, "step", {"n": n})


def test_journal_appenders_in_parallel_get_distinct_sequence_numbers(tmp_path):
    workers = [
        multiprocessing.Process(target=_append_many, args=(str(tmp_path), name))
        for name in ("lab-a", "lab-b", "lab-c")
    ]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    entries = J.Journal(str(tmp_path)).entries()
    assert [e["seq"] for e in entries] == list(range(1, 61))
    for name in ("lab-a", "lab-b", "lab-c"):
        assert [e["data"]["n"] for e in entries if e["subject"] == name] == list(range(20))
    lines = (tmp_path / "journal.jsonl").read_text().splitlines()
    assert all(json.loads(line) for line in lines)


def test_an_interrupted_runs_journal_is_read_back(tmp_path):
    """A run killed after its journal's third line: a later run reads that bundle's journal."""
    old = tmp_path / "20261201T110000Z-rollout-b"
    old.mkdir()
    journal = J.Journal(str(old), clock=clock)
    for kind in ("request", "inventory", "before"):
        journal.append("lab", kind, {"kind": kind})
    with open(journal.path, "a") as handle:
        handle.write('{"seq": 4')
    read = J.Journal(str(old))
    assert [e["type"] for e in read.entries("lab")] == ["request", "inventory", "before"]
    assert read.torn == ['{"seq": 4']
