# Copyright: kaiops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What a failed KAI bind (the binder nil-data ConfigMap panic) leaves behind: one rule per kind.

``find(raw, now, ...)`` turns the reads of ``scan/client.py`` into findings, each classified
with the evidence that ties it to the panic or to an unrelated cause. Rules as data:
``FINDING_RULES`` lists, per set of candidate objects, the rules tried on each candidate in
order; the first that returns a finding wins. Each rule is a pure function
``rule(obj, context) -> finding or None``; ``Context`` holds what every rule may read (the
objects by key and UID, the GPU groups in use, the failed BindRequests by pod) and what earlier
findings established (the GPU groups and pods of failed binds). Pure: no I/O, the clock passed in.

Stale-state kinds only count objects older than ``min_age_s``: a reservation pod or ConfigMap is
legitimately unbound for the moment a bind takes.
"""

from ansible_collections.kaiops.runbooks.plugins.module_utils.k8s.objects import (
    age_s,
    condition,
    group_by,
    in_scope,
    is_bound,
    is_live,
    key,
    ref,
)
from ansible_collections.kaiops.runbooks.plugins.module_utils.kai.facts import (
    CM_SUFFIX,
    FRACTION_ANNOTATION,
    GPU_GROUP_LABEL,
    NIL_MAP_REASON,
    RESERVATION_NAMESPACE,
    RESERVE_INDEX_ANNOTATION,
    SHARED_CM_ANNOTATION,
    annotations,
    bound_gpu_groups,
    gpu_group,
    held_gpu_groups,
    labels,
    meta,
    on_sharing_path,
    sharing_configmap_pattern,
    sharing_configmap_role,
)

NOT_SERVED = {
    "bind_requests": "BindRequest API not served on this cluster: cannot find failed binds",
    "configmaps": "ConfigMaps could not be listed: cannot find orphan GPU-sharing ConfigMaps",
}
FORBIDDEN = {
    "bind_requests": "BindRequests may not be listed with these credentials (HTTP 403): "
    "cannot find failed binds",
    "configmaps": "ConfigMaps may not be listed with these credentials (HTTP 403): "
    "cannot find orphan GPU-sharing ConfigMaps",
}

# Classifications: how a finding relates to the binder panic.
NIL_MAP = "nil_map_panic"  # the panic's message is on the object itself
STALE = "stale_after_failed_bind"  # left behind by a failed bind (rollback skipped)
OTHER_BIND_ERROR = "other_bind_error"  # a bind failed, for another reason
UNRELATED = "unrelated_pending"  # Pending for resources: not this bug
UNDETERMINED = "undetermined"  # stale state with no failure on record to tie it to


def short(text, limit=240):
    text = " ".join(str(text or "").split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def count(items, field):
    out = {}
    for item in items:
        out[item[field]] = out.get(item[field], 0) + 1
    return out


def finding(kind, obj, classification, evidence, step=None, since=None, **extra):
    out = {
        "id": "%s:%s" % (kind, key(obj)),
        "kind": kind,
        "object": ref(obj),
        "classification": classification,
        "evidence": evidence,
        "step": step,
        "since": since or meta(obj).get("creationTimestamp"),
    }
    out.update(extra)
    return out


def _devices_read(pod, configmaps):
    """The device IDs in NVIDIA_VISIBLE_DEVICES of a fraction pod's capabilities ConfigMaps."""
    prefix = annotations(pod).get(SHARED_CM_ANNOTATION)
    if not prefix:
        return set()
    pattern, out = sharing_configmap_pattern(prefix), set()
    for cm in configmaps:
        name = meta(cm).get("name") or ""
        if meta(cm).get("namespace") != meta(pod).get("namespace") or not pattern.match(name):
            continue
        if sharing_configmap_role(name) == "capabilities":
            value = str((cm.get("data") or {}).get("NVIDIA_VISIBLE_DEVICES") or "")
            out.update(d.strip() for d in value.split(",") if d.strip())
    return out


