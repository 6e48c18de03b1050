# Copyright: kaiops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Why is it Pending: one cause per Pending pod that KAI schedules, with the objects that prove it.

``classify(snapshot, now)`` reads a snapshot of what was read from the cluster (``SECTIONS``:
pods, PodGroups, queues, BindRequests, reservation pods, ConfigMaps, nodes, events, KAI's
components and their recent logs) and gives each unbound, live pod with ``schedulerName:
kai-scheduler`` exactly one cause. Shared: ``diagnose.yml`` reports it, ``recovery.yml`` shows it
next to its findings. Pure: no I/O, the clock passed in.

Rules as data: ``CAUSES`` lists the causes in the order they are tried; each rule is a pure
function ``rule(pod, facts, ctx) -> [proof] or None`` and the first that returns proofs wins. A
proof names the object and the field read (``{kind, namespace, name, field, value}``). No rule
matches: the cause is ``unknown``, with what was read attached, never a guess.

Why this order (a pod moves through admission, the pod grouper, the scheduler, the binder; the
first stage that holds it is its cause, since no later stage runs before it clears):

1. a scheduling gate: the pod itself says it is not ready; nothing runs for it, whatever KAI does;
2. the KAI component that owns the pod's stage is down or refused by the API server (401/403):
   while it is, whatever else is on record is stale and nothing changes;
3. no PodGroup: the pod grouper has not seen it, so no later stage has either;
4. a fraction the admission webhook did not mutate (GPU sharing off, or the webhook absent): the
   binder cannot bind it, whatever the scheduler decides;
5. a gang short of members: KAI does not look at a job before it is ready for scheduling
   (members present and ungated), so a queue or fit reason on it is not the one that holds it;
6. the queue missing, 7. the queue over its limit: KAI checks a job's queue before nodes;
8. no node or GPU group fits;
9. duplicate reservation pods, before 10. a failing reservation pod: duplicates holding the
   node's GPUs are why a new reservation pod is not admitted;
