# Copyright: kaiops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The verification's probes and the figures taken from their watches. Pure.

Probe workloads are fractional GPU pods (``gpu-fraction: "0.5"``, ``schedulerName:
kai-scheduler``) in a namespace of the run's own: the GPU probe (``gpuprobe``, which runs to
completion) on a real node, and a configurable number on KWOK nodes (which bind and turn
Running without starting a container). The pod manifest is reproduce's (``probes/cases.py``)
and the rules over the watches are reproduce's too (``probes/watches.py``: a pod's history, every
BindRequest attempt, nearest-rank percentiles with work that never got there in the
denominator). A bind is a pod with a node, never an event: KAI emits a Normal ``Bound`` event
and sets ``PodBound=True`` on pods whose bind keeps failing.

``figures`` turns the records into what the acceptance gates judge (``rollout/acceptance.py``)
and what the report shows before and after the change: queue age, valid completions and idle GPU
capacity.
"""

from ansible_collections.kaiops.runbooks.plugins.module_utils.k8s.objects import meta as _meta
from ansible_collections.kaiops.runbooks.plugins.module_utils.kai import facts as F
from ansible_collections.kaiops.runbooks.plugins.module_utils.probes import cases as C
from ansible_collections.kaiops.runbooks.plugins.module_utils.probes import watches as W

CREATED_BY = "kaiops.dev/created-by"
CREATED_BY_VALUE = "rollout"
RUN_LABEL = "kaiops.dev/run-id"
PHASE_LABEL = "kaiops.dev/rollout-phase"
CLUSTER_LABEL = "kaiops.dev/cluster"
PROBE_IMAGE = "kaiops.dev/gpuprobe:0.1.0"
GPU = "nvidia.com/gpu"
KWOK_TOLERATIONS = [{"key": "kwok.x-k8s.io/node", "operator": "Exists", "effect": "NoSchedule"}]
KWOK_PLACEMENT = {"spec": {"nodeSelector": {"type": "kwok"}, "tolerations": KWOK_TOLERATIONS}}
# Failed binds a healthy KAI makes and retries: (text in the reason, why). A probe's failed attempt
# with such a reason, followed by its bind within the window, is listed as retried, not counted
# as a failed bind; one whose probe never bound counts. The binder serialises binds per GPU group
# but reads the group's reservation pod from its informer cache, which can still lack the GPU
# index annotation the previous bind waited for (KAI's resource_reservation.go,
# findGPUIndexByGroup; the stand-in the same); the scheduler retries in its next cycle. Seen on
# the lab's healthy build in a rollback verification (2026-12-06), after which the gate failed.
RETRIED_RACES = (
    (
        "failed to find annotation on reservation pod",
        "the GPU group's reservation pod was read from the binder's cache before its GPU index "
        "annotation reached it; retried by the scheduler's next cycle",
    ),
)
# The gang probe: a PodGroup of GANG_SIZE fraction pods that must be placed together or not at
# all (NVIDIA/aicr #2636: after an upgrade no gang was scheduled while every KAI pod read Ready).
# Its pods name the group in KAI's annotation; a bare pod that already names one is left alone
# by the pod-grouper (contract section 4), and the queue is the one the pod-grouper gives a pod
# without a queue label, so the gang waits in the same queue as the other probes.
POD_GROUP_API = "scheduling.run.ai/v2alpha2"
GANG_SIZE = 2
FRACTION = 0.5  # every probe asks for half a GPU


def namespace_name(run_id, phase):
    return ("kaiops-rollout-%s-%s" % (phase, str(run_id)[-8:].lower())).rstrip("-")[:63]


def labels(run_id, phase, cluster):
    return {
        CREATED_BY: CREATED_BY_VALUE,
        RUN_LABEL: str(run_id),
        PHASE_LABEL: phase,
        CLUSTER_LABEL: cluster[:63],
    }


def workloads(real, kwok, real_placement=None, kwok_placement=None):
    """The probes of one verification: ``real`` GPU probes, ``kwok`` probes on KWOK nodes."""
    out = []
    for i in range(int(real)):
        out.append(
            {"name": "probe-real-%02d" % i, "kind": "real", "placement": real_placement or {}}
        )
    for i in range(int(kwok)):
        out.append(
            {
                "name": "probe-kwok-%02d" % i,
                "kind": "kwok",
                "placement": kwok_placement or KWOK_PLACEMENT,
            }
        )
    return out


def gang_workloads(gangs, on_kwok, real_placement=None, kwok_placement=None):
    """``gangs`` PodGroups of GANG_SIZE fraction pods each, where the other probes run: on KWOK
    nodes when the request has KWOK probes, else on the real GPU nodes (running gpuprobe)."""
    kind = "kwok" if on_kwok else "real"
    placement = (kwok_placement or KWOK_PLACEMENT) if on_kwok else (real_placement or {})
    out = []
    for g in range(int(gangs)):
        group = "probe-gang-%02d" % g
        for m in range(GANG_SIZE):
            out.append(
                {
                    "name": "%s-%d" % (group, m),
                    "kind": kind,
                    "placement": placement,
                    "set": "gang",
                    "gang": group,
                }
            )
    return out


def burst_node(nodes, pods):
    """(name, GPUs, free GPUs) of the KWOK node with the most free GPUs (ties: the first name),
    where a burst lands; (None, 0, 0) without one. Free: allocatable less what live pods with
    the node hold (reservation pods hold one for each shared GPU in use)."""
    held = held_per_node(pods)
    found = []
    for node in nodes:
        if (_meta(node).get("labels") or {}).get("type") != "kwok":
            continue
        name = _meta(node).get("name") or ""
        gpus = _int(((node.get("status") or {}).get("allocatable") or {}).get(GPU))
        if gpus:
            found.append((-(gpus - held.get(name, 0)), name, gpus))
    if not found:
        return None, 0, 0
    free, name, gpus = min(found)
    return name, gpus, max(-free, 0)


def burst_workloads(count, node):
    """KAI-Scheduler #2153's shape: ``count`` half-GPU pods created at once on one KWOK node."""
    placement = {
        "spec": {
            "nodeSelector": {"kubernetes.io/hostname": node},
            "tolerations": KWOK_TOLERATIONS,
        }
    }
    return [
        {"name": "probe-burst-%02d" % i, "kind": "kwok", "placement": placement, "set": "burst"}
        for i in range(int(count))
    ]


