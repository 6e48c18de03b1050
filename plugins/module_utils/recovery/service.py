# Copyright: kaiops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Service layer of recovery: the observation window, the plan and the observation. Pure.

- ``start_latencies`` / ``derive_window``: the observation window from the cluster's own
  measured pod start latencies (rules as data, the clock passed in).
- ``plan``: which object each enabled step acts on; a disabled step plans nothing.
- ``observe``: after interventions, per finding recovered / not recovered / not applicable,
  with the timestamps read from the objects' conditions.

What is found is decided in ``scan/findings.py``; the interventions are applied, each
recorded first, by ``recovery/apply.py``.
"""

from ansible_collections.kaiops.runbooks.plugins.module_utils.errors import KaiopsError
from ansible_collections.kaiops.runbooks.plugins.module_utils.k8s.objects import (
    condition,
    in_scope,
    is_bound,
    is_live,
    iso,
    key,
    parse_time,
)
from ansible_collections.kaiops.runbooks.plugins.module_utils.kai.facts import (
    RESERVATION_NAMESPACE,
    bound_gpu_groups,
    held_gpu_groups,
    meta,
)
from ansible_collections.kaiops.runbooks.plugins.module_utils.scan.findings import (
    NIL_MAP,
    OTHER_BIND_ERROR,
    STALE,
    UNRELATED,
    count,
)

# The enabled-by-the-user steps and the finding kind each one acts on, in the order they apply.
STEPS = {
    "delete_failed_bindrequests": "failed_bindrequest",
    "delete_stale_reservation_pods": "stale_reservation_pod",
    # KAI-Scheduler #1673: the extra reservation pod of a GPU group holds a GPU no work uses, and
    # the node's next group cannot get one; only one whose device the group's pods do not read.
    "delete_duplicate_reservation_pods": "duplicate_reservation_pod",
    # The documented manual recovery (kai-contract.md section 12): deleting the data-less
    # capabilities ConfigMap of a pod still Pending lets even the pre-patch binder's next retry
    # create it with the three keys and bind the pod.
    "delete_dataless_configmaps": "orphan_configmap",
    "delete_orphan_configmaps": "orphan_configmap",
    "restart_binder": None,  # acts on the binder Deployment, for the bind failures found
}
# Which findings of its kind a step acts on, when not all of them.
STEP_SELECTS = {
    "delete_dataless_configmaps": lambda f: bool(f.get("trigger_ready") and f.get("owner_pending")),
    "delete_duplicate_reservation_pods": lambda f: bool(f.get("deletable")),
}
# What a selecting step says when it found nothing to act on.
STEP_NONE_FOUND = {
    "delete_dataless_configmaps": "no data-less capabilities ConfigMap of a pod still Pending "
    "found",
    "delete_duplicate_reservation_pods": "no duplicate reservation pod found whose device no bound "
    "pod of its group reads and that is older than kai_recovery_min_age_s",
}

# Finding kinds whose recovery is the pod getting bound.
POD_WORK_KINDS = ("failed_bind", "unbound_group_pod")


# ---------------------------------------------------------------- window (pure)

# The floor is above KAI's binder reservation timeout (--resource-reservation-allocation-timeout,
# 40 s by default): a retried bind can wait that out before it succeeds, and a shorter window
# then reports work "not recovered" that recovers a few seconds later.
WINDOW_RULE = {
    "multiplier": 3,
    "floor_s": 60,
    "cap_s": 900,
    "fallback_s": 120,
    "lookback_s": 86400,
    "max_samples": 200,
}


def pod_started(pod):
    """Earliest container start of a pod (running or terminated startedAt), or None."""
    times = []
    status = pod.get("status") or {}
    for cs in (status.get("containerStatuses") or []) + (status.get("initContainerStatuses") or []):
        state = cs.get("state") or {}
        for phase in ("running", "terminated"):
            started = parse_time((state.get(phase) or {}).get("startedAt"))
            if started:
                times.append(started)
    return min(times) if times else None


def start_latencies(pods, now, lookback_s, max_samples):
    """Start latency (creation to first container start) of the newest pods created within
    lookback_s; the newest max_samples."""
    samples = []
    for pod in pods:
        created = parse_time(meta(pod).get("creationTimestamp"))
        started = pod_started(pod)
        if not created or not started or started < created:
            continue
        if (now - created).total_seconds() > lookback_s:
            continue
        samples.append(
            {
                "namespace": meta(pod).get("namespace"),
                "name": meta(pod).get("name"),
                "created": iso(created),
                "started": iso(started),
                "latency_s": round((started - created).total_seconds(), 3),
            }
        )
    samples.sort(key=lambda s: s["created"], reverse=True)
    return samples[:max_samples]


def median(values):
    values = sorted(values)
    if not values:
        return None
    mid = len(values) // 2
    return values[mid] if len(values) % 2 else (values[mid - 1] + values[mid]) / 2.0


def derive_window(samples, rule=None, explicit_s=0):
    """The observation window: explicit when given, else clamp(multiplier x median start
    latency, floor, cap), else the fallback when nothing was measured."""
    rule = dict(WINDOW_RULE, **(rule or {}))
    med = median([s["latency_s"] for s in samples])
    measured = rule.get("baseline_s")
    if explicit_s:
        window, source = int(explicit_s), "kai_recovery_window_s (given)"
    elif measured:
        raw = rule["multiplier"] * float(measured)
        window = int(min(max(raw, rule["floor_s"]), rule["cap_s"]) + 0.999)
        source = "measured: %s x submit-to-Running %.3fs (%s), floor %ds, cap %ds" % (
            rule["multiplier"],
            float(measured),
            rule.get("baseline_source") or "kai_recovery_window_baseline_s",
            rule["floor_s"],
            rule["cap_s"],
        )
    elif med is None:
        window = int(rule["fallback_s"])
        source = (
            "fallback: no pod started in the last %ds to measure a normal start"
            % rule["lookback_s"]
        )
    else:
        raw = rule["multiplier"] * med
        window = int(min(max(raw, rule["floor_s"]), rule["cap_s"]) + 0.999)
        source = "measured: %s x median start latency %.1fs of %d pods, floor %ds, cap %ds" % (
            rule["multiplier"],
            med,
            len(samples),
            rule["floor_s"],
            rule["cap_s"],
        )
    return {
        "window_s": window,
        "source": source,
        "median_start_s": med,
        "samples": len(samples),
        "rule": rule,
        "newest_samples": samples[:10],
    }


# ---------------------------------------------------------------- plan (pure)


def _restart_binder(step, findings, binder, kai_namespace):
    """(planned, idle): a rolling restart of the binder for the bind failures found."""
    acted = [
        f["id"]
        for f in findings
        if f["kind"] in ("failed_bind", "failed_bindrequest", "orphan_configmap")
        and f["classification"] in (NIL_MAP, STALE, OTHER_BIND_ERROR)
    ]
    if not acted:
        return [], [{"step": step, "reason": "no failed bind found to retry"}]
    if not binder:
        reason = "no binder Deployment in namespace %s on this cluster" % kai_namespace
        return [], [{"step": step, "reason": reason}]
    return [
        {
            "step": step,
            "action": "restart",
            "target": dict(binder),
            "findings": acted,
            "why": "rolling restart of the binder, for %d bind failure(s) found: %s"
            % (len(acted), ", ".join(acted[:5])),
        }
    ], []


def _idle_reason(step, kind, findings, planned_uids, select):
    """Why a delete step enabled has nothing to act on."""
    taken = [
        f
        for f in findings
        if f["kind"] == kind and f["object"].get("uid") in planned_uids and select(f)
    ]
    if taken:
        return "what it would act on is acted on by an earlier step (%s)" % ", ".join(
            f["id"] for f in taken
        )
    if step in STEP_NONE_FOUND:
        return STEP_NONE_FOUND[step]
    return "nothing of kind %s found" % kind


def _delete_step(step, findings, namespaces, planned_uids):
    """(planned, idle): a delete of each object the step selects that no earlier step took;
    the uids planned are added to ``planned_uids``."""
    kind = STEPS[step]
    select = STEP_SELECTS.get(step, lambda f: True)
    targets = [
        f
        for f in findings
        if f["kind"] == kind
        and in_scope(f["object"]["namespace"], namespaces)
        and select(f)
        and f["object"].get("uid") not in planned_uids
    ]
    idle = []
    if not targets:
        reason = _idle_reason(step, kind, findings, planned_uids, select)
        idle.append({"step": step, "reason": reason})
    planned = []
    for finding in targets:
        planned_uids.add(finding["object"].get("uid"))
        planned.append(
            {
                "step": step,
                "action": "delete",
                "target": dict(finding["object"]),
                "findings": [finding["id"]],
                "why": "%s (%s): %s"
                % (finding["kind"], finding["classification"], "; ".join(finding["evidence"])),
            }
        )
    return planned, idle


def plan(findings, steps, binder=None, kai_namespace="kai-scheduler", namespaces=()):
    """Interventions for the enabled steps only, each on one object found; and why a step
    enabled has nothing to do. binder: ref() of the binder Deployment, or None."""
    planned, idle = [], []
    planned_uids = set()  # an object is acted on once, by the first step that selects it
    for step in steps:
        if step not in STEPS:
            raise KaiopsError(
                "Failed to plan recovery step %r: unknown step; use one of %s"
                % (step, sorted(STEPS)),
                status="invalid_input",
            )
    for step in [s for s in STEPS if s in steps]:
        if STEPS[step] is None:
            more, none = _restart_binder(step, findings, binder, kai_namespace)
        else:
            more, none = _delete_step(step, findings, namespaces, planned_uids)
        planned += more
        idle += none
    return planned, idle


# ---------------------------------------------------------------- observe (pure)


def _observed(raw, interventions, now, reservation_namespace):
    """What observe() reads once: objects by uid, pods by key, GPU groups in use by a bound
    live pod outside the reservation namespace, the objects this run deleted, the read time."""
    pods = raw.get("pods") or []
    by_uid = {}
    for kind_items in (pods, raw.get("configmaps") or [], raw.get("bind_requests") or []):
        for obj in kind_items:
            if meta(obj).get("uid"):
                by_uid[meta(obj)["uid"]] = obj
    groups_in_use = {}
    bound = bound_gpu_groups(raw.get("bind_requests"))
    for p in pods:
        if is_bound(p) and is_live(p) and meta(p).get("namespace") != reservation_namespace:
            for group in sorted(held_gpu_groups(p, bound)):
                groups_in_use.setdefault(group, p)
    deleted = {}
    for item in interventions or []:
        if item.get("outcome") == "deleted":
            deleted[(item.get("target") or {}).get("uid")] = item
    return {
        "pods": pods,
        "by_uid": by_uid,
        "pods_by_key": {key(p): p for p in pods},
        "groups_in_use": groups_in_use,
        "deleted": deleted,
        "read_at": iso(now),
    }


def _pod_work_outcome(finding, current, seen):
    return _pod_outcome(current)


def _bindrequest_outcome(finding, current, seen):
    """A failed BindRequest recovers with its pod; whether it is still there is said too."""
    obj = finding["object"]
    pod = seen["pods_by_key"].get("%s/%s" % (obj["namespace"], finding.get("pod")))
    verdict, at, why = _pod_outcome(pod)
    gone = "the BindRequest is gone" if current is None else "the BindRequest is still there"
    return verdict, at, "%s; %s" % (gone, why)


def _stale_reservation_outcome(finding, current, seen):
    user = seen["groups_in_use"].get(finding.get("gpu_group"))
    if current is None:
        return _gone(finding["object"], seen["deleted"], seen["read_at"])
    if user is not None:
        cond = condition(user, "PodScheduled") or {}
        why = "its GPU group is used again by bound pod %s" % key(user)
        return "recovered", cond.get("lastTransitionTime"), why
    return "not_recovered", None, "still there, its GPU group unused"


def _duplicate_reservation_outcome(finding, current, seen):
    """A second reservation pod of one GPU group: recovered only when it is gone (deleted by
    delete_duplicate_reservation_pods, a person or KAI)."""
    if current is None:
        return _gone(finding["object"], seen["deleted"], seen["read_at"])
    return "not_recovered", None, "still there: its GPU group has two reservation pods"


def _dataless_configmap_outcome(finding, current, owner):
    """A data-less ConfigMap deleted so the work could bind: it recovers when its pod is bound."""
    if owner is not None and is_bound(owner):
        verdict, at, why = _pod_outcome(owner)
        return verdict, at, "its pod %s is bound now: %s" % (finding.get("owner_pod"), why)
    if current is None:
        if owner is None:
            return "not_applicable", None, "deleted; its pod is gone"
        return (
            "not_recovered",
            None,
            "deleted; its pod %s is not bound yet" % finding.get("owner_pod"),
        )
    why = "still there with no data, its pod %s not bound" % finding.get("owner_pod")
    return "not_recovered", None, why


def _orphan_configmap_outcome(finding, current, seen):
    obj = finding["object"]
    owner = next(
        (
            p
            for p in seen["pods"]
            if meta(p).get("namespace") == obj["namespace"]
            and meta(p).get("name") == finding.get("owner_pod")
        ),
        None,
    )
    by_step = (seen["deleted"].get(obj.get("uid")) or {}).get("step")
    if by_step == "delete_dataless_configmaps":
        return _dataless_configmap_outcome(finding, current, owner)
    if current is None:
        return _gone(obj, seen["deleted"], seen["read_at"])
    if owner is not None and is_bound(owner) and is_live(owner):
        cond = condition(owner, "PodScheduled") or {}
        why = "its owner pod %s is bound now" % finding.get("owner_pod")
        return "recovered", cond.get("lastTransitionTime"), why
    return "not_recovered", None, "still there, its owner pod not bound"


# How a finding of each kind is judged after the interventions: (verdict, at, why).
OUTCOME_RULES = dict(
    {kind: _pod_work_outcome for kind in POD_WORK_KINDS},
    failed_bindrequest=_bindrequest_outcome,
    stale_reservation_pod=_stale_reservation_outcome,
    duplicate_reservation_pod=_duplicate_reservation_outcome,
    orphan_configmap=_orphan_configmap_outcome,
)


def _finding_outcome(finding, seen):
    current = seen["by_uid"].get(finding["object"].get("uid"))
    if finding["classification"] == UNRELATED:
        return (
            "not_applicable",
            None,
            "Pending for resources: not this failure, recovery does not act on it",
        )
    rule = OUTCOME_RULES.get(finding["kind"])
    if rule is None:  # pragma: no cover - every kind has a rule
        return "not_applicable", None, "unknown kind"
    return rule(finding, current, seen)


def observe(baseline, raw, interventions=(), now=None, reservation_namespace=RESERVATION_NAMESPACE):
    """Per baseline finding: recovered / not_recovered / not_applicable, with when and why."""
    seen = _observed(raw, interventions, now, reservation_namespace)
    read_at = seen["read_at"]
    outcomes = []
    for finding in baseline:
        verdict, at, why = _finding_outcome(finding, seen)
        outcomes.append(
            {"finding": finding["id"], "verdict": verdict, "at": at, "why": why, "read_at": read_at}
        )
    pending = [o for o in outcomes if o["verdict"] == "not_recovered"]
    return {
        "outcomes": outcomes,
        "pending": len(pending),
        "summary": count(outcomes, "verdict"),
        "read_at": read_at,
    }


def _pod_outcome(pod):
    if pod is None:
        return "not_applicable", None, "the pod no longer exists: no pending work left"
    if is_bound(pod):
        cond = condition(pod, "PodScheduled") or {}
        bound = condition(pod, "PodBound") or {}
        at = (
            bound.get("lastTransitionTime") if bound.get("status") == "True" else None
        ) or cond.get("lastTransitionTime")
        return (
            "recovered",
            at,
            "bound to %s (PodScheduled since %s)"
            % (
                pod["spec"]["nodeName"],
                cond.get("lastTransitionTime"),
            ),
        )
    cond = condition(pod, "PodBound") or condition(pod, "PodScheduled")
    state = (
        "%s=%s %s" % (cond.get("type"), cond.get("status"), cond.get("reason") or "")
        if cond
        else "no scheduling condition"
    )
    return "not_recovered", None, "still not bound (%s)" % state.strip()


def _gone(obj, deleted, read_at):
    item = deleted.get(obj.get("uid"))
    if item is not None:
        return (
            "recovered",
            item.get("deletion_timestamp") or item.get("applied_at"),
            "deleted by intervention %s (%s)" % (item.get("id"), item.get("step")),
        )
    return "recovered", read_at, "gone (removed by something other than this run)"