11. the nil-map bind failure before 12. any other bind failure: the specific reason first.
"""

import re

from ansible_collections.kaiops.runbooks.plugins.module_utils.k8s.objects import (
    age_s,
    condition,
    group_by,
    is_bound,
    is_live,
    iso,
    key,
    parse_time,
)
from ansible_collections.kaiops.runbooks.plugins.module_utils.kai.facts import (
    ADMISSION,
    FRACTION_ANNOTATION,
    GPU_GROUP_LABEL,
    KAI_CONFIG_NAME,
    NAMESPACE,
    NIL_MAP_REASON,
    POD_GROUP_ANNOTATION,
    RESERVATION_NAMESPACE,
    SCHEDULER_NAME,
    SHARED_CM_ANNOTATION,
    SHARING_ARG,
    UNSCHEDULABLE_ON_NODE_POOL,
    annotations,
    bool_flag,
    labels,
    meta,
    sharing_configmap_pattern,
    specific_reasons,
)
from ansible_collections.kaiops.runbooks.plugins.module_utils.vocabulary import whole

# What a snapshot holds: section -> what it is. A section not read (access not "ok") proves
# nothing: the rules that need it do not match, and ``notes`` says what could not be judged.
SECTIONS = {
    "pods": "every pod (v1 Pod, all namespaces)",
    "podgroups": "PodGroups (scheduling.run.ai/v2alpha2)",
    "queues": "Queues (scheduling.run.ai/v2)",
    "bindrequests": "BindRequests (scheduling.run.ai/v1alpha2)",
    "configmaps": "ConfigMaps of the namespaces holding Pending GPU-sharing pods",
    "nodes": "Nodes",
    "events": "Events of the namespaces holding Pending pods, KAI's and the reservation one",
    "deployments": "KAI's Deployments",
    "logs": "the recent log of KAI's scheduler, binder and pod grouper pods",
}
GPU = "nvidia.com/gpu"
MEMORY_ANNOTATION = "gpu-memory"
# Specific reasons of a PodGroup condition (kai-contract.md section 14, the stand-in's CONTRACT).
QUEUE_DOES_NOT_EXIST = "QueueDoesNotExist"
OVER_LIMIT = "OverLimit"
POD_SCHEDULING_ERRORS = "PodSchedulingErrors"
NO_FIT_TEXTS = ("Resources were not found", "no nodes with enough resources")
# A reservation pod the kubelet refused (section 6.3, the stand-in's admission-failure fault).
ADMISSION_ERROR = "UnexpectedAdmissionError"
RESERVATION_WAIT = "failed waiting for GPU reservation pod to allocate"
# A fraction the binder cannot bind because admission did not prepare it (sections 3.3, 6.4).
SHARING_TEXTS = ("no desired configmap name found", "while GPU sharing is disabled")
# A component the API server refuses: its events or its recent log lines.
REFUSED = re.compile(
    r"\bUnauthorized\b|\bForbidden\b|\bis forbidden\b|\"code\":\s*40[13]\b"
    r"|\b(?:HTTP|status|code)[ =:]+40[13]\b",
    re.IGNORECASE,
)
RECENT_S = 600  # events and log lines older than this say nothing about now
# The KAI component that acts on a pod at each stage, and how its Deployment is named.
STAGE_COMPONENT = {"grouping": "pod-grouper", "scheduling": "scheduler", "binding": "binder"}
COMPONENT_DEPLOYMENTS = {
    "pod-grouper": lambda n: n == "pod-grouper",
    "scheduler": lambda n: n.startswith("kai-scheduler-"),
    "binder": lambda n: n == "binder",
    "admission": lambda n: n == "admission",
}


def proof(kind, obj, field, value, namespace=None, name=None):
    """The object (or its kind/namespace/name) and the field read, with the value found."""
    data = meta(obj) if obj is not None else {}
    return {
        "kind": kind,
        "namespace": data.get("namespace") if obj is not None else namespace,
        "name": data.get("name") if obj is not None else name,
        "field": field,
        "value": _short(value),
    }


def _short(value, limit=300):
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return value
    text = " ".join(str("" if value is None else value).split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


# ---------------------------------------------------------------- the context rules read


def _event_time(event):
    return parse_time(
        event.get("lastTimestamp")
        or event.get("eventTime")
        or (event.get("series") or {}).get("lastObservedTime")
        or meta(event).get("creationTimestamp")
    )


def _reservation_group(pod):
    """The GPU group of a reservation pod not being deleted, else None."""
    if meta(pod).get("deletionTimestamp"):
        return None
    return labels(pod).get(GPU_GROUP_LABEL) or None


def _live_member_of(pod):
    """namespace/PodGroup of a live pod that names its PodGroup, else None."""
    group = annotations(pod).get(POD_GROUP_ANNOTATION)
    if group and is_live(pod):
        return "%s/%s" % (meta(pod).get("namespace"), group)
    return None


def _involved(event):
    involved = event.get("involvedObject") or {}
    return (involved.get("kind"), involved.get("namespace"), involved.get("name"))


class Context:
    """The snapshot, indexed once: what every rule may read."""

    def __init__(self, snapshot, now):
        self.now = now
        self.access = dict(snapshot.get("access") or {})
        self.kai_namespace = snapshot.get("kai_namespace") or NAMESPACE
        self.reservation_namespace = snapshot.get("reservation_namespace") or RESERVATION_NAMESPACE
        self.scheduler_name = snapshot.get("scheduler_name") or SCHEDULER_NAME
        self.sharing = snapshot.get("sharing") or {}
        self.pods = snapshot.get("pods") or []
        self.read = {s for s in SECTIONS if self._was_read(snapshot, s)}
        self.podgroups = {key(pg): pg for pg in snapshot.get("podgroups") or []}
        self.queues = {meta(q).get("name"): q for q in snapshot.get("queues") or []}
        self.nodes = snapshot.get("nodes") or []
        self.configmaps = snapshot.get("configmaps") or []
        self.brs_by_pod = group_by(
            snapshot.get("bindrequests"),
            lambda br: "%s/%s" % (meta(br).get("namespace"), (br.get("spec") or {}).get("podName")),
        )
        # GPU group -> its reservation pods, failed ones too: a failed one is a cause's proof
        self.reservations = group_by(snapshot.get("reservation_pods"), _reservation_group)
        # namespace/PodGroup -> its live pods
        self.members = group_by(self.pods, _live_member_of)
        # (kind, namespace, name) -> its events, newest first
        self.events = group_by(snapshot.get("events"), _involved)
        for found in self.events.values():
            found.sort(key=lambda e: iso(_event_time(e)) or "", reverse=True)
        self.components = component_states(snapshot, self)

    @staticmethod
    def _was_read(snapshot, section):
        access = snapshot.get("access") or {}
        if section in access:
            return access[section] == "ok"
        return section in snapshot or (section == "deployments" and "components" in snapshot)

    def recent(self, event):
        when = _event_time(event)
        return when is None or (self.now - when).total_seconds() <= RECENT_S

    def events_of(self, kind, namespace, name):
        return self.events.get((kind, namespace, name)) or []


# ---------------------------------------------------------------- KAI's components


def _component_deployment(name, deployments):
    match = COMPONENT_DEPLOYMENTS[name]
    return next((d for d in deployments if match(meta(d).get("name") or "")), None)


def _refusals(name, deployment, ctx, components):
    """Proofs that the API server refuses the component: its events and recent log lines."""
    prefix = meta(deployment).get("name") if deployment else None
    found = []
    for pod in components.get("pods") or []:
        pod_name = meta(pod).get("name") or ""
        if not prefix or not pod_name.startswith(prefix + "-"):
            continue
        for line in ((components.get("logs") or {}).get(pod_name) or "").splitlines()[::-1]:
            if REFUSED.search(line):
                found.append(proof("Pod", pod, "log (recent)", line))
                break
        for event in ctx.events_of("Pod", ctx.kai_namespace, pod_name):
            if ctx.recent(event) and REFUSED.search(event.get("message") or ""):
                found.append(proof("Event", event, "message", event.get("message")))
                break
    return found


def _component_state(name, deployments, ctx, components):
    """{running, evidence}: down when its Deployment is absent or has no ready replica, or when
    the API server refuses it (401/403 in its events or recent log)."""
    deployment = _component_deployment(name, deployments)
    if deployment is None:
        return {
            "running": False,
            "evidence": [
                proof(
                    "Deployment",
                    None,
                    "metadata.name",
                    "no Deployment of the %s in namespace %s" % (name, ctx.kai_namespace),
                    namespace=ctx.kai_namespace,
                    name=name,
                )
            ],
        }
    ready = whole((deployment.get("status") or {}).get("readyReplicas"), 0)
    evidence = []
    if ready < 1:
        evidence.append(proof("Deployment", deployment, "status.readyReplicas", ready))
    refused = _refusals(name, deployment, ctx, components)
    evidence.extend(refused)
    return {"running": ready >= 1 and not refused, "evidence": evidence}


def component_states(snapshot, ctx):
    """Per component (pod-grouper, scheduler, binder, admission): running or not, with proof;
    {} when KAI's Deployments were not read (nothing can be said of them then)."""
    if "deployments" not in ctx.read:
        return {}
    components = dict(snapshot.get("components") or {})
    deployments = components.get("deployments") or []
    components.setdefault(
        "pods", [p for p in ctx.pods if meta(p).get("namespace") == ctx.kai_namespace]
    )
    return {
        name: _component_state(name, deployments, ctx, components) for name in COMPONENT_DEPLOYMENTS
    }