def pod_group_manifest(name, namespace, pod_labels):
    """The gang's PodGroup: all or nothing for its GANG_SIZE pods."""
    return {
        "apiVersion": POD_GROUP_API,
        "kind": "PodGroup",
        "metadata": {"name": name, "namespace": namespace, "labels": dict(pod_labels)},
        "spec": {"minMember": GANG_SIZE, "queue": F.DEFAULT_QUEUE},
    }


def manifest(workload, namespace, image, pod_labels):
    """reproduce's fraction pod, not gated: the real probes run gpuprobe; a gang's pods name
    their PodGroup."""
    pod = C.pod_manifest(
        workload["name"],
        namespace,
        "single",
        workload["placement"],
        image,
        fraction=str(FRACTION),
        gated=False,
        probe=workload["kind"] == "real",
        labels=pod_labels,
    )
    if workload.get("gang"):
        pod["metadata"]["annotations"][F.POD_GROUP_ANNOTATION] = workload["gang"]
    return pod


def _int(value):
    try:
        return int(str(value))
    except (TypeError, ValueError):
        return 0


def deleted(records, name):
    """Whether the pod was deleted (by someone else: the run deletes its probes only after)."""
    return any(r["type"] == "DELETED" and _meta(r["object"]).get("name") == name for r in records)


def outcome(workload, history, gone=False):
    """``completed``, ``failed``, ``lost`` or None (not there yet): a real probe completes when
    it Succeeded (gpuprobe exited 0: a valid completion), a KWOK probe when it is Running; a probe
    deleted before it completed is lost (it counts as not completed)."""
    if history["failed"] is not None:
        return "failed"
    if workload["kind"] == "real":
        if history["succeeded"] is not None:
            return "completed"
    elif history["running"] is not None or history["succeeded"] is not None:
        return "completed"
    return "lost" if gone else None


def done(records, states):
    pods = records.get("pods") or []
    for st in states:
        if outcome(st, W.pod_history(pods, st["name"]), deleted(pods, st["name"])) is None:
            return False
    return True


