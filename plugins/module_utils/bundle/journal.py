# Copyright: kaiops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A run's journal: append-only JSON lines in its bundle (``journal.jsonl``), one typed entry a
line, as recovery's ``interventions.jsonl`` is kept (``recovery/apply.py``).

The code that acts appends what it did (``append``); whoever needs the state of the run reads
the entries back (``entries``) and folds them (a feature's own rules, e.g. ``rollout/record.py``).
Nothing of it travels through Ansible facts.

An entry: ``{seq, at, subject, type, data}``; ``seq`` is its line number, taken under an
exclusive lock (hosts run in parallel), ``subject`` what it is about (a cluster), ``type`` one of
the types its reader knows. A line is on disk when ``append`` returns (fsync). A run that was
killed mid-write leaves at most a torn last line: the reader skips it and lists it
(``Journal.torn``), the next append starts a new line after it, and an interrupted run's
journal is read back the same way (``Journal(path_of_that_bundle)``). Each line passes through
the collection's redaction policy, as every file of a bundle does.
"""

import datetime
import fcntl
import json
import os

from ansible_collections.kaiops.runbooks.plugins.module_utils.bundle.policy import DEFAULT_POLICY
from ansible_collections.kaiops.runbooks.plugins.module_utils.errors import (
    STATUS_INVALID,
    KaiopsError,
)
from ansible_collections.kaiops.runbooks.plugins.module_utils.evidence.writer import FILE_MODE

JOURNAL = "journal.jsonl"


def _now():
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _lines(fd):
    """The file's bytes from the start, read through its own descriptor (under the lock)."""
    os.lseek(fd, 0, os.SEEK_SET)
    chunks = []
    while True:
        block = os.read(fd, 1 << 20)
        if not block:
            return b"".join(chunks)
        chunks.append(block)


def parse(data):
    """(entries, torn): every whole JSON line of ``data`` (bytes) as a dict, in order; ``torn``
    lists the text of each line that is not one (a write a killed run did not finish; the next
    append started a new line after it)."""
    entries, torn = [], []
    for raw in data.split(b"\n"):
        if not raw.strip():
            continue
        try:
            entry = json.loads(raw.decode("utf-8"))
        except ValueError:
            torn.append(raw.decode("utf-8", "replace"))
            continue
        if isinstance(entry, dict):
            entries.append(entry)
        else:
            torn.append(raw.decode("utf-8", "replace"))
    return entries, torn


class Journal:
    """The journal of the bundle ``bundle_dir``; ``clock`` gives each entry's ``at``."""

    def __init__(self, bundle_dir, clock=_now, policy=DEFAULT_POLICY):
        if not bundle_dir or not os.path.isdir(bundle_dir):
            raise KaiopsError(
                "Failed to open the run's journal: no bundle folder (%s); run with the "
                "kaiops.runbooks.evidence callback enabled (ansible.cfg) or set evidence_dir"
                % (bundle_dir or "none given"),
                status=STATUS_INVALID,
            )
        self.path = os.path.join(os.path.abspath(bundle_dir), JOURNAL)
        self.clock = clock
        self.policy = policy
        self.torn = []

    def append(self, subject, kind, data):
        """Append one entry; returns it as written (with its ``seq`` and ``at``)."""
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_APPEND, FILE_MODE)
        try:
            os.fchmod(fd, FILE_MODE)
            fcntl.flock(fd, fcntl.LOCK_EX)
            before = _lines(fd)
            entries, _torn = parse(before)
            entry = {
                "seq": len(entries) + 1,
                "at": self.clock(),
                "subject": subject,
                "type": kind,
                "data": data,
            }
            text = json.dumps(self.policy.redact(entry), sort_keys=True, default=str)
            lead = "\n" if before and not before.endswith(b"\n") else ""
            os.write(fd, (lead + text + "\n").encode("utf-8"))
            os.fsync(fd)
        except OSError as exc:
            raise KaiopsError("Failed to append to %s: %s" % (self.path, exc)) from exc
        finally:
            os.close(fd)
        return json.loads(text)

    def entries(self, subject=None):
        """Every entry, in order, or those about ``subject``; none when nothing was journaled."""
        try:
            with open(self.path, "rb") as handle:
                fcntl.flock(handle.fileno(), fcntl.LOCK_SH)
                data = handle.read()
        except FileNotFoundError:
            return []
        except OSError as exc:
            raise KaiopsError("Failed to read %s: %s" % (self.path, exc)) from exc
        found, self.torn = parse(data)
        if subject is None:
            return found
        return [e for e in found if e.get("subject") == subject]

    def subjects(self):
        """The subjects journaled, in the order each first appears."""
        seen = []
        for entry in self.entries():
            if entry.get("subject") not in seen:
                seen.append(entry.get("subject"))
        return seen