# ---------------------------------------------------------------- one pod's facts


def _gpu_request(pod):
    total = 0
    for container in (pod.get("spec") or {}).get("containers") or []:
        resources = container.get("resources") or {}
        value = (resources.get("limits") or {}).get(GPU) or (resources.get("requests") or {}).get(
            GPU
        )
        total += whole(value, 0)
    return total


def _conditions(pod_group):
    """(condition, its specific reasons) of each KAI scheduling condition of the PodGroup."""
    status = (pod_group or {}).get("status") or {}
    out = []
    for cond in status.get("schedulingConditions") or []:
        if cond.get("type") in (None, UNSCHEDULABLE_ON_NODE_POOL):
            out.append((cond, specific_reasons(cond)))
    return out


def _stage(pod, pod_group, live_brs, ctx):
    """Where the pod waits: gated, grouping (no PodGroup), scheduling, binding; None when the
    sections that say it were not read."""
    if (pod.get("spec") or {}).get("schedulingGates"):
        return "gated"
    if "podgroups" not in ctx.read:
        return None
    if pod_group is None:
        return "grouping"
    if live_brs:
        return "binding"
    return "scheduling" if "bindrequests" in ctx.read else None


def pod_facts(pod, ctx):
    """What the rules share about one pod: its PodGroup, BindRequests, GPU groups, events."""
    data = meta(pod)
    ns = data.get("namespace")
    group_name = annotations(pod).get(POD_GROUP_ANNOTATION)
    pod_group = ctx.podgroups.get("%s/%s" % (ns, group_name)) if group_name else None
    brs = ctx.brs_by_pod.get(key(pod)) or []
    live = [b for b in brs if (b.get("status") or {}).get("phase") not in ("Failed", "Succeeded")]
    failed = [b for b in brs if (b.get("status") or {}).get("phase") == "Failed"]
    groups = {labels(pod)[GPU_GROUP_LABEL]} if labels(pod).get(GPU_GROUP_LABEL) else set()
    for br in brs:
        groups.update((br.get("spec") or {}).get("selectedGPUGroups") or [])
    return {
        "pod_group_name": group_name,
        "pod_group": pod_group,
        "brs": brs,
        "live_brs": live,
        "failed_brs": failed,
        "groups": sorted(groups),
        "nodes": sorted({(b.get("spec") or {}).get("selectedNode") for b in brs} - {None}),
        "fraction": FRACTION_ANNOTATION in annotations(pod)
        or MEMORY_ANNOTATION in annotations(pod),
        "conditions": _conditions(pod_group),
        "events": [e for e in ctx.events_of("Pod", ns, data.get("name")) if ctx.recent(e)],
        "stage": _stage(pod, pod_group, live, ctx),
    }


