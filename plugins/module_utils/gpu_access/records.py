# Copyright: kaiops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the probe pods say, as records: pure functions over the pods and logs the role read.

The role reads the probe pods, their logs and their nodes with kubernetes.core (the reads of
this feature); ``pod_record`` turns one pod and its log into what the rules and the report need.
Times come from the API and from the probe's own JSON, never from the polling that waited.
"""

import json

from ansible_collections.kaiops.runbooks.plugins.module_utils.kai import facts

# KAI's specific reasons of a PodGroup condition: one reading, shared with the Pending diagnosis.
from ansible_collections.kaiops.runbooks.plugins.module_utils.kai.facts import (
    specific_reasons,
)

CASE_LABEL = "kaiops.dev/gpu-access-case"
# NVIDIA container runtime values that give a container no GPU device.
NO_DEVICE_VALUES = (None, "", "void", "none")
# The environment KAI's admission gives a fraction container, from its capabilities ConfigMap.
SHARING_ENV = ("NVIDIA_VISIBLE_DEVICES", "RUNAI_NUM_OF_GPUS", "GPU_PORTION")
# Set by the hamicore admission plugin: the HAMi-core memory limit of a fraction container.
MEMORY_LIMIT_ENV = "CUDA_DEVICE_MEMORY_LIMIT"
ENDED = ("Succeeded", "Failed")


def parse_probe_log(text):
    """The probe's JSON object (schema kaiops.gpuprobe/v1): the last JSON line of the log."""
    for line in reversed((text or "").splitlines()):
        line = line.strip()
        if not line.startswith("{"):
            continue
        try:
            data = json.loads(line)
        except ValueError:
            continue
        if isinstance(data, dict) and data.get("schema") == "kaiops.gpuprobe/v1":
            return data
    return None


def device_ids(value):
    """Device IDs in an NVIDIA_VISIBLE_DEVICES value; [] for unset, empty, void or none."""
    if value in NO_DEVICE_VALUES or str(value).strip().lower() in ("void", "none"):
        return []
    return [part.strip() for part in str(value).split(",") if part.strip()]


def _condition_time(pod, kind):
    for cond in (pod.get("status") or {}).get("conditions") or []:
        if cond.get("type") == kind and cond.get("status") == "True":
            return cond.get("lastTransitionTime")
    return None


def _probe_output(probe):
    """What the probe printed that the rules read, or None when it printed no JSON line."""
    if probe is None:
        return None
    return {
        "started_at": probe.get("started_at"),
        "finished_at": probe.get("finished_at"),
        "gpu_present": probe.get("gpu_present"),
        "mode": probe.get("mode"),
        "note": probe.get("note"),
        "gpu_detail": probe.get("gpu_detail"),
        "devices": probe.get("devices") or [],
        "check_passed": (probe.get("check") or {}).get("passed"),
        "computed_on": (probe.get("check") or {}).get("computed_on"),
        "alloc": probe.get("alloc") or {},
        "exit_code": probe.get("exit_code"),
        "error": probe.get("error"),
    }


def pod_record(pod, log_text):
    """What the report needs of one probe pod: identity, timeline, exit, probe output.

    Times come from the API (creationTimestamp, PodScheduled, the container's terminated
    state) and from the probe's own JSON; never from the polling that waited for them.
    """
    meta = pod.get("metadata") or {}
    spec = pod.get("spec") or {}
    status = pod.get("status") or {}
    statuses = status.get("containerStatuses") or []
    state = (statuses[0].get("state") or {}) if statuses else {}
    term = state.get("terminated") or {}
    container = (spec.get("containers") or [{}])[0]
    limits = (container.get("resources") or {}).get("limits") or {}
    annotations = meta.get("annotations") or {}
    probe = parse_probe_log(log_text)
    visible = (probe or {}).get("visible") or {}
    return {
        "name": meta.get("name"),
        "namespace": meta.get("namespace"),
        "case": (meta.get("labels") or {}).get(CASE_LABEL),
        "node": spec.get("nodeName"),
        "scheduler": spec.get("schedulerName", "default-scheduler"),
        "gpu_request": limits.get("nvidia.com/gpu"),
        "gpu_fraction": annotations.get("gpu-fraction"),
        "phase": status.get("phase"),
        "reason": term.get("reason") or status.get("reason"),
        "exit_code": term.get("exitCode"),
        "submitted_at": meta.get("creationTimestamp"),
        "scheduled_at": _condition_time(pod, "PodScheduled"),
        "started_at": term.get("startedAt") or (state.get("running") or {}).get("startedAt"),
        "finished_at": term.get("finishedAt"),
        "probe": _probe_output(probe),
        "visible": {
            key: visible.get(key)
            for key in ("NVIDIA_VISIBLE_DEVICES", "GPU_PORTION", "RUNAI_NUM_OF_GPUS", "configmap")
        },
        "devices": device_ids(visible.get("NVIDIA_VISIBLE_DEVICES")),
        "spec_env": container_env(container),
        "annotations": {
            k: v
            for k, v in annotations.items()
            if k in (facts.SHARED_CM_ANNOTATION, "mps", facts.FRACTION_ANNOTATION)
        },
        "gpu_group": (meta.get("labels") or {}).get(facts.GPU_GROUP_LABEL),
        "kai": None,
    }