def _devices_read_by_group(pods, configmaps, reservation_namespace, bound):
    """GPU group -> the device IDs its live bound pods (outside the reservation namespace) read;
    a pod's group is the one its successful BindRequest names (``gpu_group``)."""
    out = {}
    for pod in pods:
        group = gpu_group(pod, bound)
        if not group or not is_bound(pod) or not is_live(pod):
            continue
        if meta(pod).get("namespace") != reservation_namespace:
            out.setdefault(group, set()).update(_devices_read(pod, configmaps))
    return out


def _live_reservation_group(pod, reservation_namespace):
    """The GPU group of a live reservation pod, else None."""
    if meta(pod).get("namespace") != reservation_namespace or not is_live(pod):
        return None
    return labels(pod).get(GPU_GROUP_LABEL) or None


class Context:
    """What the rules read: the cluster's objects, indexed once, and earlier findings."""

    def __init__(self, raw, now, namespaces, reservation_namespace, min_age_s):
        access = raw.get("access") or {}
        self.now = now
        self.namespaces = list(namespaces or [])
        self.reservation_namespace = reservation_namespace
        self.min_age_s = min_age_s
        self.pods = raw.get("pods") or []
        self.configmaps = raw.get("configmaps") or []
        self.bind_requests = raw.get("bind_requests") or []
        self.notes = []
        for section in ("bind_requests", "configmaps"):
            if access.get(section) == "not_served":
                self.notes.append(NOT_SERVED[section])
            elif access.get(section) == "forbidden":
                self.notes.append(FORBIDDEN[section])
        # Why a failed bind cannot be on record, when the BindRequests could not be read.
        self.br_note = {
            "not_served": NOT_SERVED["bind_requests"],
            "forbidden": FORBIDDEN["bind_requests"],
        }.get(access.get("bind_requests"))
        self.pods_by_key = {key(p): p for p in self.pods}
        self.pods_by_uid = {meta(p).get("uid"): p for p in self.pods if meta(p).get("uid")}
        # GPU groups that a live, bound pod (not a reservation pod) still uses: by its label
        # and by its successful BindRequest, which differ when KAI left a stale label.
        bound = bound_gpu_groups(self.bind_requests)
        self.groups_in_use = set()
        for p in self.pods:
            if is_bound(p) and is_live(p) and meta(p).get("namespace") != reservation_namespace:
                self.groups_in_use |= held_gpu_groups(p, bound)
        self.failed_brs = [
            b for b in self.bind_requests if (b.get("status") or {}).get("phase") == "Failed"
        ]
        self.failed_by_pod = group_by(
            self.failed_brs,
            lambda br: "%s/%s" % (meta(br).get("namespace"), (br.get("spec") or {}).get("podName")),
        )
        # GPU group -> its live reservation pods, oldest first: KAI makes one per group (its
        # name is deterministic since v0.16.0); a second one is KAI-Scheduler #1673's state.
        self.reservations = group_by(
            sorted(self.pods, key=lambda p: (meta(p).get("creationTimestamp") or "", key(p))),
            lambda pod: _live_reservation_group(pod, reservation_namespace),
        )
        # GPU group -> the device IDs its live bound pods read: which of two reservation pods
        # of a group the work uses
        self.devices_read = _devices_read_by_group(
            self.pods, self.configmaps, reservation_namespace, bound
        )
        self.failed_groups = {}  # group -> classification of the failed bind that left it
        self.failed_pods = {}  # pod uid -> its failed_bind finding
        self.seen_configmaps = set()

    def old_enough(self, obj):
        age = age_s(obj, self.now)
        return age is not None and age >= self.min_age_s


# ---------------------------------------------------------------- candidates


def pending_pods(ctx):
    """Work that is pending: live, unbound pods outside the reservation namespace, in scope."""
    for pod in ctx.pods:
        ns = meta(pod).get("namespace")
        if ns == ctx.reservation_namespace or not in_scope(ns, ctx.namespaces):
            continue
        if is_bound(pod) or not is_live(pod):
            continue
        yield pod


def failed_bind_requests(ctx):
    for br in ctx.failed_brs:
        if in_scope(meta(br).get("namespace"), ctx.namespaces):
            yield br


