# Copyright: kaiops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Service layer of kai_recovery_apply: record each intervention, then apply it.

The order for every planned intervention is fixed and enforced here:

1. GET the object; stop when it is gone or is another object now (UID differs).
2. Write its full, sanitized snapshot into the evidence folder
   (``interventions/<cluster>/<NNN>-<kind>-<namespace>-<name>.json``; never Secret data).
3. Append a ``recorded`` line to ``interventions.jsonl`` (what, when, why, which task, the
   snapshot's file and SHA-256), flushed and fsynced.
4. Only then DELETE (or PATCH) that object, with preconditions on the recorded UID and
   resourceVersion, and append an ``applied`` / ``failed`` / ``conflict`` line.

``RecoveryApplier._write`` refuses any write whose intervention has no ``recorded`` line in
the journal: nothing is changed without a prior record. Under check mode nothing is written
to the cluster; each intervention is journaled as ``not_applied``.
"""

import datetime
import fcntl
import hashlib
import json
import os

from ansible_collections.kaiops.runbooks.plugins.module_utils.bundle.policy import (
    DEFAULT_POLICY,
    sanitize_object,
)
from ansible_collections.kaiops.runbooks.plugins.module_utils.errors import (
    STATUS_INVALID,
    STATUS_NOT_FOUND,
    KaiopsError,
)
from ansible_collections.kaiops.runbooks.plugins.module_utils.evidence.writer import (
    FILE_MODE,
    safe_name,
)

JOURNAL = "interventions.jsonl"
RESTART_ANNOTATION = "kubectl.kubernetes.io/restartedAt"


def utc_now():
    return datetime.datetime.now(datetime.timezone.utc)


def stamp(when):
    return when.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


class InterventionJournal:
    """Appends JSON lines to <evidence>/interventions.jsonl; a line is on disk when append()
    returns. ``seq`` is the line number, under an exclusive lock (hosts run in parallel)."""

    def __init__(self, writer):
        self.writer = writer
        self.path = os.path.join(writer.root, JOURNAL)
        self.recorded = set()

    def append(self, entry):
        fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, FILE_MODE)
        try:
            os.fchmod(fd, FILE_MODE)
            fcntl.flock(fd, fcntl.LOCK_EX)
            with open(self.path, "rb") as handle:
                seq = sum(1 for _line in handle) + 1
            line = dict(entry, seq=seq)
            # Written through the one redaction policy, as every evidence file is.
            text = json.dumps(DEFAULT_POLICY.redact(line), sort_keys=True, default=str)
            os.write(fd, (text + "\n").encode("utf-8"))
            os.fsync(fd)
        except OSError as exc:
            raise KaiopsError("Failed to write %s: %s" % (JOURNAL, exc)) from exc
        finally:
            os.close(fd)
        if entry.get("event") == "recorded":
            self.recorded.add(entry["id"])
        return line

    def snapshot(self, intervention_id, obj):
        """Write the object through the redaction policy; returns (relative path, sha256, what
        was removed or replaced)."""
        clean, removed = sanitize_object(obj)
        meta = clean.get("metadata") or {}
        base = "interventions/%s/%s-%s-%s" % (
            safe_name(intervention_id.split(":")[0]),
            safe_name(intervention_id.split(":")[-1]),
            safe_name((clean.get("kind") or "").lower()),
            safe_name("%s-%s" % (meta.get("namespace") or "_cluster", meta.get("name"))),
        )
        data = (json.dumps(clean, indent=2, sort_keys=True, default=str) + "\n").encode("utf-8")
        rel = self.writer.write_bytes(base + ".json", data)
        return rel, hashlib.sha256(data).hexdigest(), removed


class RecoveryApplier:
    """Applies planned interventions through the client (the layer below), journaling each."""

    def __init__(self, client, journal, cluster, task, clock=utc_now):
        if journal is None:
            raise KaiopsError(
                "Failed to apply recovery steps on %s: no evidence folder to record the "
                "interventions in; run with the kaiops.runbooks.evidence callback enabled "
                "(ansible.cfg) or set evidence_dir" % cluster,
                status=STATUS_INVALID,
            )
        self._client = client
        self._journal = journal
        self._cluster = cluster
        self._task = task
        self._clock = clock

    def apply(self, planned, check_mode=False):
        results = []
        for number, item in enumerate(planned, 1):
            ident = "%s:%03d" % (self._cluster, number)
            results.append(self._one(ident, item, check_mode))
        return results

    def _base(self, ident, item):
        return {
            "id": ident,
            "cluster": self._cluster,
            "step": item["step"],
            "action": item["action"],
            "target": item["target"],
            "findings": item["findings"],
            "why": item["why"],
            "task": self._task,
        }

    def _one(self, ident, item, check_mode):
        target = item["target"]
        base = self._base(ident, item)
        current = self._client.read(
            target["api_version"], target["kind"], target["name"], target["namespace"]
        )
        if current is None or (current.get("metadata") or {}).get("uid") != target["uid"]:
            line = self._journal.append(
                dict(
                    base,
                    event="skipped",
                    at=stamp(self._clock()),
                    reason="gone before it was recorded"
                    if current is None
                    else "another object (new UID) has this name now",
                )
            )
            return dict(base, outcome="skipped", reason=line["reason"], skipped_seq=line["seq"])
        if check_mode:
            line = self._journal.append(
                dict(base, event="not_applied", at=stamp(self._clock()), reason="--check run")
            )
            return dict(base, outcome="not_applied", reason="--check run", journal_seq=line["seq"])
        snapshot, digest, removed = self._journal.snapshot(ident, current)
        resource_version = (current.get("metadata") or {}).get("resourceVersion")
        recorded = self._journal.append(
            dict(
                base,
                event="recorded",
                recorded_at=stamp(self._clock()),
                resource_version=resource_version,
                snapshot=snapshot,
                snapshot_sha256=digest,
                snapshot_removed=removed,
            )
        )
        outcome, reason, deletion = self._write(ident, item, current, resource_version)
        applied = self._journal.append(
            dict(
                base,
                event={"deleted": "applied", "restarted": "applied"}.get(outcome, outcome),
                outcome=outcome,
                applied_at=stamp(self._clock()),
                reason=reason,
                deletion_timestamp=deletion,
            )
        )
        return dict(
            base,
            outcome=outcome,
            reason=reason,
            recorded_seq=recorded["seq"],
            recorded_at=recorded["recorded_at"],
            applied_seq=applied["seq"],
            applied_at=applied["applied_at"],
            deletion_timestamp=deletion,
            snapshot=snapshot,
            snapshot_sha256=digest,
        )

    def _write(self, ident, item, current, resource_version):
        """The only place that changes the cluster; refuses anything not recorded first."""
        if ident not in self._journal.recorded:
            raise KaiopsError(
                "Failed to apply %s: it was not recorded in %s first" % (ident, JOURNAL)
            )
        target = item["target"]
        try:
            if item["action"] == "delete":
                answer = self._client.delete(
                    target["api_version"],
                    target["kind"],
                    target["name"],
                    target["namespace"],
                    target["uid"],
                    resource_version,
                )
                deletion = ((answer or {}).get("metadata") or {}).get("deletionTimestamp")
                return "deleted", "DELETE accepted", deletion
            if item["action"] == "restart":
                now = stamp(self._clock())
                self._client.patch(
                    target["api_version"],
                    target["kind"],
                    target["name"],
                    target["namespace"],
                    {
                        "spec": {
                            "template": {"metadata": {"annotations": {RESTART_ANNOTATION: now}}}
                        }
                    },
                    resource_version,
                )
                return "restarted", "template annotation %s=%s" % (RESTART_ANNOTATION, now), None
        except KaiopsError as exc:
            if exc.http_status == 409:
                return "conflict", "changed since it was recorded: not applied (%s)" % exc.msg, None
            if exc.status == STATUS_NOT_FOUND:
                return "gone", "gone between the record and the request", None
            return "failed", exc.msg, None
        raise KaiopsError(
            "Failed to apply %s: unknown action %r" % (ident, item["action"]),
            status=STATUS_INVALID,
        )
