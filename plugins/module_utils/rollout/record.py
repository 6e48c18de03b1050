# Copyright: kaiops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The rollout's record of a cluster, kept in the run's journal (``bundle/journal.py``).

Each rollout module appends one typed entry for what it did - what it read or decided, never
the record - and reads the record back by folding the cluster's entries in order through
``ENTRIES``: the rules of ``rollout/pipeline.py`` (and ``rollout/change.py``), applied to what
was journaled. The fold is pure: every clock reading, evidence-store search and decision is in
the entry, so reading a journal again, in this run or after it was interrupted, gives the same
record. Nothing of the record travels through Ansible facts.

``RolloutRecord(bundle_dir, cluster)``: ``record()`` reads it, ``add(type, data)`` appends an
entry and returns the record with it; ``records(clusters)`` reads several (the report).
"""

from ansible_collections.kaiops.runbooks.plugins.module_utils.bundle.journal import Journal
from ansible_collections.kaiops.runbooks.plugins.module_utils.errors import (
    STATUS_INVALID,
    KaiopsError,
)
from ansible_collections.kaiops.runbooks.plugins.module_utils.rollout import change as C
from ansible_collections.kaiops.runbooks.plugins.module_utils.rollout import pipeline
from ansible_collections.kaiops.runbooks.plugins.module_utils.rollout.gates import failed


def _started(_record, data, _cluster):
    """The record as the request judged it (``request``) or as a rollback bundle gave it
    (``bundle``): the first entry of a cluster."""
    return dict(data["record"])


def _policy(record, data, _cluster):
    canary = {
        "name": data.get("canary"),
        "hosts": data.get("canary_hosts"),
        "play": data.get("hosts"),
    }
    out = pipeline.add_policy(record, data.get("on_failed_gate"), data.get("waves"), canary)
    out.setdefault("change", {})["rate"] = data.get("rate") or 0
    out["change"]["failure_budget"] = data.get("failure_budget") or 0
    # Recorded only when asked for: a request without them keeps the record it always had.
    for key in ("soak_s", "progress_deadline_s"):
        if data.get(key):
            out["change"][key] = data[key]
    return out


def _inventory(record, data, _cluster):
    return pipeline.add_inventory(
        record,
        data.get("inventory"),
        data.get("namespace"),
        data.get("reservation_namespace"),
        data.get("helm_release"),
    )


def _running(record, data, _cluster):
    """What runs on the cluster, read without judging it (rollback.yml's inventory)."""
    out = dict(record)
    for key in ("current_version", "implementation_label", "inventory_status"):
        out[key] = data.get(key)
    return out


def _snapshot(record, data, _cluster):
    return pipeline.add_snapshot(
        record, data.get("objects") or {}, data.get("helm"), data.get("use_helm", True)
    )


def _failure(record, data, cluster):
    return pipeline.add_failure(
        record,
        data.get("stage") or "cluster",
        data.get("task") or "unknown task",
        data.get("msg"),
        cluster=cluster,
    )


def _upgrade(record, data, _cluster):
    out = pipeline.add_upgrade(record, data.get("stage") or "upgrade", data)
    if data.get("stage") == "rollback":
        out["change"]["rollback"]["revision_target"] = data.get("revision_target")
    return out


def _decision(record, data, _cluster):
    out = pipeline.add_decision(record, data["action"])
    # The clock of "time to restore after a failed gate" starts at the decision.
    out["change"]["decided_at"] = data["decided_at"]
    return out


def _baseline_note(record, data, _cluster):
    out = dict(record)
    out["change"] = dict(record.get("change") or {}, baseline_note=data["note"])
    return out


def _finish(record, data, _cluster):
    out = pipeline.finish(record)
    change = out.get("change")
    if change is not None:
        for key in ("started_wall", "finished_wall"):
            if data.get(key):
                change[key] = data[key]
        if change.get("started_wall") and change.get("finished_wall"):
            change["duration_s"] = round(change["finished_wall"] - change["started_wall"], 1)
    return out


# Rules as data: entry type -> how it adds to the record (record, data, cluster) -> record.
ENTRIES = {
    "request": _started,
    "bundle": _started,
    "refusal": lambda record, data, cluster: pipeline.refused_record(cluster, data),
    "policy": _policy,
    "skip": lambda record, data, _cluster: pipeline.add_skip(record),
    "earlier": lambda record, data, _cluster: pipeline.add_earlier(record, data["earlier"]),
    "inventory": _inventory,
    "running": _running,
    "governance": lambda record, data, _cluster: pipeline.add_governance(
        record, data["summary"], data["gate"], data.get("evidence")
    ),
    "snapshot": _snapshot,
    "before": lambda record, data, _cluster: pipeline.add_before(record, data),
    "failure": _failure,
    "change_skip": lambda record, data, _cluster: pipeline.add_change_skip(record, data["reason"]),
    "prior": lambda record, data, _cluster: pipeline.add_prior(record),
    "wave": lambda record, data, _cluster: pipeline.add_wave(
        record, data["wave"], data.get("position", 0), data.get("waves"), data.get("budget", 0)
    ),
    "not_started": lambda record, data, _cluster: pipeline.add_not_started(record, data["reason"]),
    "baseline_note": _baseline_note,
    "figures": lambda record, data, _cluster: pipeline.add_figures(
        record, data["phase"], data["figures"], data.get("thresholds") or {}
    ),
    "upgrade": _upgrade,
    "progress": lambda record, data, _cluster: pipeline.add_progress(record, data["decided_at"]),
    "decision": _decision,
    "rollback": lambda record, data, _cluster: pipeline.add_rollback(
        record, restore=data.get("restore"), timing=data.get("timing"), error=data.get("error")
    ),
    "change_error": lambda record, data, _cluster: pipeline.add_change_error(
        record, data.get("step") or "upgrade", data.get("task"), data.get("msg")
    ),
    "rehearsal": lambda record, data, _cluster: C.add_rehearsal(
        record, data.get("cited"), data.get("rejected") or (), data.get("group"), data.get("peers")
    ),
    "finish": _finish,
}


def fold(entries):
    """The record the entries make, in order; ``{}`` when there are none."""
    record = {}
    for entry in entries:
        apply = ENTRIES.get(entry.get("type"))
        if apply is None:
            raise KaiopsError(
                "Failed to read the rollout record: entry %s has unknown type %r"
                % (entry.get("seq"), entry.get("type")),
                status=STATUS_INVALID,
            )
        record = apply(record, entry.get("data") or {}, entry.get("subject"))
    return record


class RolloutRecord:
    """The record of ``cluster`` in the journal of the bundle ``bundle_dir``."""

    def __init__(self, bundle_dir, cluster, journal=None):
        if not cluster:
            raise KaiopsError(
                "Failed to read the rollout record: no cluster given", status=STATUS_INVALID
            )
        self.cluster = cluster
        self.journal = journal or Journal(bundle_dir)

    def record(self):
        return fold(self.journal.entries(self.cluster))

    def add(self, kind, data):
        """Append one entry of ``kind`` (a key of ENTRIES); the record with it, as read back."""
        if kind not in ENTRIES:
            raise KaiopsError(
                "Failed to add to the rollout record: unknown entry type %r" % kind,
                status=STATUS_INVALID,
            )
        self.journal.append(self.cluster, kind, data)
        return self.record()

    def others(self):
        """The records of the run's other clusters, by name."""
        names = [n for n in self.journal.subjects() if n != self.cluster]
        return {name: fold(self.journal.entries(name)) for name in names}


def outcome(record):
    """What a module returns of a record, for the role to branch on: ``decision`` (so far, or
    None), ``action`` (after the decision: none, rollback, pause, continue; or None),
    ``passed`` (every gate so far passed) and ``failed_gates`` (their names)."""
    bad = failed(record.get("gates") or [])
    return {
        "decision": record.get("decision"),
        "action": (record.get("change") or {}).get("action"),
        "passed": not bad,
        "failed_gates": [g["gate"] for g in bad],
    }


def records(bundle_dir, clusters):
    """The record of each cluster (``{}`` for one with no entry), by name."""
    journal = Journal(bundle_dir)
    return {name: fold(journal.entries(name)) for name in clusters}