def reservation_pods(ctx):
    for pod in ctx.pods:
        ns = meta(pod).get("namespace")
        if ns != ctx.reservation_namespace:
            continue
        if not in_scope(ns, ctx.namespaces) or not is_live(pod):
            continue
        yield pod


def sharing_configmaps(ctx):
    for cm in ctx.configmaps:
        if not in_scope(meta(cm).get("namespace"), ctx.namespaces):
            continue
        if key(cm) in ctx.seen_configmaps:
            continue
        yield cm


# ---------------------------------------------------------------- pending pods


def _pod_facts(pod, ctx):
    """What the three pending-pod rules share: the failure on record and its evidence."""
    fraction = FRACTION_ANNOTATION in annotations(pod)
    pod_bound = condition(pod, "PodBound")
    bind_failed = pod_bound is not None and pod_bound.get("status") == "False"
    brs = ctx.failed_by_pod.get(key(pod), [])
    scheduled = condition(pod, "PodScheduled")
    evidence = []
    if fraction:
        evidence.append(
            "annotation gpu-fraction=%s (GPU-sharing path)" % annotations(pod)[FRACTION_ANNOTATION]
        )
    if bind_failed:
        evidence.append(
            "condition PodBound=False reason %s since %s: %s"
            % (
                pod_bound.get("reason"),
                pod_bound.get("lastTransitionTime"),
                short(pod_bound.get("message")),
            )
        )
    for br in brs:
        status = br.get("status") or {}
        evidence.append(
            "BindRequest %s phase Failed (failedAttempts %s): %s"
            % (meta(br).get("name"), status.get("failedAttempts"), short(status.get("reason")))
        )
    texts = [str((b.get("status") or {}).get("reason") or "") for b in brs]
    if bind_failed:
        texts.append(str(pod_bound.get("message") or ""))
    unschedulable = (
        scheduled is not None
        and scheduled.get("status") == "False"
        and scheduled.get("reason") == "Unschedulable"
    )
    return {
        "fraction": fraction,
        "group": labels(pod).get(GPU_GROUP_LABEL),
        "pod_bound": pod_bound,
        "bind_failed": bind_failed,
        "brs": brs,
        "scheduled": scheduled,
        "unschedulable": unschedulable,
        "nil_map": any(NIL_MAP_REASON in t for t in texts),
        "evidence": evidence,
    }


def rule_failed_bind(pod, ctx):
    """A pod on the GPU-sharing path whose bind failed (PodBound=False or a failed BindRequest)."""
    facts = _pod_facts(pod, ctx)
    if not (facts["fraction"] and (facts["bind_failed"] or facts["brs"])):
        return None
    classification = NIL_MAP if facts["nil_map"] else OTHER_BIND_ERROR
    evidence = facts["evidence"]
    evidence.append(
        "'%s' in the failure: the binder panic on a ConfigMap with nil data" % NIL_MAP_REASON
        if facts["nil_map"]
        else "the failure does not say '%s': a bind error, not shown to be this panic"
        % NIL_MAP_REASON
    )
    group, brs = facts["group"], facts["brs"]
    if group:
        evidence.append("label %s=%s kept after the failed bind" % (GPU_GROUP_LABEL, group))
        ctx.failed_groups[group] = classification
    found = finding(
        "failed_bind",
        pod,
        classification,
        evidence,
        since=(facts["pod_bound"] or {}).get("lastTransitionTime")
        or (meta(brs[0]).get("creationTimestamp") if brs else None),
        gpu_group=group,
        bind_requests=[meta(b).get("name") for b in brs],
    )
    ctx.failed_pods[found["object"]["uid"]] = found
    return found


