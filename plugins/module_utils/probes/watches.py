# Copyright: kaiops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the watches of probe pods saw: a pod's history, every BindRequest attempt, latencies.

Pure rules over the records of ``probes/client.Recorder``, shared by reproduce (its cases'
observations, ``reproduce/service.py``) and the rollout (its verification's figures,
``rollout/probes.py``). A bind is a pod with a node: KAI's binder sets PodBound=True and emits a
Normal Bound event on pods whose bind keeps failing (kai-contract.md §12), so neither is
ever counted as a bind. Percentiles are nearest-rank, with work that never got there counted in
the denominator.
"""

import math

from ansible_collections.kaiops.runbooks.plugins.module_utils.probes.cases import NIL_MAP

CAUSES = (
    ("nil_map_panic", lambda r: NIL_MAP in r),
    ("configmap_cache_lag", lambda r: "not found" in r and "onfigMap" in r),
    (
        "capacity",
        lambda r: "insufficient" in r.lower() or "overlimit" in r.lower() or "no node" in r.lower(),
    ),
    ("admission", lambda r: "admission webhook" in r or "denied the request" in r),
)


def classify(reason):
    """The cause of a failed attempt, from its reason text."""
    for name, rule in CAUSES:
        if rule(reason or ""):
            return name
    return "other"


def _meta(obj):
    return obj.get("metadata") or {}


# A watch's starting LIST: what it shows happened before the watch began, at no known time.
INITIAL = "INITIAL"


def pod_history(records, name):
    """Times (controller monotonic) a pod was first seen bound, Running, Succeeded, Failed, and
    when it was deleted if the last record of it is its deletion (``last`` None: the watches
    never saw it).

    ``initial`` names the states the watch's starting LIST already showed: they were reached
    before the watch began, at a time no record gives."""
    out = {
        "bound": None,
        "running": None,
        "succeeded": None,
        "failed": None,
        "last": None,
        "deleted": None,
        "initial": [],
    }

    def seen(key, rec):
        if out[key] is None:
            out[key] = rec["t"]
            if rec["type"] == INITIAL:
                out["initial"].append(key)

    for rec in records:
        obj = rec["object"]
        if _meta(obj).get("name") != name:
            continue
        out["last"] = obj
        if rec["type"] == "DELETED":
            out["deleted"] = rec["t"]
            continue
        out["deleted"] = None  # made again under its name: the last one counts
        phase = (obj.get("status") or {}).get("phase")
        if (obj.get("spec") or {}).get("nodeName"):
            seen("bound", rec)
        for key, want in (("running", "Running"), ("succeeded", "Succeeded"), ("failed", "Failed")):
            if phase == want:
                seen(key, rec)
        if phase in ("Succeeded", "Failed"):
            seen("running", rec)  # it ran between two watch events; no earlier time is known
    return out


def _new_attempt(rec, uid, spec):
    entry = {
        "uid": uid,
        "first_seen": rec["t"],
        "first_seen_at": rec["at"],
        "initial": [],  # keys the watch's starting LIST already showed
        "phases": [],
        "reason": None,
        "failed_at": None,
        "succeeded_at": None,
        "deleted_at": None,
        "gpu_groups": spec.get("selectedGPUGroups") or [],
        "node": spec.get("selectedNode"),
    }
    if rec["type"] == INITIAL:
        entry["initial"].append("first_seen")
    return entry


def _observe(entry, rec, status):
    """One watch record of the BindRequest into its attempt: phases, reason, first times."""
    phase = status.get("phase")
    if phase and (not entry["phases"] or entry["phases"][-1] != phase):
        entry["phases"].append(phase)
    if status.get("reason"):
        entry["reason"] = status["reason"]
    at = {"Failed": "failed_at", "Succeeded": "succeeded_at"}.get(phase)
    if at and entry[at] is None:
        entry[at] = rec["t"]
        if rec["type"] == INITIAL:
            entry["initial"].append(at)
    if rec["type"] == "DELETED":
        entry["deleted_at"] = rec["t"]


def attempts(records, pod_name):
    """Every BindRequest of a pod, by UID: created, phases seen, reason, deleted."""
    seen = {}
    for rec in records:
        obj = rec["object"]
        spec = obj.get("spec") or {}
        if spec.get("podName") != pod_name:
            continue
        uid = _meta(obj).get("uid")
        if uid not in seen:
            seen[uid] = _new_attempt(rec, uid, spec)
        _observe(seen[uid], rec, obj.get("status") or {})
    out = list(seen.values())  # in the order first seen
    for entry in out:
        entry["cause"] = classify(entry["reason"]) if entry["failed_at"] is not None else None
    return out


def percentile(values, q):
    ordered = sorted(v for v in values if v is not None)
    if not ordered:
        return None
    # nearest rank: the smallest value with at least q % of the values at or below it
    rank = max(0, min(len(ordered) - 1, int(math.ceil(q / 100.0 * len(ordered))) - 1))
    return round(ordered[rank], 3)


def latency(samples, submitted):
    """p50/p95 with the count behind them; attempts that never got there stay counted."""
    values = [s for s in samples if s is not None]
    return {
        "count": len(values),
        "of": submitted,
        "missing": submitted - len(values),
        "p50_s": percentile(values, 50),
        "p95_s": percentile(values, 95),
        "max_s": round(max(values), 3) if values else None,
    }
