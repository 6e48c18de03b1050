# Copyright: kaiops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Waiter of gpu_access: follow one case's pods through its stages, keeping what each showed.

A stage is a condition over one observation of the case (``records.case_snapshot``); the
conditions are pure functions in ``CONDITIONS`` (rules as data). ``watch`` reads until a
stage's condition holds or the case's deadline passes, then keeps that observation (with when
it was seen, how many reads it took and whether it held) and goes on to the next stage. Reaching
the deadline is not an error here: the rules judge what was seen. The clock, the wall clock and
the sleep are passed in.
"""

from ansible_collections.kaiops.runbooks.plugins.module_utils.errors import (
    STATUS_INVALID,
    KaiopsError,
)
from ansible_collections.kaiops.runbooks.plugins.module_utils.gpu_access.records import (
    ENDED,
    held_reasons,
)


def _pods(snapshot):
    return list((snapshot.get("pods") or {}).values())


def ended(snapshot, reasons=None):
    """Every pod of the case has ended (Succeeded or Failed)."""
    return all(p["phase"] in ENDED for p in _pods(snapshot))


def running(snapshot, reasons=None):
    """Every pod of the case runs or has ended: the moment KAI's objects for it all exist."""
    return all(p["phase"] in ("Running",) + ENDED for p in _pods(snapshot))


def decided(snapshot, reasons=None):
    """Every pod either got a node or its PodGroup carries the reason KAI holds it back with:
    the specific reason ``reasons`` names for the pod (from the condition's reasons[] or its
    message, never its reason Unschedulable), any condition for a pod it does not name."""
    groups = snapshot.get("pod_groups") or {}
    for name, state in (snapshot.get("pods") or {}).items():
        if state["node"]:
            continue
        group = groups.get(name) or {}
        wanted = (reasons or {}).get(name)
        if not group.get("reasons") or (wanted and wanted not in held_reasons(group)):
            return False
    return True


def bound_ended(snapshot, reasons=None):
    """Every pod that got a node has ended (the ones held back are left as they are)."""
    return all(p["phase"] in ENDED for p in _pods(snapshot) if p["node"])


def all_running(snapshot):
    """True when the case has pods and every one of them is Running in this observation."""
    pods = _pods(snapshot)
    return bool(pods) and all(p["phase"] == "Running" for p in pods)


CONDITIONS = {
    "running": running,
    "ended": ended,
    "decided": decided,
    "bound_ended": bound_ended,
}


def check_stages(stages):
    """Refuse unknown stages (before any read)."""
    unknown = [s for s in stages if s not in CONDITIONS]
    if unknown:
        raise KaiopsError(
            "Failed to watch the case: unknown stages %s (known: %s)"
            % (unknown, ", ".join(sorted(CONDITIONS))),
            status=STATUS_INVALID,
        )


def watch(read, stages, timeout_s, poll_s, clock, now, sleep, reasons=None):
    """One observation per stage, each taken when its condition held or at the deadline.

    ``read()`` returns an observation; ``clock()`` is monotonic seconds, ``now()`` an RFC 3339
    UTC string, ``sleep(s)`` waits; ``reasons`` ({pod: KAI reason}) is what ``decided`` waits
    for. Also records, in every observation, the first time all the
    case's pods were seen Running together (``all_running_seen_at``), or None.
    """
    check_stages(stages)
    started = clock()
    deadline = started + timeout_s
    together = None
    out = []
    for stage in stages:
        polls = 0
        while True:
            snapshot = read()
            polls += 1
            seen_at = now()
            if together is None and all_running(snapshot):
                together = seen_at
            met = bool(CONDITIONS[stage](snapshot, reasons))
            if met or clock() >= deadline:
                break
            sleep(max(0.0, min(poll_s, deadline - clock())))
        snapshot.update(
            {
                "stage": stage,
                "met": met,
                "seen_at": seen_at,
                "elapsed_s": round(clock() - started, 3),
                "polls": polls,
                "all_running": all_running(snapshot),
                "all_running_seen_at": together,
            }
        )
        out.append(snapshot)
    return out