def rule_unbound_group_pod(pod, ctx):
    """A pod with a GPU-group label and no node: what a bind that neither completed nor rolled
    back leaves. Young schedulable pods are skipped (a bind may be under way)."""
    facts = _pod_facts(pod, ctx)
    group = facts["group"]
    if not group:
        return None
    unschedulable, scheduled = facts["unschedulable"], facts["scheduled"]
    old_enough = (age_s(pod, ctx.now) or 0) >= ctx.min_age_s
    if not old_enough and not unschedulable:
        return None
    evidence = facts["evidence"]
    evidence.append(
        "label %s=%s but no nodeName: a bind that completed or was rolled back "
        "leaves neither" % (GPU_GROUP_LABEL, group)
    )
    if unschedulable:
        classification = UNRELATED
        evidence.append(
            "condition PodScheduled=False reason Unschedulable: %s - Pending for "
            "resources, not the binder panic" % short(scheduled.get("message"))
        )
    else:
        classification = UNDETERMINED
        evidence.append(
            ctx.br_note + " for this pod"
            if ctx.br_note
            else "no failed BindRequest and no PodBound condition for this pod: "
            "cannot tie it to the binder panic"
        )
    return finding("unbound_group_pod", pod, classification, evidence, gpu_group=group)


def rule_pending_unschedulable(pod, ctx):
    """A fractional pod Pending for resources: no bind was attempted, not this failure."""
    facts = _pod_facts(pod, ctx)
    if facts["group"] or not (facts["fraction"] and facts["unschedulable"]):
        return None
    scheduled = facts["scheduled"]
    evidence = facts["evidence"]
    evidence.append(
        "condition PodScheduled=False reason Unschedulable since %s: %s - Pending for "
        "resources, not the binder panic (no bind was attempted)"
        % (scheduled.get("lastTransitionTime"), short(scheduled.get("message")))
    )
    return finding(
        "pending_unschedulable",
        pod,
        UNRELATED,
        evidence,
        since=scheduled.get("lastTransitionTime"),
    )


# ---------------------------------------------------------------- failed BindRequests


def rule_failed_bindrequest(br, ctx):
    """A BindRequest in phase Failed, the panic's message on it or not."""
    data = meta(br)
    spec, status = br.get("spec") or {}, br.get("status") or {}
    reason = str(status.get("reason") or "")
    pod = ctx.pods_by_key.get("%s/%s" % (data.get("namespace"), spec.get("podName")))
    evidence = [
        "phase Failed, failedAttempts %s, reason: %s"
        % (status.get("failedAttempts"), short(reason) or "(none)"),
        "pod %s: %s"
        % (
            spec.get("podName"),
            "gone"
            if pod is None
            else ("bound to " + pod["spec"]["nodeName"])
            if is_bound(pod)
            else "not bound",
        ),
    ]
    if spec.get("selectedGPUGroups"):
        evidence.append("selectedGPUGroups %s" % ",".join(spec["selectedGPUGroups"]))
    classification = NIL_MAP if NIL_MAP_REASON in reason else OTHER_BIND_ERROR
    for group in spec.get("selectedGPUGroups") or []:
        ctx.failed_groups.setdefault(group, classification)
    return finding(
        "failed_bindrequest",
        br,
        classification,
        evidence,
        step="delete_failed_bindrequests",
        pod=spec.get("podName"),
    )


# ---------------------------------------------------------------- reservation pods


def _extra_reservation_pods(held, read):
    """The reservation pods of one GPU group (oldest first) that are one too many: those whose
    device (``run.ai/reserve_for_gpu_index``) no bound pod of the group reads, when the group's
    pods read another one's; else every one but the oldest."""
    unread = [p for p in held if read and annotations(p).get(RESERVE_INDEX_ANNOTATION) not in read]
    if unread and len(unread) < len(held):
        return unread, True
    return held[1:], False


