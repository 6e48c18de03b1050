# Copyright: kaiops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""KAI Scheduler's objects as the collection reads them: kinds, names, labels, annotations.

The one home of these facts for every feature (inventory, recovery, rollout, gpu_access);
pure data and accessors, no I/O. KAI's *release* facts (the version pair, the affected
range, how each release writes the GPU-sharing ConfigMap) are not here: they live in the
collection's data file ``meta/kai_releases.yml``, which the action plugins read on the
controller and hand to the modules as option defaults.
"""

import re

# meta is Kubernetes', not KAI's: k8s/objects.py has it and kai builds on it.
from ansible_collections.kaiops.runbooks.plugins.module_utils.k8s.objects import meta

# ------------------------------------------------------------------ API kinds (apiVersion, kind)
DEPLOYMENT = ("apps/v1", "Deployment")
KAI_CONFIG = ("kai.scheduler/v1", "Config")
KAI_CONFIG_NAME = "kai-config"
SCHEDULING_SHARD = ("kai.scheduler/v1", "SchedulingShard")
QUEUE = ("scheduling.run.ai/v2", "Queue")
BIND_REQUEST = ("scheduling.run.ai/v1alpha2", "BindRequest")
CLUSTER_POLICY = ("nvidia.com/v1", "ClusterPolicy")
POD_GROUP = ("scheduling.run.ai/v2alpha2", "PodGroup")
# KAI's admission webhooks (failurePolicy Fail) and the endpoints of the Service each calls.
WEBHOOK_CONFIGURATIONS = (
    ("admissionregistration.k8s.io/v1", "MutatingWebhookConfiguration"),
    ("admissionregistration.k8s.io/v1", "ValidatingWebhookConfiguration"),
)
ENDPOINT_SLICE = ("discovery.k8s.io/v1", "EndpointSlice")
SERVICE_NAME_LABEL = "kubernetes.io/service-name"

# ------------------------------------------------------------------ default names of an install
NAMESPACE = "kai-scheduler"
HELM_RELEASE = "kai-scheduler"
RESERVATION_NAMESPACE = "kai-resource-reservation"
BINDER = "binder"
OPERATOR = "kai-operator"
ADMISSION = "admission"
# KAI's own Deployments (the inventory lists these as components, and Deployments that carry
# the KAI release's meta.helm.sh/release-name annotation); kai-scheduler-<shard> too.
COMPONENTS = (
    "admission",
    "binder",
    "kai-operator",
    "kai-scheduler",
    "node-scale-adjuster",
    "pod-grouper",
    "podgroup-controller",
    "queue-controller",
    "resource-reservation",
)
COMPONENT_PREFIX = "kai-scheduler-"
HELM_RELEASE_ANNOTATION = "meta.helm.sh/release-name"


def chart(ref, version):
    """(chart_ref, chart_version) helm is given to install ``version``: ``{version}`` in the
    reference makes it a per-release package (a mirror path or a local file, as on the lab);
    any other reference (the official OCI chart) is one chart at several versions."""
    if "{version}" in ref:
        return ref.replace("{version}", version), None
    return ref, version


# The lab's KAI stand-in starts every container of its own with --standin-release=<release>
# (its chart and its operator do): reports say "KAI stand-in" next to the version wherever
# what runs is the stand-in. Read from the containers, never from a label: KAI's operator keeps
# the labels it does not own when it takes over a Deployment, so after the real KAI was
# installed over the stand-in on the lab, every component still carried the stand-in's label
# while running KAI's images. Nothing else depends on it.
STANDIN_ARG = "--standin-release"
IMPLEMENTATION_NAMES = {"standin": "KAI stand-in", "kai": "KAI"}
# The lab's faulted stand-in builds (KAI's field failures, played on purpose) start every
# component with --standin-faults=<name,...>: every report that ran on one says which.
STANDIN_FAULTS_ARG = "--standin-faults"


def implementation_of(deployment):
    """``standin`` when a container of the Deployment runs the stand-in, else ``kai``."""
    spec = (((deployment or {}).get("spec") or {}).get("template") or {}).get("spec") or {}
    for container in spec.get("containers") or []:
        words = list(container.get("command") or []) + list(container.get("args") or [])
        if any(str(word).startswith(STANDIN_ARG) for word in words):
            return "standin"
    return "kai"


def standin_faults(deployment):
    """The faults a stand-in component was started with (``--standin-faults=a,b``), sorted."""
    spec = (((deployment or {}).get("spec") or {}).get("template") or {}).get("spec") or {}
    found = set()
    for container in spec.get("containers") or []:
        words = [
            str(w) for w in list(container.get("command") or []) + list(container.get("args") or [])
        ]
        for i, word in enumerate(words):
            value = None
            if word.startswith(STANDIN_FAULTS_ARG + "="):
                value = word.split("=", 1)[1]
            elif word == STANDIN_FAULTS_ARG and i + 1 < len(words):
                value = words[i + 1]
            found.update(f.strip() for f in (value or "").split(",") if f.strip())
    return sorted(found)


# Container flags that decide a verdict: the only args the inventory records (exact names, or
# a prefix ending in '-'). Anything else a container is started with stays out of evidence.
VERDICT_FLAGS = (
    "--gpu-sharing-enabled",
    "--fake-gpu-nodes",
    "--plugins",
    "--scheduler-name",
    "--gpu-fraction-runtime-class-name",
    "--resource-reservation-",
    "--standin-",
)

# ------------------------------------------------------------------ the GPU-sharing path
# Pod annotations that put a pod on the GPU-sharing (fraction) path.
FRACTION_ANNOTATION = "gpu-fraction"
SHARED_CM_ANNOTATION = "runai/shared-gpu-configmap"
FRACTION_ANNOTATIONS = (FRACTION_ANNOTATION, "gpu-memory", SHARED_CM_ANNOTATION)
GPU_GROUP_LABEL = "runai-gpu-group"
RESERVE_INDEX_ANNOTATION = "run.ai/reserve_for_gpu_index"
# The admission flag that turns GPU sharing on; the operator renders it only when kai-config's
# spec.admission.gpuSharing is on (read in its source: kai-contract.md section 1), so a running
# admission without it has sharing off.
SHARING_ARG = "--gpu-sharing-enabled"
# strconv.ParseBool's spellings: what a Go program reads from --flag=<value>
_GO_BOOL = {
    **dict.fromkeys(("1", "t", "T", "TRUE", "true", "True"), True),
    **dict.fromkeys(("0", "f", "F", "FALSE", "false", "False"), False),
}


def bool_flag(args, name):
    """A Go boolean flag as the program reads its args: True for a bare ``--name``, the value of
    ``--name=<v>`` as strconv.ParseBool spells it, None when absent or unreadable (the program
    would refuse to start). The last one given wins, as in Go's flag parsing."""
    value = None
    for arg in args or []:
        if arg == name:
            value = True
        elif isinstance(arg, str) and arg.startswith(name + "="):
            value = _GO_BOOL.get(arg.split("=", 1)[1])
    return value