def binder_restarts(records, initial):
    """Container restarts of the binder's pods during the window, and binder pods that replaced
    one (a deleted binder pod is a restart too, even if the new pod's restartCount is 0).

    ``initial``: the binder pods at the start, {uid: restartCount}.
    """
    seen, highest = set(initial), dict(initial)
    replaced = 0
    for rec in records:
        obj = rec["object"]
        uid = _meta(obj).get("uid")
        if not uid or rec["type"] == "DELETED":
            continue
        count = sum(
            cs.get("restartCount", 0)
            for cs in (obj.get("status") or {}).get("containerStatuses") or []
        )
        if uid not in seen:
            seen.add(uid)
            replaced += 1
            highest[uid] = 0
        highest[uid] = max(highest.get(uid, 0), count)
    container = sum(highest[u] - initial.get(u, 0) for u in highest)
    return {
        "count": container + replaced,
        "container_restarts": container,
        "replaced_pods": replaced,
    }


def held_per_node(pods):
    """Whole GPUs held by live pods with a node, per node (whole-GPU requests: reservation pods
    hold one for each shared GPU in use)."""
    held = {}
    for pod in pods:
        node = (pod.get("spec") or {}).get("nodeName")
        phase = (pod.get("status") or {}).get("phase")
        if not node or phase in ("Succeeded", "Failed") or _meta(pod).get("deletionTimestamp"):
            continue
        for container in (pod.get("spec") or {}).get("containers") or []:
            resources = container.get("resources") or {}
            want = (resources.get("requests") or {}).get(GPU) or (
                resources.get("limits") or {}
            ).get(GPU)
            try:
                held[node] = held.get(node, 0) + (int(str(want)) if want is not None else 0)
            except ValueError:
                continue
    return held


def capacity(nodes, pods):
    """GPUs on the cluster's nodes and those held by live pods with a node."""
    total = 0
    per_node = {}
    for node in nodes:
        count = _int(((node.get("status") or {}).get("allocatable") or {}).get(GPU))
        if count:
            per_node[_meta(node).get("name")] = count
            total += count
    held = sum(held_per_node(pods).values())
    return {"gpus": total, "held": held, "idle": max(total - held, 0), "nodes": len(per_node)}