# ---------------------------------------------------------------- the rules


def rule_scheduling_gated(pod, facts, ctx):
    gates = [g.get("name") for g in (pod.get("spec") or {}).get("schedulingGates") or []]
    if not gates:
        return None
    return [proof("Pod", pod, "spec.schedulingGates", ", ".join(str(g) for g in gates))]


def rule_kai_component_down(pod, facts, ctx):
    name = STAGE_COMPONENT.get(facts["stage"])
    state = ctx.components.get(name) if name else None
    if state is None or state["running"]:
        return None
    data = meta(pod)
    # What shows the pod waits at that component's stage.
    where = {
        "grouping": proof("Pod", pod, "metadata.annotations[%s]" % POD_GROUP_ANNOTATION, "absent"),
        "scheduling": proof(
            "BindRequest",
            None,
            "metadata.name",
            "not found: the scheduler has not placed the pod",
            namespace=data.get("namespace"),
            name=data.get("name"),
        ),
        "binding": proof(
            "BindRequest", (facts["live_brs"] or [None])[0], "status.phase", "(none: not bound yet)"
        ),
    }[facts["stage"]]
    return [where] + state["evidence"]


def rule_not_seen_by_kai(pod, facts, ctx):
    if facts["stage"] != "grouping":
        return None
    data = meta(pod)
    name = facts["pod_group_name"] or "pg-%s-%s" % (data.get("name"), data.get("uid"))
    found = [
        proof(
            "Pod",
            pod,
            "metadata.annotations[%s]" % POD_GROUP_ANNOTATION,
            facts["pod_group_name"] or "absent",
        ),
        proof(
            "PodGroup",
            None,
            "metadata.name",
            "not found",
            namespace=data.get("namespace"),
            name=name,
        ),
    ]
    for event in facts["events"]:
        if event.get("reason") == "PodGrouperWarning":
            found.append(proof("Event", event, "message", event.get("message")))
            break
    return found


def _sharing_proof(ctx):
    sharing = ctx.sharing
    if sharing.get("enabled") is None:
        return []
    return [
        proof(
            sharing.get("kind") or "Deployment",
            None,
            sharing.get("field") or "spec.template.spec.containers[].args",
            "GPU sharing %s" % ("on" if sharing["enabled"] else "off"),
            namespace=sharing.get("namespace"),
            name=sharing.get("name"),
        )
    ]


def rule_gpu_sharing_rejected(pod, facts, ctx):
    if not facts["fraction"]:
        return None
    found = []
    for br in facts["failed_brs"]:
        reason = str((br.get("status") or {}).get("reason") or "")
        if any(text in reason for text in SHARING_TEXTS):
            found.append(proof("BindRequest", br, "status.reason", reason))
    if SHARED_CM_ANNOTATION not in annotations(pod):
        found.append(
            proof(
                "Pod",
                pod,
                "metadata.annotations[%s]" % SHARED_CM_ANNOTATION,
                "absent: KAI's admission did not prepare this fraction",
            )
        )
    if not found:
        return None
    request = FRACTION_ANNOTATION if FRACTION_ANNOTATION in annotations(pod) else MEMORY_ANNOTATION
    head = proof("Pod", pod, "metadata.annotations[%s]" % request, annotations(pod)[request])
    return [head] + found + _sharing_proof(ctx)


def rule_gang_waiting(pod, facts, ctx):
    pod_group = facts["pod_group"]
    want = whole((pod_group or {}).get("spec", {}).get("minMember"), 1)
    if pod_group is None or want <= 1:
        return None
    members = ctx.members.get(key(pod_group)) or []
    gated = [m for m in members if (m.get("spec") or {}).get("schedulingGates")]
    if len(members) - len(gated) >= want:
        return None
    found = [
        proof("PodGroup", pod_group, "spec.minMember", want),
        proof(
            "PodGroup",
            pod_group,
            "pods with annotation %s=%s" % (POD_GROUP_ANNOTATION, meta(pod_group).get("name")),
            "%d present, %d of them gated" % (len(members), len(gated)),
        ),
    ]
    for event in ctx.events_of(
        "PodGroup", meta(pod_group).get("namespace"), meta(pod_group)["name"]
    ):
        if ctx.recent(event) and event.get("reason") == "NotReady":
            found.append(proof("Event", event, "message", event.get("message")))
            break
    return found