def rule_duplicate_reservation_pod(pod, ctx):
    """A reservation pod of a GPU group that another live one also holds (#1673): found whatever
    its age, since no bind ever needs two. Step delete_duplicate_reservation_pods deletes it only
    when the group's bound pods read another one's device and it is older than min_age_s; which
    one the group uses otherwise is for a person to decide."""
    group = labels(pod).get(GPU_GROUP_LABEL)
    held = ctx.reservations.get(group) or []
    if len(held) < 2:
        return None
    read = ctx.devices_read.get(group) or set()
    extra, known = _extra_reservation_pods(held, read)
    if key(pod) not in [key(p) for p in extra]:
        return None
    device = annotations(pod).get(RESERVE_INDEX_ANNOTATION)
    evidence = [
        "label %s=%s; %d live reservation pods hold this group: %s"
        % (GPU_GROUP_LABEL, group, len(held), ", ".join(meta(p).get("name") for p in held)),
        "KAI makes one reservation pod per GPU group (deterministic names since v0.16.0); two "
        "is KAI-Scheduler #1673's state, where the group's fraction pods stay Pending",
    ]
    # a pod with no device yet may still be in its bind's allocation: never deleted
    deletable = known and bool(device) and ctx.old_enough(pod)
    if known:
        evidence.append(
            "it reserves device %s; the group's bound pods read only %s (their capabilities "
            "ConfigMaps): deleting it frees a GPU and moves no work"
            % (device, ", ".join(sorted(read)))
        )
        if not device:
            evidence.append("no %s yet: it may still be allocating" % RESERVE_INDEX_ANNOTATION)
        elif not deletable:
            evidence.append("younger than %ds (kai_recovery_min_age_s)" % ctx.min_age_s)
    else:
        evidence.append(
            "which device the group's work reads is not known (no bound pod of the group reads "
            "one, or they read every one's): a person decides which pod goes"
        )
    return finding(
        "duplicate_reservation_pod",
        pod,
        UNDETERMINED,
        evidence,
        step="delete_duplicate_reservation_pods" if deletable else None,
        gpu_group=group,
        first=key(held[0]),
        device=device,
        devices_read=sorted(read),
        deletable=deletable,
    )


def rule_stale_reservation_pod(pod, ctx):
    """A reservation pod whose GPU group no live bound pod uses."""
    group = labels(pod).get(GPU_GROUP_LABEL)
    if not group or group in ctx.groups_in_use:
        return None
    age = age_s(pod, ctx.now)
    if age is None or age < ctx.min_age_s:
        return None
    evidence = [
        "label %s=%s; no live bound pod carries this group or was bound in it"
        % (GPU_GROUP_LABEL, group),
        "age %ds >= %ds (kai_recovery_min_age_s)" % (int(age), ctx.min_age_s),
    ]
    if RESERVE_INDEX_ANNOTATION in annotations(pod):
        evidence.append(
            "annotation %s=%s"
            % (RESERVE_INDEX_ANNOTATION, annotations(pod)[RESERVE_INDEX_ANNOTATION])
        )
    if group in ctx.failed_groups:
        classification = STALE
        evidence.append(
            "the group of a failed bind (%s): its rollback was skipped" % ctx.failed_groups[group]
        )
    else:
        classification = UNDETERMINED
        evidence.append(
            (ctx.br_note + " for this group")
            if ctx.br_note
            else "no failed bind on record for this group"
        )
    return finding(
        "stale_reservation_pod",
        pod,
        classification,
        evidence,
        step="delete_stale_reservation_pods",
        gpu_group=group,
    )


# ---------------------------------------------------------------- GPU-sharing ConfigMaps


def _configmap_owner(cm, ctx):
    """(owner pod or None, annotation prefix that names the ConfigMap or None, owners, found)."""
    data = meta(cm)
    owners = data.get("ownerReferences") or []
    single_pod_owner = len(owners) == 1 and owners[0].get("kind") == "Pod"
    for pod in ctx.pods:
        prefix = annotations(pod).get(SHARED_CM_ANNOTATION)
        if (
            prefix
            and meta(pod).get("namespace") == data.get("namespace")
            and sharing_configmap_pattern(prefix).match(data.get("name") or "")
        ):
            return pod, prefix, owners, True
    if single_pod_owner and CM_SUFFIX.match(data.get("name") or ""):
        return ctx.pods_by_uid.get(owners[0].get("uid")), None, owners, True
    return None, None, owners, False


def _ownership_evidence(owner, named_by, owners):
    """How the ConfigMap is tied to its pod, and that the pod is gone or not bound."""
    single_pod_owner = len(owners) == 1 and owners[0].get("kind") == "Pod"
    evidence = []
    if named_by:
        evidence.append(
            "named after pod %s's annotation %s=%s"
            % (meta(owner).get("name"), SHARED_CM_ANNOTATION, named_by)
        )
    if single_pod_owner:
        evidence.append(
            "single owner: Pod %s (uid %s)" % (owners[0].get("name"), owners[0].get("uid"))
        )
    if owner is None:
        evidence.append("owner pod %s is gone" % owners[0].get("name"))
    else:
        evidence.append("owner pod %s is not bound" % meta(owner).get("name"))
    return evidence