def pending_work(pods, now_wall, parse_time, scheduler="kai-scheduler"):
    """How long submitted work waits on the cluster now: KAI's pods with no node."""
    ages = []
    for pod in pods:
        if (pod.get("spec") or {}).get("schedulerName") != scheduler:
            continue
        if (pod.get("spec") or {}).get("nodeName") or _meta(pod).get("deletionTimestamp"):
            continue
        if (pod.get("status") or {}).get("phase") not in (None, "Pending"):
            continue
        created = parse_time(_meta(pod).get("creationTimestamp"))
        if created is not None:
            ages.append(max(0.0, now_wall - created.timestamp()))
    ages.sort()
    return {
        "count": len(ages),
        "oldest_s": round(ages[-1], 1) if ages else None,
        "p50_s": round(ages[len(ages) // 2], 1) if ages else None,
    }


def groups_in_use(pods, reservation_namespace, bindrequests=()):
    """GPU groups a live pod with a node may hold (its label's and its successful
    BindRequest's, F.held_gpu_groups), outside the reservation namespace."""
    bound = F.bound_gpu_groups(bindrequests)
    used = set()
    for pod in pods:
        meta = _meta(pod)
        phase = (pod.get("status") or {}).get("phase")
        if (
            meta.get("namespace") != reservation_namespace
            and (pod.get("spec") or {}).get("nodeName")
            and phase not in ("Succeeded", "Failed")
            and not meta.get("deletionTimestamp")
        ):
            used |= F.held_gpu_groups(pod, bound)
    return used


def probe_groups(records, names, bindrequests=()):
    """The GPU groups the probes were given: every group a probe's label named, and every group
    a probe's BindRequest selected (a failed attempt's included: its reservation may stay)."""
    groups = set()
    for rec in records:
        obj = rec["object"]
        if _meta(obj).get("name") in names:
            group = (_meta(obj).get("labels") or {}).get(F.GPU_GROUP_LABEL)
            if group:
                groups.add(group)
    for rec in bindrequests:
        spec = rec.get("object", rec).get("spec") or {}
        if spec.get("podName") in names:
            groups.update(spec.get("selectedGPUGroups") or [])
    return groups


def _probe_row(st, pods, brs, reasons, retried, bound=None):
    """One probe's outcome and times from the watches; its failed attempts' reasons are
    counted into ``reasons``, or into ``retried`` for a race KAI retries (RETRIED_RACES) when the
    probe then bound."""
    hist = W.pod_history(pods, st["name"])
    submitted = st.get("submitted_t")

    def since(t):
        return round(t - submitted, 3) if t is not None and submitted is not None else None

    tries = W.attempts(brs, st["name"])
    for a in tries:
        if a["failed_at"] is not None:
            reason = a["reason"] or "(no reason)"
            # anywhere in the reason: KAI's binder wraps it ("failed to reserve GPUs for pod
            # <ns/pod> in gpu group <g>: failed to find annotation ...", real KAI 2026-12-07)
            raced = hist["bound"] is not None and any(
                text in reason for text, _why in RETRIED_RACES
            )
            into = retried if raced else reasons
            into[reason] = into.get(reason, 0) + 1
    last = hist["last"] or {}
    return {
        "name": st["name"],
        "kind": st["kind"],
        "node": (last.get("spec") or {}).get("nodeName"),
        "phase": (last.get("status") or {}).get("phase"),
        "outcome": outcome(st, hist, deleted(pods, st["name"])) or "timed_out",
        "submit_to_bound_s": since(hist["bound"]),
        "submit_to_running_s": since(hist["running"]),
        "submit_to_completed_s": since(hist["succeeded"]),
        "attempts": len(tries),
        "failed_attempts": sum(1 for a in tries if a["failed_at"] is not None),
        "gpu_group": F.gpu_group(last, F.bound_gpu_groups(brs) if bound is None else bound),
        "set": st.get("set") or "probe",
        "gang": st.get("gang"),
    }


def _completion(rows):
    submitted = len(rows)
    completed = sum(1 for r in rows if r["outcome"] == "completed")
    return {
        "completed": completed,
        "of": submitted,
        "failed": sum(1 for r in rows if r["outcome"] in ("failed", "lost")),
        "lost": sum(1 for r in rows if r["outcome"] == "lost"),
        "timed_out": sum(1 for r in rows if r["outcome"] == "timed_out"),
        "rate": round(completed / float(submitted), 3) if submitted else None,
    }


def _queue_age(rows, window_s):
    """Submission to bind of the probes; one never bound counts at the full window."""
    bound_waits = [
        r["submit_to_bound_s"] if r["submit_to_bound_s"] is not None else float(window_s)
        for r in rows
    ]
    bound_waits.sort()
    return {
        "p50_s": W.percentile(bound_waits, 50),
        "max_s": round(bound_waits[-1], 3) if bound_waits else None,
        "count": len(bound_waits),
        "note": "submission to bind of the probes; one never bound counts at the full window",
    }


def gang_figures(rows, requested):
    """The gang probes: how many gangs had every member bound (all or nothing) in the window."""
    gangs = {}
    for r in rows:
        gangs.setdefault(r["gang"], []).append(r)
    whole = sum(
        1
        for members in gangs.values()
        if len(members) == GANG_SIZE and all(m["submit_to_bound_s"] is not None for m in members)
    )
    return {
        "requested": int(requested or 0),
        "count": len(gangs),
        "bound": whole,
        "members": len(rows),
        "members_bound": sum(1 for r in rows if r["submit_to_bound_s"] is not None),
        "size": GANG_SIZE,
        "submit_to_bound": W.latency([r["submit_to_bound_s"] for r in rows], len(rows)),
        "note": "a gang is bound when each of its %d pods has a node (minMember %d)"
        % (GANG_SIZE, GANG_SIZE),
    }


def burst_figures(rows, requested, node, node_gpus, node_free_gpus=None):
    """The burst probe: its pods bound within the window on the one node they were sent to."""
    return {
        "requested": int(requested or 0),
        "node": node,
        "node_gpus": node_gpus,
        "node_free_gpus": node_free_gpus,
        "of": len(rows),
        "bound": sum(1 for r in rows if r["submit_to_bound_s"] is not None),
        "submit_to_bound": W.latency([r["submit_to_bound_s"] for r in rows], len(rows)),
    }


def figures(records, states, window_s, timed_out, extra):
    """What a verification measured. ``records``: the watches (pods, bindrequests); ``states``:
    the probes with ``submitted_t`` (``set``: the probes, the gang or the burst pods); ``extra``:
    binder restarts, stale objects, capacity, pending work, namespace, timings, the gang and
    burst requests (measured by the runner). The probes' figures are the plain probes'; the
    gang's and the burst's pods are judged by their own gates."""
    pods, brs = records.get("pods") or [], records.get("bindrequests") or []
    reasons, retried = {}, {}
    bound = F.bound_gpu_groups(brs)  # read once for every row
    every = [_probe_row(st, pods, brs, reasons, retried, bound) for st in states]
    rows = [r for r in every if r["set"] == "probe"]
    submitted = len(rows)
    extra = dict(extra or {})
    out = {
        "probes": submitted,
        "window_s": window_s,
        "timed_out": bool(timed_out),
        "submit_to_bound": W.latency([r["submit_to_bound_s"] for r in rows], submitted),
        "submit_to_running": W.latency([r["submit_to_running_s"] for r in rows], submitted),
        "completion": _completion(rows),
        "valid_completions": sum(
            1 for r in rows if r["kind"] == "real" and r["outcome"] == "completed"
        ),
        "failed_bindrequests": {
            "count": sum(reasons.values()),
            "reasons": reasons,
            "retried": {"count": sum(retried.values()), "reasons": retried},
        },
        "queue_age": _queue_age(rows, window_s),
        "probe_results": every,
        "gangs": gang_figures(
            [r for r in every if r["set"] == "gang"], extra.pop("gangs_requested", 0)
        ),
    }
    burst = extra.pop("burst", None) or {}
    out["burst"] = burst_figures(
        [r for r in every if r["set"] == "burst"],
        burst.get("requested", 0),
        burst.get("node"),
        burst.get("node_gpus", 0),
        burst.get("node_free_gpus"),
    )
    out.update(extra)
    return out


def refused_lines(text, since, pattern, parse_time):
    """Lines of a log read with timestamps (``timestamps=true``) at or after ``since`` (a wall
    time) that match ``pattern``: the API server refusing the component (401/403)."""
    out = []
    for line in (text or "").splitlines():
        stamp, _sep, rest = line.partition(" ")
        when = parse_time(stamp[:19] + "Z") if len(stamp) >= 19 else None
        if when is not None and when.timestamp() + 1 < since:
            continue  # before the window (stamps are read to the second)
        if pattern.search(rest or line):
            out.append(line)
    return out


def side_by_side(before, after):
    """Queue age, valid completions and idle GPU capacity before and after the change."""

    def pick(f, path):
        value = f or {}
        for key in path:
            value = (value or {}).get(key) if isinstance(value, dict) else None
        return value

    rows = [
        ("queue age p50 (s, probes)", ("queue_age", "p50_s")),
        ("queue age max (s, probes)", ("queue_age", "max_s")),
        ("work waiting on the cluster (pods)", ("pending", "count")),
        ("oldest waiting work (s)", ("pending", "oldest_s")),
        ("valid completions (GPU probes)", ("valid_completions",)),
        ("completion rate", ("completion", "rate")),
        ("submit-to-bound p50 (s)", ("submit_to_bound", "p50_s")),
        ("submit-to-Running p50 (s)", ("submit_to_running", "p50_s")),
        ("idle GPUs", ("capacity", "idle")),
        ("GPUs held idle by reservation pods without bound work", ("capacity", "held_idle")),
        ("gangs with every pod bound (gang probes)", ("gangs", "bound")),
        ("burst pods bound (burst probe)", ("burst", "bound")),
        ("most of one GPU given at once (portions per device)", ("device_portions", "max")),
        ("API refusals (401/403) of KAI components", ("auth_errors", "count")),
        ("binder restarts", ("binder_restarts", "count")),
        ("stale objects found by the recovery scan", ("stale_objects", "scan")),
    ]
    return [
        {"figure": name, "before": pick(before, path), "after": pick(after, path)}
        for name, path in rows
    ]