def _condition_proofs(facts, reason):
    """Proofs of the PodGroup conditions whose specific reason is ``reason``."""
    out = []
    for cond, reasons in facts["conditions"]:
        if reason in reasons:
            field = "status.schedulingConditions[type=%s]" % cond.get("type")
            out.append(
                proof(
                    "PodGroup",
                    facts["pod_group"],
                    field + (".reasons[].reason" if cond.get("reasons") else ".message"),
                    reason,
                )
            )
            out.append(
                proof("PodGroup", facts["pod_group"], field + ".message", cond.get("message"))
            )
    return out


def rule_queue_missing(pod, facts, ctx):
    pod_group = facts["pod_group"]
    if pod_group is None:
        return None
    found = _condition_proofs(facts, QUEUE_DOES_NOT_EXIST)
    queue = (pod_group.get("spec") or {}).get("queue")
    if queue and "queues" in ctx.read and queue not in ctx.queues:
        found.append(proof("PodGroup", pod_group, "spec.queue", queue))
        found.append(proof("Queue", None, "metadata.name", "not found", name=queue))
    return found or None


def rule_queue_over_limit(pod, facts, ctx):
    found = _condition_proofs(facts, OVER_LIMIT)
    if not found:
        return None
    queue_name = ((facts["pod_group"] or {}).get("spec") or {}).get("queue")
    queue = ctx.queues.get(queue_name)
    if queue is not None:
        limit = (((queue.get("spec") or {}).get("resources") or {}).get("gpu") or {}).get("limit")
        found.append(proof("Queue", queue, "spec.resources.gpu.limit", limit))
    return found


def _largest_gpu_node(ctx):
    sizes = [
        (whole((n.get("status") or {}).get("allocatable", {}).get(GPU), 0), n) for n in ctx.nodes
    ]
    return max(sizes, key=lambda s: s[0]) if sizes else (0, None)


def rule_no_gpu_fits(pod, facts, ctx):
    found = _condition_proofs(facts, POD_SCHEDULING_ERRORS)
    for cond, _reasons in facts["conditions"]:
        message = cond.get("message") or ""
        if not found and any(text in message for text in NO_FIT_TEXTS):
            found.append(
                proof(
                    "PodGroup", facts["pod_group"], "status.schedulingConditions[].message", message
                )
            )
    wanted = _gpu_request(pod)
    if not found and wanted and "nodes" in ctx.read:
        most, node = _largest_gpu_node(ctx)
        if wanted > most:
            found.append(proof("Pod", pod, "spec.containers[].resources.limits[%s]" % GPU, wanted))
            found.append(
                proof("Node", node, "status.allocatable[%s]" % GPU, most)
                if node is not None
                else proof("Node", None, "items", "no node", name="(none)")
            )
    return found or None


def _failure_reasons(facts):
    """(BindRequest, reason) of each failed BindRequest of the pod."""
    return [(b, str((b.get("status") or {}).get("reason") or "")) for b in facts["failed_brs"]]


def _stuck_at_reservation(facts):
    """The pod's bind waits for a reservation pod or failed waiting for one; no other failure."""
    reasons = [r for _b, r in _failure_reasons(facts)]
    if any(r and RESERVATION_WAIT not in r for r in reasons):
        return False
    return bool(facts["live_brs"]) or any(RESERVATION_WAIT in r for r in reasons)


def rule_duplicate_reservation(pod, facts, ctx):
    if not _stuck_at_reservation(facts):
        return None
    nodes = set(facts["nodes"])
    found = []
    for group, every in sorted(ctx.reservations.items()):
        pods = [p for p in every if is_live(p)]  # a failed one holds no GPU
        on_node = {(p.get("spec") or {}).get("nodeName") for p in pods} & nodes
        if len(pods) > 1 and (on_node or group in facts["groups"]):
            found.extend(
                proof("Pod", p, "metadata.labels[%s]" % GPU_GROUP_LABEL, group) for p in pods
            )
    if not found:
        return None
    head = [
        proof("BindRequest", b, "spec.selectedNode", b["spec"].get("selectedNode"))
        for b in facts["brs"][:1]
    ]
    return head + found