# What the binder's panic leaves in a BindRequest's status and a pod's PodBound condition.
NIL_MAP_REASON = "assignment to entry in nil map"
# A GPU-sharing ConfigMap is named <annotation prefix>-<index>[-evar]: capabilities and env.
_CM_NAME = r"^%s-(i?\d+)(-evar)?$"
CM_SUFFIX = re.compile(r"^.+-(i?\d+)(-evar)?$")
# Any GPU-sharing ConfigMap by name alone (the prefix ends in -shared-gpu), and the keys KAI
# writes into them: evidence keeps their data (nothing else keeps ConfigMap values).
SHARING_CONFIGMAP_NAME = re.compile(r"^.+-shared-gpu-(i?\d+)(-evar)?$")
SHARING_CONFIGMAP_KEYS = ("NVIDIA_VISIBLE_DEVICES", "GPU_PORTION")

# ------------------------------------------------------------------ scheduling (sections 4, 5, 14)
SCHEDULER_NAME = "kai-scheduler"  # pod spec.schedulerName of the pods KAI schedules
POD_GROUP_ANNOTATION = "pod-group-name"  # the pod grouper's link from a pod to its PodGroup
QUEUE_LABEL = "kai.scheduler/queue"
DEFAULT_QUEUE = "default-queue"
RESERVATION_APP_LABEL = "app=kai-resource-reservation"
# A PodGroup's scheduling condition: this type, reason always Unschedulable (section 14).
UNSCHEDULABLE_ON_NODE_POOL = "UnschedulableOnNodePool"
# KAI's condition message: "<Reason>: <text>." (after "Node-Pool '<pool>': " when KAI adds it).
_MESSAGE_REASON = re.compile(r"^\s*(?:Node-Pool '[^']*': )?([A-Za-z]+):")

# ------------------------------------------------------------------ GPU node labels
NODE_LABELS = {
    "mig_strategy": "nvidia.com/mig.strategy",
    "sharing_strategy": "nvidia.com/gpu.sharing-strategy",
    "replicas": "nvidia.com/gpu.replicas",
    "product": "nvidia.com/gpu.product",
    "device_plugin_config": "nvidia.com/device-plugin.config",
    "mps_capable": "nvidia.com/mps.capable",
    "fake_gpu": "run.ai/fake.gpu",
}
MIG_ON = ("single", "mixed")  # GPU feature discovery's strategies; "none" is no MIG


def node_sharing(node_labels):
    """The device-sharing mechanisms a GPU node's labels declare, one reading for every feature:
    ``mig`` (strategy single or mixed), ``time-slicing`` (that strategy, or more than one replica
    a GPU: the replicas label is a count, and one that is no number declares nothing) and ``mps``
    (that strategy, or MPS-capable)."""
    found = set()
    sharing = node_labels.get(NODE_LABELS["sharing_strategy"])
    try:
        replicas = int(node_labels.get(NODE_LABELS["replicas"]) or 1)
    except ValueError:
        replicas = 1
    if node_labels.get(NODE_LABELS["mig_strategy"]) in MIG_ON:
        found.add("mig")
    if sharing == "time-slicing" or replicas > 1:
        found.add("time-slicing")
    if sharing == "mps" or node_labels.get(NODE_LABELS["mps_capable"]) == "true":
        found.add("mps")
    return found