def _panic_precondition(role, has_data, owner, owners):
    """The capabilities ConfigMap with no data, owned by exactly its (existing) pod."""
    single_pod_owner = len(owners) == 1 and owners[0].get("kind") == "Pod"
    return (
        role == "capabilities"
        and not has_data
        and single_pod_owner
        and owner is not None
        and owners[0].get("uid") == meta(owner).get("uid")
    )


def _orphan_classification(owner, trigger, ctx):
    """(classification, evidence): from its pod's failed bind, when one is on record."""
    owner_failure = ctx.failed_pods.get(meta(owner).get("uid")) if owner is not None else None
    if owner_failure is not None:
        classification = (
            NIL_MAP if owner_failure["classification"] == NIL_MAP and trigger else STALE
        )
        return classification, "its pod's bind failed (%s)" % owner_failure["classification"]
    return UNDETERMINED, (
        (ctx.br_note + " for its pod") if ctx.br_note else "no failed bind on record for its pod"
    )


def rule_orphan_configmap(cm, ctx):
    """A GPU-sharing ConfigMap whose owner pod is gone or not bound."""
    data = meta(cm)
    owner, named_by, owners, found = _configmap_owner(cm, ctx)
    if not found:
        return None
    if named_by is None and owner is not None and not on_sharing_path(owner):
        return None  # a pod-owned ConfigMap of a pod that does not share a GPU
    if not ctx.old_enough(cm):
        return None
    if owner is not None and is_bound(owner) and is_live(owner):
        return None
    ctx.seen_configmaps.add(key(cm))
    has_data = bool(cm.get("data")) or bool(cm.get("binaryData"))
    evidence = _ownership_evidence(owner, named_by, owners)
    role = sharing_configmap_role(data.get("name"))
    trigger = _panic_precondition(role, has_data, owner, owners)
    evidence.append("%s ConfigMap, %s" % (role, "with data" if has_data else "no data"))
    if trigger:
        evidence.append(
            "no data and owned by exactly its pod: the precondition of the panic - an affected "
            "binder fails on this pod again until this ConfigMap changes"
        )
    classification, why = _orphan_classification(owner, trigger, ctx)
    evidence.append(why)
    return finding(
        "orphan_configmap",
        cm,
        classification,
        evidence,
        step="delete_orphan_configmaps",
        role=role,
        has_data=has_data,
        trigger_ready=trigger,
        owner_pod=meta(owner).get("name") if owner is not None else owners[0].get("name"),
        # the pod still waits for this ConfigMap: what step delete_dataless_configmaps acts on
        owner_pending=owner is not None and is_live(owner) and not is_bound(owner),
    )


# Rules as data, in the order they run: (candidates, rules tried on each, first finding wins).
# Order matters: the reservation-pod and ConfigMap rules read the failed binds found before.
FINDING_RULES = (
    (pending_pods, (rule_failed_bind, rule_unbound_group_pod, rule_pending_unschedulable)),
    (failed_bind_requests, (rule_failed_bindrequest,)),
    (reservation_pods, (rule_duplicate_reservation_pod, rule_stale_reservation_pod)),
    (sharing_configmaps, (rule_orphan_configmap,)),
)


def find(raw, now, namespaces=(), reservation_namespace=RESERVATION_NAMESPACE, min_age_s=300):
    """Findings from collect()'s reads: {findings, notes, summary}."""
    ctx = Context(raw, now, namespaces, reservation_namespace, min_age_s)
    findings = []
    for candidates, rules in FINDING_RULES:
        for obj in candidates(ctx):
            for rule in rules:
                found = rule(obj, ctx)
                if found is not None:
                    findings.append(found)
                    break
    summary = {
        "findings": len(findings),
        "by_kind": count(findings, "kind"),
        "by_classification": count(findings, "classification"),
    }
    return {"findings": findings, "notes": ctx.notes, "summary": summary}