def rule_reservation_pod_failing(pod, facts, ctx):
    found = []
    for br, reason in _failure_reasons(facts):
        if RESERVATION_WAIT in reason:
            found.append(proof("BindRequest", br, "status.reason", reason))
    for group in facts["groups"]:
        for rpod in ctx.reservations.get(group) or []:
            status = rpod.get("status") or {}
            if status.get("reason") == ADMISSION_ERROR or status.get("phase") == "Failed":
                found.append(
                    proof("Pod", rpod, "status.reason", status.get("reason") or status.get("phase"))
                )
                found.append(proof("Pod", rpod, "status.message", status.get("message")))
            events = ctx.events_of("Pod", meta(rpod).get("namespace"), meta(rpod).get("name"))
            for event in events:
                if event.get("reason") == ADMISSION_ERROR and ctx.recent(event):
                    found.append(proof("Event", event, "message", event.get("message")))
                    break
    return found or None


def _bind_failures(pod, facts):
    """(proof, text) of every bind failure on record for the pod: failed BindRequests, a
    PodBound=False condition, recent BindingError/FailedBinding events (the only trace left when
    the scheduler already deleted the failed BindRequest, kai-contract.md section 13)."""
    out = [(proof("BindRequest", b, "status.reason", r), r) for b, r in _failure_reasons(facts)]
    bound = condition(pod, "PodBound")
    if bound and bound.get("status") == "False":
        text = str(bound.get("message") or "")
        out.append((proof("Pod", pod, "status.conditions[type=PodBound].message", text), text))
    for event in facts["events"]:
        if event.get("reason") in ("BindingError", "FailedBinding"):
            text = str(event.get("message") or "")
            out.append((proof("Event", event, "message", text), text))
    return out


def _dataless_configmaps(pod, ctx):
    """The pod's GPU-sharing capabilities ConfigMaps that exist with no data: the panic's
    precondition (kai-contract.md section 12)."""
    prefix = annotations(pod).get(SHARED_CM_ANNOTATION)
    if not prefix or "configmaps" not in ctx.read:
        return []
    pattern = sharing_configmap_pattern(prefix)
    return [
        proof("ConfigMap", cm, "data", "absent")
        for cm in ctx.configmaps
        if meta(cm).get("namespace") == meta(pod).get("namespace")
        and pattern.match(meta(cm).get("name") or "")
        and not (meta(cm).get("name") or "").endswith("-evar")
        and not cm.get("data")
        and not cm.get("binaryData")
    ]


def rule_bind_nil_map(pod, facts, ctx):
    found = [p for p, text in _bind_failures(pod, facts) if NIL_MAP_REASON in text]
    return found + _dataless_configmaps(pod, ctx) if found else None


def rule_bind_failed_other(pod, facts, ctx):
    found = [p for p, text in _bind_failures(pod, facts) if text]
    return found or None


def unknown_evidence(pod, facts, ctx):
    """What was read about a pod no rule explains, attached as it is."""
    found = [proof("Pod", pod, "status.phase", (pod.get("status") or {}).get("phase"))]
    if facts["pod_group"] is not None:
        conds = facts["conditions"]
        found.append(
            proof(
                "PodGroup",
                facts["pod_group"],
                "status.schedulingConditions",
                "; ".join(c.get("message") or "" for c, _r in conds) or "none",
            )
        )
    for br in facts["brs"]:
        status = br.get("status") or {}
        found.append(
            proof(
                "BindRequest",
                br,
                "status",
                "phase %s, reason %s"
                % (status.get("phase") or "(none)", status.get("reason") or "(none)"),
            )
        )
    for event in facts["events"][:3]:
        found.append(
            proof(
                "Event",
                event,
                "reason, message",
                "%s: %s" % (event.get("reason"), event.get("message")),
            )
        )
    return found


# ---------------------------------------------------------------- the table


def _cause(cause_id, title, rule, step, owner):
    return {"id": cause_id, "title": title, "rule": rule, "step": step, "owner": owner}