# ------------------------------------------------------------------ marks of our own
DISPOSABLE_ANNOTATION = "kaiops.dev/disposable"


def annotations(obj):
    return meta(obj).get("annotations") or {}


def labels(obj):
    return meta(obj).get("labels") or {}


def sharing_configmap_pattern(prefix):
    """The names of the GPU-sharing ConfigMaps of pods annotated with this prefix."""
    return re.compile(_CM_NAME % re.escape(prefix))


def sharing_configmap_role(name):
    """'env' for the -evar ConfigMap, 'capabilities' for the other."""
    return "env" if (name or "").endswith("-evar") else "capabilities"


def on_sharing_path(pod):
    """A pod that shares a GPU: a fraction, a shared ConfigMap or a GPU group."""
    return (
        FRACTION_ANNOTATION in annotations(pod)
        or SHARED_CM_ANNOTATION in annotations(pod)
        or GPU_GROUP_LABEL in labels(pod)
    )


def is_gpu_sharing_configmap(obj):
    """A ConfigMap of KAI's GPU-sharing path: by name, or owned by a pod with its keys. The
    evidence keeps their values (``bundle/policy.py``); any shape a task returned is read."""
    metadata = obj.get("metadata")
    metadata = metadata if isinstance(metadata, dict) else {}
    name = metadata.get("name") or ""
    if SHARING_CONFIGMAP_NAME.match(name):
        return True
    owners = metadata.get("ownerReferences") or []
    keys = set((obj.get("data") or {}).keys()) if isinstance(obj.get("data"), dict) else set()
    return any(o.get("kind") == "Pod" for o in owners if isinstance(o, dict)) and bool(
        keys & set(SHARING_CONFIGMAP_KEYS)
    )


def bound_gpu_groups(bindrequests):
    """{(namespace, pod): GPU group} from each pod's BindRequest that succeeded: the group its
    portion was reserved in. ``bindrequests``: objects, or watch records ({"object": ...})."""
    out = {}
    for item in bindrequests or []:
        obj = item.get("object", item) if isinstance(item, dict) else {}
        spec = obj.get("spec") or {}
        groups = spec.get("selectedGPUGroups") or []
        succeeded = (obj.get("status") or {}).get("phase") == "Succeeded"
        if spec.get("podName") and succeeded and len(groups) == 1:
            out[(meta(obj).get("namespace"), spec["podName"])] = groups[0]
    return out


def gpu_group(pod, bound):
    """The GPU group a pod was bound in: its successful BindRequest's (``bound``, from
    bound_gpu_groups), its label's only without one. KAI's binder can leave a failed attempt's
    ``runai-gpu-group`` label on a pod that the scheduler's retry bound in another group (real
    KAI, 2026-12-07: the label named the first group through Running, the successful
    BindRequest and the reservation another device)."""
    found = bound.get((meta(pod).get("namespace"), meta(pod).get("name")))
    return found or labels(pod).get(GPU_GROUP_LABEL)


def held_gpu_groups(pod, bound):
    """Every GPU group a pod may hold: its successful BindRequest's and its label's. What
    decides that a group is in use (a reservation pod is stale, a probe left one behind) reads
    both, so that a stale label never makes a held reservation look unused."""
    found = bound.get((meta(pod).get("namespace"), meta(pod).get("name")))
    label = labels(pod).get(GPU_GROUP_LABEL)
    return {g for g in (found, label) if g}


def fraction_pods(pods):
    """The pods on the fraction path: a fraction, memory or shared ConfigMap annotation."""
    return [p for p in pods if any(a in annotations(p) for a in FRACTION_ANNOTATIONS)]


def device_plugin_config_names(policies):
    """The device plugin ConfigMaps the GPU operator's ClusterPolicies name, sorted, once each."""
    names = []
    for policy in policies:
        cfg = ((policy.get("spec") or {}).get("devicePlugin") or {}).get("config") or {}
        if cfg.get("name"):
            names.append(cfg["name"])
    return sorted(set(names))


def specific_reasons(condition):
    """KAI's specific reasons (QueueDoesNotExist, OverLimit) of one scheduling condition: its
    ``reasons[].reason`` when it has them, else its message's prefix before ':'. Never the
    condition's ``reason``: KAI always writes Unschedulable there (kai-contract.md section 14)."""
    listed = [r.get("reason") for r in condition.get("reasons") or [] if r.get("reason")]
    if listed:
        return listed
    found = _MESSAGE_REASON.match(condition.get("message") or "")
    return [found.group(1)] if found else []