# ------------------------------------------------------------------ what KAI made, while running


def container_env(container):
    """{name: {"value": v} | {"configmap": name, "key": key} | {"from": "field"|"secret"|...}}."""
    out = {}
    for env in (container or {}).get("env") or []:
        name = env.get("name")
        if "value" in env:
            out[name] = {"value": env.get("value")}
            continue
        source = env.get("valueFrom") or {}
        ref = source.get("configMapKeyRef")
        if ref:
            out[name] = {"configmap": ref.get("name"), "key": ref.get("key")}
        elif source:
            out[name] = {"from": sorted(source)[0]}
        else:
            out[name] = {"value": ""}
    return out


def pod_state(pod):
    """A pod as one observation keeps it: phase, node, group, sharing env, annotations."""
    meta = pod.get("metadata") or {}
    spec = pod.get("spec") or {}
    status = pod.get("status") or {}
    container = (spec.get("containers") or [{}])[0]
    annotations = meta.get("annotations") or {}
    return {
        "phase": status.get("phase"),
        "node": spec.get("nodeName"),
        "scheduler": spec.get("schedulerName", "default-scheduler"),
        "gpu_group": (meta.get("labels") or {}).get(facts.GPU_GROUP_LABEL),
        "queue": (meta.get("labels") or {}).get(facts.QUEUE_LABEL),
        "configmap_prefix": annotations.get(facts.SHARED_CM_ANNOTATION),
        "pod_group": annotations.get(facts.POD_GROUP_ANNOTATION),
        "received_resource_type": annotations.get("received-resource-type"),
        "runtime_class": spec.get("runtimeClassName"),
        "env": {
            k: v
            for k, v in container_env(container).items()
            if k in SHARING_ENV + (MEMORY_LIMIT_ENV,)
        },
    }


def _reasons(pod_group):
    """The PodGroup's scheduling conditions as observed (type, reason, message, reasons[]),
    each with the specific reasons read from it."""
    status = pod_group.get("status") or {}
    out = []
    for c in status.get("schedulingConditions") or []:
        if not (c.get("reason") or c.get("message") or c.get("reasons")):
            continue
        out.append(
            {
                "type": c.get("type"),
                "reason": c.get("reason"),
                "message": c.get("message"),
                "reasons": [
                    {k: r[k] for k in ("reason", "message", "details") if k in r}
                    for r in c.get("reasons") or []
                ],
                "specific_reasons": specific_reasons(c),
            }
        )
    return out


def held_reasons(pod_group_state):
    """The specific reasons over every condition of a PodGroup as observed (``_reasons``)."""
    return [
        r
        for c in (pod_group_state or {}).get("reasons") or []
        for r in c.get("specific_reasons") or []
    ]


def _snapshot_pod_groups(raw_pod_groups, pods):
    """The PodGroups of this case's pods, keyed by pod: by the pod's annotation, else owner."""
    by_group_name = {
        state["pod_group"]: name for name, state in pods.items() if state.get("pod_group")
    }
    pod_groups = {}
    for pg in raw_pod_groups or []:
        meta = pg.get("metadata") or {}
        owner = next(
            (o.get("name") for o in meta.get("ownerReferences") or [] if o.get("kind") == "Pod"),
            None,
        )
        pod = by_group_name.get(meta.get("name")) or owner
        if pod in pods:
            pod_groups[pod] = {
                "name": meta.get("name"),
                "queue": (pg.get("spec") or {}).get("queue"),
                "reasons": _reasons(pg),
            }
    return pod_groups


def _snapshot_bind_requests(raw_bind_requests, pods):
    bind_requests = {}
    for br in raw_bind_requests or []:
        spec = br.get("spec") or {}
        status = br.get("status") or {}
        if spec.get("podName") in pods:
            bind_requests[spec.get("podName")] = {
                "name": (br.get("metadata") or {}).get("name"),
                "phase": status.get("phase"),
                "reason": status.get("reason"),
                "resource_type": spec.get("receivedResourceType"),
                "portion": (spec.get("receivedGPU") or {}).get("portion"),
                "groups": spec.get("selectedGPUGroups") or [],
            }
    return bind_requests


def _snapshot_reservations(raw_reservation_pods, pods, bind_requests):
    """The reservation pods of the GPU groups of this case's pods and BindRequests only."""
    groups = {s["gpu_group"] for s in pods.values() if s.get("gpu_group")}
    for br in bind_requests.values():
        groups.update(br["groups"])
    reservations = {}
    for rp in raw_reservation_pods or []:
        meta = rp.get("metadata") or {}
        group = (meta.get("labels") or {}).get(facts.GPU_GROUP_LABEL)
        if group in groups:
            reservations[group] = {
                "name": meta.get("name"),
                "node": (rp.get("spec") or {}).get("nodeName"),
                "device": (meta.get("annotations") or {}).get(facts.RESERVE_INDEX_ANNOTATION),
                "phase": (rp.get("status") or {}).get("phase"),
                "created_at": meta.get("creationTimestamp"),
            }
    return reservations