KAI_OWNER = "KAI platform owner"
# The causes in the order they are tried (why this order: the module docstring). ``step`` is
# recovery.yml's step that acts on the cause (plugins/module_utils/recovery/service.py STEPS),
# None where no step of recovery does; ``owner`` is who acts otherwise.
CAUSES = (
    _cause(
        "scheduling_gated",
        "held by a scheduling gate",
        rule_scheduling_gated,
        None,
        "the workload's owner: whoever set the gate lifts it (kubectl patch the pod's "
        "spec.schedulingGates)",
    ),
    _cause(
        "kai_component_down",
        "KAI's component for its stage not running or refused by the API server",
        rule_kai_component_down,
        "restart_binder",
        KAI_OWNER + ": bring the component back (kai-config, its Deployment, its credentials); "
        "recovery's restart_binder when it is the binder",
    ),
    _cause(
        "not_seen_by_kai",
        "not yet seen by KAI (no PodGroup)",
        rule_not_seen_by_kai,
        None,
        KAI_OWNER
        + ": the pod grouper (its PodGrouperWarning events, kai.scheduler/skip-podgrouper)",
    ),
    _cause(
        "gpu_sharing_rejected",
        "GPU sharing off, or the fraction not prepared by KAI's admission",
        rule_gpu_sharing_rejected,
        None,
        KAI_OWNER + ": turn GPU sharing on (kai-config spec.admission.gpuSharing) and resubmit",
    ),
    _cause(
        "gang_waiting",
        "gang waiting for members (minMember above the pods ready to schedule)",
        rule_gang_waiting,
        None,
        "the workload's owner: submit or ungate the missing members, or lower minMember",
    ),
    _cause(
        "queue_missing",
        "its queue does not exist",
        rule_queue_missing,
        None,
        "the queue administrator: create the queue, or fix the kai.scheduler/queue label",
    ),
    _cause(
        "queue_over_limit",
        "its queue is over its GPU limit",
        rule_queue_over_limit,
        None,
        "the queue administrator: raise the queue's limit, or wait for its work to finish",
    ),
    _cause(
        "no_gpu_fits",
        "no node or GPU group fits",
        rule_no_gpu_fits,
        None,
        "the capacity owner: add GPU nodes, or the workload's owner: ask for fewer GPUs",
    ),
    _cause(
        "duplicate_reservation",
        "duplicate reservation pods hold the node's GPUs",
        rule_duplicate_reservation,
        "delete_duplicate_reservation_pods",
        KAI_OWNER + ": delete the extra reservation pod of each group; KAI from v0.16.0 on "
        "does not make them (KAI-Scheduler #1673)",
    ),
    _cause(
        "reservation_pod_failing",
        "its GPU reservation pod fails (UnexpectedAdmissionError, 40 s timeout)",
        rule_reservation_pod_failing,
        "delete_stale_reservation_pods",
        "the GPU node's owner: the kubelet refuses the device (GPUs held or unavailable)",
    ),
    _cause(
        "bind_nil_map",
        "bind failed: assignment to entry in nil map (the binder panic)",
        rule_bind_nil_map,
        "delete_dataless_configmaps",
        KAI_OWNER + ": upgrade the binder past the affected range (rollout.yml)",
    ),
    _cause(
        "bind_failed_other",
        "bind failed for another reason (its reason attached)",
        rule_bind_failed_other,
        "delete_failed_bindrequests",
        KAI_OWNER + ": read the reason; the scheduler retries a failed BindRequest by itself",
    ),
)
UNKNOWN = _cause(
    "unknown",
    "no rule explains it (what was read is attached)",
    None,
    None,
    "on-call: read the evidence; nothing on record names a cause",
)
CAUSE_IDS = tuple(c["id"] for c in CAUSES) + (UNKNOWN["id"],)
BY_ID = dict((c["id"], c) for c in CAUSES + (UNKNOWN,))


# ---------------------------------------------------------------- the snapshot of the reads


def sharing(deployments, config, kai_namespace):
    """Whether GPU sharing is on, and the object and field that say so: the running admission's
    flag (absent: off, as the inventory and gpu_access read it), else kai-config's
    spec.admission.gpuSharing when no admission runs."""
    admission = next((d for d in deployments or [] if meta(d).get("name") == ADMISSION), None)
    containers = ((admission or {}).get("spec") or {}).get("template", {}).get("spec", {}).get(
        "containers"
    ) or []
    for container in containers:
        found = bool_flag(list(container.get("args") or []), SHARING_ARG)
        if found is not None or container is containers[-1]:
            return {
                "enabled": bool(found),
                "kind": "Deployment",
                "namespace": kai_namespace,
                "name": ADMISSION,
                "field": "spec.template.spec.containers[%s].args" % container.get("name"),
            }
    configured = (((config or {}).get("spec") or {}).get("admission") or {}).get("gpuSharing")
    if configured is not None:
        return {
            "enabled": bool(configured),
            "kind": "Config",
            "namespace": None,
            "name": KAI_CONFIG_NAME,
            "field": "spec.admission.gpuSharing",
        }
    return {"enabled": None}


