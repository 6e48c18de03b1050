# Copyright: kaiops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Service layer of reproduce: pure rules over recorded watches. No I/O.

Observations are what the watches saw (kept apart); assertions are the declared
expectation checked against them. A bind is a pod with a node: KAI's binder sets
PodBound=True and emits a Normal Bound event on pods whose bind keeps failing
(kai-contract.md §12), so neither is ever counted as a bind. A pod's history, its
BindRequest attempts and latencies are read by ``probes/watches.py``, which the rollout's
verification reads its probes by too.
"""

import calendar
import json
import re
import time

from ansible_collections.kaiops.runbooks.plugins.module_utils.k8s.objects import condition
from ansible_collections.kaiops.runbooks.plugins.module_utils.probes.cases import (
    CAPABILITY_KEYS,
    NIL_MAP,
)
from ansible_collections.kaiops.runbooks.plugins.module_utils.probes.watches import (
    attempts,
    latency,
    pod_history,
)


def _meta(obj):
    return obj.get("metadata") or {}


_LOG_LINE = re.compile(r"^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(\.\d+)?Z (.*)$")


def log_lines(text):
    """[(wall time, message)] of a log read with timestamps=true (the node's clock); lines
    without a timestamp are skipped."""
    out = []
    for line in (text or "").splitlines():
        m = _LOG_LINE.match(line)
        if not m:
            continue
        wall = calendar.timegm(time.strptime(m.group(1), "%Y-%m-%dT%H:%M:%S"))
        out.append((wall + float(m.group(2) or 0), m.group(3)))
    return out


def _log_text(message):
    """A structured (JSON) log line as its message and error; any other line as it is."""
    try:
        entry = json.loads(message)
    except ValueError:
        return message
    if not isinstance(entry, dict) or "msg" not in entry:
        return message
    return "%s%s" % (entry["msg"], ": %s" % entry["error"] if entry.get("error") else "")


def log_steps(text, t0_wall, source, mentions=None, limit=20):
    """Timeline steps from a log: each line (naming the object ``mentions`` when given, as a
    whole name) at its time after ``t0_wall``, marked with its source and the node's clock."""
    named = re.compile(r"(?<![\w.-])%s(?![\w.-])" % re.escape(mentions)) if mentions else None
    steps = []
    for wall, message in log_lines(text):
        if named and not named.search(message):
            continue
        step = {
            "s": round(wall - t0_wall, 3),
            # one line: a panic's message carries its stack trace
            "what": "%s: %s" % (source, " ".join(_log_text(message).split())[:240]),
            "clock": "node",
        }
        if step["s"] < 0:
            step["s"] = None  # before t0 by another clock than t0's: not a measurement
            step["note"] = "before the submission by the node's clock; not timed"
        steps.append(step)
    return steps[:limit]


def timed_step(t, t0, what, initial=False):
    """A timeline step at ``t`` seconds after ``t0`` (one clock, ``elapsed``); without a time,
    and a note saying why, when it is no measurement."""
    s = elapsed(t, t0, initial)
    if s is not None:
        return {"s": s, "what": what}
    return {
        "s": None,
        "what": what,
        "note": "already so when the watch started (before the window opened); not timed"
        if initial
        else "before the submission stamp; not timed",
    }


def step_order(step):
    """Sort key of timeline steps: untimed steps (before the window) first, then by time."""
    return (step["s"] is not None, step["s"] or 0.0)


def elapsed(t, t0, initial=False):
    """Seconds from ``t0`` to ``t``, both the controller's monotonic clock (the watches' records
    and the submission stamp), or None: for a state the watch's starting LIST already showed
    (reached before the watch, at no known time) and for a time before ``t0``, which is no
    measurement of anything after it."""
    if t is None or t0 is None or initial or t < t0:
        return None
    return round(t - t0, 3)


def _configmap_after(workload):
    """The capabilities ConfigMap as read after the case: keys, data and owners."""
    cms_after = dict((_meta(o).get("name"), o) for o in workload.get("configmaps_after") or [])
    capabilities = cms_after.get(workload.get("configmap_name")) or {}
    return {
        "exists": bool(capabilities),
        "has_data": "data" in capabilities,
        "keys": sorted((capabilities.get("data") or {}).keys()),
        "data": capabilities.get("data"),
        "owners": [o.get("uid") for o in _meta(capabilities).get("ownerReferences") or []],
    }


def _timings(hist, submitted):
    """Seconds from submission to bound, running and completed, and why any is not timed."""
    timing_notes = []
    out = {}
    for key in ("bound", "running", "succeeded"):
        t = hist[key]
        value = elapsed(t, submitted, key in hist["initial"])
        if t is not None and value is None:
            timing_notes.append(
                "%s: already so when the watch started (before the window opened); not timed" % key
                if key in hist["initial"]
                else "%s: seen %.3f s before the submission stamp; not timed" % (key, submitted - t)
            )
        out[key] = value
    return out, timing_notes


def _failed_before(attempt, submitted):
    """Whether an attempt failed before the submission stamp (the window's opening)."""
    failed = attempt["failed_at"]
    return failed is not None and submitted is not None and failed < submitted


def workload_observation(records, workload):
    """One workload's outcome, from the watches; no judgement."""
    name = workload["name"]
    hist = pod_history(records["pods"], name)
    tries = attempts(records["bindrequests"], name)
    submitted = workload.get("submitted_t")
    last = hist["last"] or {}
    since, timing_notes = _timings(hist, submitted)
    return {
        "name": name,
        "uid": _meta(last).get("uid") or workload.get("uid"),
        "configmap": workload.get("configmap_name"),
        "fixture": workload.get("fixture"),
        "stored_before": workload.get("stored"),
        "configmap_after": _configmap_after(workload),
        "node": (last.get("spec") or {}).get("nodeName"),
        "phase": (last.get("status") or {}).get("phase"),
        "gpu_group": (_meta(last).get("labels") or {}).get("runai-gpu-group"),
        "received_resource_type": (_meta(last).get("annotations") or {}).get(
            "received-resource-type"
        ),
        "pod_bound_condition": (condition(last, "PodBound") or {}).get("status"),
        "submit_to_bound_s": since["bound"],
        "submit_to_running_s": since["running"],
        "submit_to_completed_s": since["succeeded"],
        # bound before the LIST, or watched binding before the window (during a switch of build)
        "bound_before_window": "bound" in hist["initial"]
        or (hist["bound"] is not None and submitted is not None and hist["bound"] < submitted),
        # the pod as the watches saw it: never (gone before the window opened), or deleted in it
        "seen": hist["last"] is not None,
        "deleted": hist["deleted"] is not None,
        "completed": hist["succeeded"] is not None,
        "attempts": [
            dict(
                a,
                since_submit_s=elapsed(a["first_seen"], submitted, "first_seen" in a["initial"]),
                before_window=_failed_before(a, submitted),
            )
            for a in tries
        ],
        # a failure before the window is the build's before it (recovery/observe watched the
        # switch): recorded with the attempts, counted apart
        "failed_attempts": sum(
            1 for a in tries if a["failed_at"] is not None and not _failed_before(a, submitted)
        ),
        "failed_attempts_before_window": sum(1 for a in tries if _failed_before(a, submitted)),
        "events": workload.get("events") or {},
        "timing_notes": timing_notes,
    }


def check(name, ok, figure, expected):
    """One assertion of a case (the runner adds the window's and the switch's)."""
    return {
        "name": name,
        "result": "pass" if ok else "fail",
        "figure": figure,
        "expected": expected,
    }


def _reproduces_checks(w):
    """An exposed build in an edge case: the nil-map failure, repeated, and no node."""
    reasons = [a["reason"] or "" for a in w["attempts"] if a["failed_at"] is not None]
    nil = [r for r in reasons if NIL_MAP in r]
    return [
        check(
            "%s: bind failed with the nil-map reason" % w["name"],
            bool(nil),
            (nil or reasons or ["no failed attempt"])[0],
            "a Failed BindRequest, reason contains '%s'" % NIL_MAP,
        ),
        check(
            "%s: failure repeats on a retry" % w["name"],
            len(nil) >= 2,
            "%d failed attempts" % len(nil),
            ">= 2 failed attempts with that reason",
        ),
        check(
            "%s: pod has no node" % w["name"],
            not w["node"],
            w["node"] or "none",
            "no node (PodBound and Bound events are not binds)",
        ),
    ]


def _creation_checks(w, cm, extra):
    """The creation case: the ConfigMap KAI made is owned by the pod; a probe completed."""
    out = [
        check(
            "%s: ConfigMap owned by the pod" % w["name"],
            cm["owners"] == [w["uid"]],
            cm["owners"],
            [w["uid"]],
        )
    ]
    if extra.get("probe"):
        out.append(
            check("%s: probe completed" % w["name"], w["completed"], w["phase"], "Succeeded")
        )
    return out


def _binds_checks(case, w, extra):
    """A build expected to bind: a node, the capabilities keys, and the case's own checks."""
    cm = w["configmap_after"]
    out = [
        check(
            "%s: pod bound (has a node)" % w["name"],
            bool(w["node"]),
            w["node"] or "none",
            "a node within the window",
        ),
        check(
            "%s: capabilities ConfigMap holds the three keys" % w["name"],
            set(CAPABILITY_KEYS) <= set(cm["keys"]),
            ",".join(cm["keys"]) or "none",
            ",".join(CAPABILITY_KEYS),
        ),
    ]
    if w.get("fixture") == "stale":
        kept = (cm.get("data") or {}).get("keep-me") == "1"
        out.append(
            check(
                "%s: unrelated key kept" % w["name"],
                kept,
                (cm.get("data") or {}).get("keep-me"),
                "keep-me=1",
            )
        )
    if case == "creation":
        out += _creation_checks(w, cm, extra)
    return out


def _repeat_checks(extra):
    """The repeat case: one GPU group, one reservation pod for it, none left after the rerun."""
    groups = extra.get("groups") or []
    stale = extra.get("stale_reservations_after_rerun")
    return [
        check(
            "pods share one GPU group",
            len(set(groups)) == 1 and len(groups) >= 2,
            groups,
            "one group",
        ),
        check(
            "one reservation pod for the group",
            extra.get("reservation_pods_for_group") == 1,
            extra.get("reservation_pods_for_group"),
            1,
        ),
        check("rerun leaves no stale reservation pod", stale == 0, stale, 0),
    ]


def assertions(case, expect, obs, extra):
    """The declared expectation checked against the observations of one case."""
    out = []
    restarts = extra.get("binder_restarts_delta")
    out.append(check("binder_not_restarted", restarts == 0, restarts, "0 restarts during the case"))
    for w in obs:
        if expect == "reproduces":
            out += _reproduces_checks(w)
        else:
            out += _binds_checks(case, w, extra)
    if case == "repeat":
        out += _repeat_checks(extra)
    # nil_data's variants_identical is an observation of the API server, not of KAI: it is
    # recorded in the case's extra, not a gate.
    return out


def verdict(checks):
    return "pass" if checks and all(c["result"] == "pass" for c in checks) else "fail"


def case_metrics(obs):
    submitted = len(obs)
    return {
        "submissions": submitted,
        "affected_submissions": sum(1 for w in obs if w["failed_attempts"]),
        "failed_attempts": sum(w["failed_attempts"] for w in obs),
        "submit_to_bound": latency([w["submit_to_bound_s"] for w in obs], submitted),
        "submit_to_running": latency([w["submit_to_running_s"] for w in obs], submitted),
        "completion": {
            "completed": sum(1 for w in obs if w["completed"]),
            "of": submitted,
        },
        "failures_by_cause": _causes(obs),
    }


def _causes(obs):
    out = {}
    for w in obs:
        for a in w["attempts"]:
            if a["cause"] and not a.get("before_window"):
                out[a["cause"]] = out.get(a["cause"], 0) + 1
    return out


def stale_state(pods, configmaps, reservation_pods):
    """Reservation pods, group labels and GPU-sharing ConfigMaps not matched by running work.

    Each mismatch is listed with its evidence; nothing is removed.
    """
    live_groups = set()
    findings = []
    for pod in pods:
        meta, spec = _meta(pod), pod.get("spec") or {}
        group = (meta.get("labels") or {}).get("runai-gpu-group")
        if not group:
            continue
        if spec.get("nodeName") and (pod.get("status") or {}).get("phase") in (
            "Running",
            "Pending",
        ):
            live_groups.add(group)
        elif not spec.get("nodeName"):
            findings.append(
                {
                    "kind": "group_label_on_unbound_pod",
                    "object": "pod %s/%s" % (meta.get("namespace"), meta.get("name")),
                    "evidence": "label runai-gpu-group=%s, no node" % group,
                }
            )
    for res in reservation_pods:
        group = (_meta(res).get("labels") or {}).get("runai-gpu-group")
        if group not in live_groups:
            findings.append(
                {
                    "kind": "reservation_pod_without_running_work",
                    "object": "pod %s/%s" % (_meta(res).get("namespace"), _meta(res).get("name")),
                    "evidence": "group %s has no bound fraction pod; holds one nvidia.com/gpu on %s"
                    % (group, (res.get("spec") or {}).get("nodeName")),
                }
            )
    bound_owner = set(_meta(p).get("uid") for p in pods if (p.get("spec") or {}).get("nodeName"))
    for cm in configmaps:
        name = _meta(cm).get("name", "")
        if "-shared-gpu-" not in name:
            continue
        owners = [o.get("uid") for o in _meta(cm).get("ownerReferences") or []]
        if not set(owners) & bound_owner:
            findings.append(
                {
                    "kind": "gpu_sharing_configmap_of_unbound_pod",
                    "object": "configmap %s/%s" % (_meta(cm).get("namespace"), name),
                    "evidence": "data keys %s; owner not bound"
                    % sorted((cm.get("data") or {}).keys()),
                }
            )
    return findings