def _snapshot_configmaps(raw_configmaps, pods):
    """The data of the GPU-sharing ConfigMaps named after this case's pods' prefixes."""
    prefixes = tuple(
        s["configmap_prefix"] + "-" for s in pods.values() if s.get("configmap_prefix")
    )
    configmaps = {}
    for cm in raw_configmaps or []:
        name = (cm.get("metadata") or {}).get("name") or ""
        if prefixes and name.startswith(prefixes):
            configmaps[name] = cm.get("data")
    return configmaps


def case_snapshot(raw):
    """One read of a case (client.case_state) as an observation: names to compact states.

    ``pod_groups`` and ``bind_requests`` are keyed by the pod they are for; ``reservations`` by
    GPU group, only for the groups of this case's pods and BindRequests; ``configmaps`` the data
    (None: the ConfigMap has no data) of the GPU-sharing ConfigMaps of this case's pods.
    """
    pods = {}
    for pod in raw.get("pods") or []:
        pods[(pod.get("metadata") or {}).get("name")] = pod_state(pod)
    bind_requests = _snapshot_bind_requests(raw.get("bind_requests"), pods)
    return {
        "pods": pods,
        "pod_groups": _snapshot_pod_groups(raw.get("pod_groups"), pods),
        "bind_requests": bind_requests,
        "configmaps": _snapshot_configmaps(raw.get("configmaps"), pods),
        "reservations": _snapshot_reservations(raw.get("reservation_pods"), pods, bind_requests),
        "access": raw.get("access") or {},
    }


def _visible_devices_env(spec_env, states):
    """The pod's env as its spec gives it, else as first observed (it names the ConfigMap)."""
    env = spec_env or {}
    if "NVIDIA_VISIBLE_DEVICES" in env:
        return env
    return next((st.get("env") for st in states if st.get("env")), {}) or {}


def _bound_group(bind_requests, labelled):
    """The group a successful BindRequest names, the label's only without one (facts.gpu_group:
    KAI can leave a failed attempt's label on a pod its retry bound in another group)."""
    bound = [
        br["groups"][0]
        for br in bind_requests
        if br.get("phase") == "Succeeded" and len(br.get("groups") or []) == 1
    ]
    return bound[-1] if bound else labelled


def _reservation(seen, groups):
    """The reservation pod of the first of ``groups`` seen in any observation, preferring one
    that shows its device."""
    reservation = None
    for g in groups:  # the pod's own group first, in every observation
        for s in seen:
            found = (s.get("reservations") or {}).get(g)
            if not found:
                continue
            if reservation is None or (found.get("device") and not reservation.get("device")):
                reservation = dict(found, group=g)
    return reservation


def _last(values):
    """The last truthy value, or None."""
    return next((v for v in reversed(values) if v), None)


def kai_view(name, snapshots, spec_env):
    """What the case's observations show of one pod on KAI's side (None without observations).

    ``configmap`` is the ConfigMap the pod spec takes NVIDIA_VISIBLE_DEVICES from; its data and
    the reservation pod of the pod's GPU group are taken from the first observation that shows
    them (the reservation pod is gone once the fraction pods have ended).
    """
    seen = [s for s in snapshots or [] if name in (s.get("pods") or {})]
    if not seen:
        return None
    states = [s["pods"][name] for s in seen]
    env = _visible_devices_env(spec_env, states)
    labelled = next((st["gpu_group"] for st in states if st.get("gpu_group")), None)
    cm_name = (env.get("NVIDIA_VISIBLE_DEVICES") or {}).get("configmap")
    cm_seen = next((s["configmaps"] for s in seen if cm_name in (s.get("configmaps") or {})), None)
    bind_requests = [
        s["bind_requests"][name] for s in seen if name in (s.get("bind_requests") or {})
    ]
    group = _bound_group(bind_requests, labelled)
    groups = [group, labelled] + [g for br in bind_requests for g in br.get("groups") or []]
    return {
        "gpu_group": group,
        "node": _last([st.get("node") for st in states]),
        "configmap": cm_name,
        "configmap_seen": cm_seen is not None,
        "configmap_data": None if cm_seen is None else cm_seen.get(cm_name),
        "pod_group": next(
            (s["pod_groups"][name] for s in reversed(seen) if name in (s.get("pod_groups") or {})),
            None,
        ),
        "bind_request": bind_requests[-1] if bind_requests else None,
        "bind_failed": any(br.get("phase") == "Failed" for br in bind_requests),
        "reservation": _reservation(seen, groups),
        "phases": [st["phase"] for st in states],
        "running_together_at": seen[-1].get("all_running_seen_at"),
        "last_seen_at": seen[-1].get("seen_at"),
    }


def attach(records, watches):
    """Each record with its ``kai`` view from the observations of its case (``watches``)."""
    for rec in records:
        rec["kai"] = kai_view(rec["name"], (watches or {}).get(rec["case"]), rec.get("spec_env"))
    return records