def snapshot(raw):
    """The classifier's snapshot (``scan/pending.py`` SECTIONS) of the client's reads."""
    pods = raw.get("pods") or []
    reservation_ns = raw.get("reservation_namespace") or RESERVATION_NAMESPACE
    kai_ns = raw.get("kai_namespace") or NAMESPACE
    return {
        "access": raw.get("access") or {},
        "kai_namespace": kai_ns,
        "reservation_namespace": reservation_ns,
        "scheduler_name": raw.get("scheduler_name") or SCHEDULER_NAME,
        "pods": pods,
        "podgroups": raw.get("podgroups") or [],
        "queues": raw.get("queues") or [],
        "bindrequests": raw.get("bindrequests") or [],
        "reservation_pods": [
            p
            for p in pods
            if meta(p).get("namespace") == reservation_ns
            and labels(p).get("app") == "kai-resource-reservation"
        ],
        "configmaps": raw.get("configmaps") or [],
        "nodes": raw.get("nodes") or [],
        "events": raw.get("events") or [],
        "components": {
            "deployments": raw.get("deployments") or [],
            "pods": [p for p in pods if meta(p).get("namespace") == kai_ns],
            "logs": raw.get("logs") or {},
        },
        "sharing": sharing(raw.get("deployments"), raw.get("kai_config"), kai_ns),
    }


# ---------------------------------------------------------------- classify


def pending_pods(
    pods,
    scheduler_name=SCHEDULER_NAME,
    reservation_namespace=RESERVATION_NAMESPACE,
    namespaces=(),
):
    """Pods KAI schedules that wait for a node: schedulerName kai-scheduler, live, unbound,
    outside the reservation namespace (optionally only in ``namespaces``). A bound pod that is
    still Pending waits for its kubelet, not for KAI."""
    for pod in pods:
        data = meta(pod)
        if (pod.get("spec") or {}).get("schedulerName") != scheduler_name:
            continue
        if data.get("namespace") == reservation_namespace:
            continue
        if namespaces and data.get("namespace") not in namespaces:
            continue
        if is_bound(pod) or not is_live(pod):
            continue
        yield pod


def diagnose_pod(pod, ctx):
    """The pod's one cause: the first rule of CAUSES that proves one, else unknown."""
    facts = pod_facts(pod, ctx)
    cause, evidence = UNKNOWN, None
    for candidate in CAUSES:
        evidence = candidate["rule"](pod, facts, ctx)
        if evidence:
            cause = candidate
            break
    if not evidence:
        evidence = unknown_evidence(pod, facts, ctx)
    data = meta(pod)
    waited = age_s(pod, ctx.now)
    step = cause["step"]
    if cause["id"] == "kai_component_down" and facts["stage"] != "binding":
        step = None  # recovery's restart_binder acts on the binder only
    return {
        "pod": {
            "namespace": data.get("namespace"),
            "name": data.get("name"),
            "uid": data.get("uid"),
        },
        "cause": cause["id"],
        "title": cause["title"],
        "stage": facts["stage"],
        "evidence": evidence,
        "step": step,
        "owner": cause["owner"],
        "since": data.get("creationTimestamp"),
        "waiting_s": round(waited, 1) if waited is not None else None,
    }


def notes(ctx):
    """What could not be judged: each section not read, named."""
    return [
        "%s not read (%s): causes that need it cannot be proven"
        % (SECTIONS[s], ctx.access.get(s, "absent"))
        for s in SECTIONS
        if s not in ctx.read
    ]


def summarize(pods):
    """Per cause that holds a pod, in CAUSES order: count, oldest wait, its step and owner."""
    out = []
    for cause_id in CAUSE_IDS:
        held = [p for p in pods if p["cause"] == cause_id]
        if not held:
            continue
        oldest = max(held, key=lambda p: p["waiting_s"] or 0)
        cause = BY_ID[cause_id]
        out.append(
            {
                "cause": cause_id,
                "title": cause["title"],
                "count": len(held),
                "oldest_wait_s": oldest["waiting_s"],
                "oldest_pod": "%s/%s" % (oldest["pod"]["namespace"], oldest["pod"]["name"]),
                "step": cause["step"],
                "owner": cause["owner"],
            }
        )
    return out


def classify(snapshot, now, namespaces=()):
    """{pods: [one diagnosis per Pending pod], by_cause: [...], notes: [...]} for a snapshot."""
    ctx = Context(snapshot, now)
    waiting = pending_pods(ctx.pods, ctx.scheduler_name, ctx.reservation_namespace, namespaces)
    pods = [diagnose_pod(pod, ctx) for pod in waiting]
    pods.sort(key=lambda p: (CAUSE_IDS.index(p["cause"]), -(p["waiting_s"] or 0)))
    return {"pods": pods, "by_cause": summarize(pods), "notes": notes(ctx)}
