# Copyright: kaiops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The plan of a GPU-access run, from the cluster's configuration. Pure functions.

Made before any expectation is declared and before any workload exists, from the reads of
``client.GpuAccessClient.configuration``:

- ``enforcement``: what KAI is configured to enforce - GPU sharing, ``blockNvidiaVisibleDevices``,
  the HAMi-core memory limit - each with the sources it was read from (``kai-config`` and the
  admission and binder container arguments, which are what the running components obey);
- ``queues``: whether the queues the cases use exist, their GPU limit and parent;
- ``candidate_nodes``: the GPU nodes a probe pod can land on (node selector, taints and
  tolerations, cordons) and their per-device memory (label ``nvidia.com/gpu.memory``);
- ``contention``: the declared figures of the contention case: each pod asks for ``share`` of
  the largest candidate device, so that each exceeds its portion and the two together exceed
  the device wherever KAI puts them;
- ``skipped``: the cases that cannot run here, with the reason (never counted as passed);
- ``problems``: what must stop the run before anything is created (an option naming a queue
  that exists where it must not, a leftover of an earlier run).
"""

import json
import math
from decimal import Decimal

from ansible_collections.kaiops.runbooks.plugins.module_utils.kai import facts
from ansible_collections.kaiops.runbooks.plugins.module_utils.vocabulary import whole

GPU_RESOURCE = "nvidia.com/gpu"
GPU_MEMORY_LABEL = "nvidia.com/gpu.memory"
BLOCK_ARG = "--block-nvidia-visible-devices"
HAMI_ARG = "--hami-core-enabled"

# What each case needs of the cluster; a case whose need is not met is not run, with the reason.
NEED_REASONS = {
    "kai": "KAI Scheduler is not installed on this cluster",
    "sharing": "KAI GPU sharing is off on this cluster (kai-config / admission)",
}
CHECK_MODE_REASON = "--check run: no workload was started"
# Cases whose probes need a GPU node to be scheduled on.
GPU_CASES = (
    "whole_gpu",
    "concurrent",
    "fractional",
    "fractional_sharing",
    "contention",
)


def _spec(obj):
    return (obj or {}).get("spec") or {}


def _args(deployment):
    containers = ((_spec(deployment).get("template") or {}).get("spec") or {}).get("containers")
    return [str(a) for a in ((containers or [{}])[0].get("args") or [])]


def _arg_value(args, name):
    for i, arg in enumerate(args):
        if arg == name and i + 1 < len(args):
            return args[i + 1]
        if arg.startswith(name + "="):
            return arg.split("=", 1)[1]
    return None


def _deployment(raw, name):
    for dep in raw.get("deployments") or []:
        if (dep.get("metadata") or {}).get("name") == name:
            return dep
    return None


def _setting(name, config_value, config_where, args_value, args_where, args_read):
    """One enforcement setting: what the running component obeys (its arguments) wins."""
    sources = []
    if config_value is not None:
        sources.append("%s=%s" % (config_where, "true" if config_value else "false"))
    if args_read:
        sources.append(
            "%s: %s" % (args_where, {None: "absent", True: "true", False: "false"}[args_value])
        )
    if args_read:
        enabled = bool(args_value)
    elif config_value is not None:
        enabled = bool(config_value)
    else:
        enabled = None
    note = None
    if args_read and config_value is not None and bool(config_value) != enabled:
        note = (
            "kai-config and the running component disagree on %s: the component's arguments "
            "are what it obeys" % name
        )
    return {"enabled": enabled, "sources": sources, "note": note}


def enforcement(raw):
    """GPU sharing, blockNvidiaVisibleDevices and HAMi-core as configured and as run."""
    spec = _spec(raw.get("kai_config"))
    admission_cfg = spec.get("admission") or {}
    binder_cfg = spec.get("binder") or {}
    admission = _deployment(raw, facts.ADMISSION)
    binder = _deployment(raw, facts.BINDER)
    admission_args = _args(admission) if admission else []
    binder_args = _args(binder) if binder else []
    plugins = {}
    raw_plugins = _arg_value(binder_args, "--plugins")
    if raw_plugins:
        try:
            plugins = json.loads(raw_plugins)
        except ValueError:
            plugins = {}
    cfg_hami = ((binder_cfg.get("plugins") or {}).get("hamicore") or {}).get("enabled")
    args_hami = facts.bool_flag(admission_args, HAMI_ARG)
    if args_hami is None and "hamicore" in plugins:
        args_hami = bool((plugins.get("hamicore") or {}).get("enabled"))
    return {
        "gpu_sharing": _setting(
            "gpuSharing",
            admission_cfg.get("gpuSharing"),
            "kai-config spec.admission.gpuSharing",
            facts.bool_flag(admission_args, facts.SHARING_ARG),
            "admission argument " + facts.SHARING_ARG,
            admission is not None,
        ),
        "block_nvidia_visible_devices": _setting(
            "blockNvidiaVisibleDevices",
            admission_cfg.get("blockNvidiaVisibleDevices"),
            "kai-config spec.admission.blockNvidiaVisibleDevices",
            facts.bool_flag(admission_args, BLOCK_ARG),
            "admission argument " + BLOCK_ARG,
            admission is not None,
        ),
        "hami_core": _setting(
            "the HAMi-core memory limit",
            cfg_hami,
            "kai-config spec.binder.plugins.hamicore.enabled",
            args_hami,
            "admission argument %s / binder plugin hamicore" % HAMI_ARG,
            admission is not None or binder is not None,
        ),
    }


def queues(raw, names):
    """{name: {exists, gpu_limit, parent}} for the named queues; exists None when unreadable."""
    found = {}
    for queue in raw.get("queues") or []:
        meta = queue.get("metadata") or {}
        gpu = ((_spec(queue).get("resources") or {}).get("gpu")) or {}
        found[meta.get("name")] = {
            "exists": True,
            "gpu_limit": gpu.get("limit"),
            "parent": _spec(queue).get("parentQueue"),
            "labels": meta.get("labels") or {},
        }
    readable = raw.get("queues") is not None
    out = {}
    for name in names:
        if not name:
            continue
        out[name] = found.get(
            name, {"exists": False if readable else None, "gpu_limit": None, "parent": None}
        )
    return out


def _tolerated(taint, tolerations):
    for tol in tolerations or []:
        op = tol.get("operator") or "Equal"
        if tol.get("effect") and tol.get("effect") != taint.get("effect"):
            continue
        if op == "Exists" and not tol.get("key"):
            return True
        if tol.get("key") != taint.get("key"):
            continue
        if op == "Exists" or (tol.get("value") or "") == (taint.get("value") or ""):
            return True
    return False


def candidate_nodes(nodes, node_selector, tolerations):
    """The GPU nodes a probe can be scheduled on, each {name, gpus, gpu_memory_mib}."""
    out = []
    for node in nodes or []:
        meta = node.get("metadata") or {}
        labels = meta.get("labels") or {}
        if any(labels.get(k) != str(v) for k, v in (node_selector or {}).items()):
            continue
        if _spec(node).get("unschedulable"):
            continue
        taints = [
            t
            for t in _spec(node).get("taints") or []
            if t.get("effect") in ("NoSchedule", "NoExecute")
        ]
        if any(not _tolerated(t, tolerations) for t in taints):
            continue
        gpus = whole(((node.get("status") or {}).get("allocatable") or {}).get(GPU_RESOURCE)) or 0
        if gpus <= 0:
            continue
        out.append(
            {
                "name": meta.get("name"),
                "gpus": gpus,
                "gpu_memory_mib": whole(labels.get(GPU_MEMORY_LABEL)),
                "fake": labels.get(facts.NODE_LABELS["fake_gpu"]) == "true",
            }
        )
    return sorted(out, key=lambda n: n["name"] or "")


def contention(nodes, share, fraction, fallback_mib):
    """Declared figures of the contention case (MiB as integers, share and portion as text)."""
    share_d, fraction_d = Decimal(str(share)), Decimal(str(fraction))
    known = [n for n in nodes if n.get("gpu_memory_mib")]
    if not known:
        return {
            "share": str(share_d),
            "device_memory_mib": None,
            "alloc_mib": int(fallback_mib),
            "portion_mib": None,
            "basis": "no candidate node gives its device memory (label %s): each pod asks for "
            "kai_gpu_access_alloc_mib = %s MiB" % (GPU_MEMORY_LABEL, fallback_mib),
        }
    top = max(known, key=lambda n: n["gpu_memory_mib"])
    memory = top["gpu_memory_mib"]
    alloc = int(math.ceil(share_d * memory))
    return {
        "share": str(share_d),
        "device_memory_mib": memory,
        "alloc_mib": alloc,
        "portion_mib": int(fraction_d * memory),
        "basis": "%s x %s MiB (label %s of %s, the largest device a probe can land on)"
        % (share_d, memory, GPU_MEMORY_LABEL, top["name"]),
    }


def skipped(needs, kai, check_mode):
    """{case: reason} for the cases that cannot run; every case under --check."""
    out = {}
    installed = bool((kai or {}).get("installed"))
    sharing_off = (kai or {}).get("gpu_sharing") is False
    for case, wanted in (needs or {}).items():
        if check_mode:
            out[case] = CHECK_MODE_REASON
        elif "kai" in (wanted or []) and not installed:
            out[case] = NEED_REASONS["kai"]
        elif "sharing" in (wanted or []) and sharing_off:
            out[case] = NEED_REASONS["sharing"]
    return out


def _carries(labels, owned):
    """True when ``labels`` hold every one of ``owned`` (and ``owned`` names at least one)."""
    owned = owned or {}
    return bool(owned) and all((labels or {}).get(k) == v for k, v in owned.items())


def _policy_queue_checks(found, options):
    """(problems, leftovers) of the policy_queue case's queues: the missing queue must not
    exist; the zero-GPU queue, when it exists, must be a leftover of this role's to remove."""
    problems, leftovers = [], []
    missing = found.get(options.get("missing_queue")) or {}
    if missing.get("exists"):
        problems.append(
            "kai_gpu_access_missing_queue '%s' exists on the cluster: the outsider must name "
            "a queue that does not exist" % options.get("missing_queue")
        )
    zero = found.get(options.get("zero_queue")) or {}
    if zero.get("exists") and _carries(zero.get("labels"), options.get("owned_labels")):
        # created by this role and left by a run killed part way: removed before planting
        leftovers.append(
            {"kind": "Queue", "name": options.get("zero_queue"), "labels": zero["labels"]}
        )
    elif zero.get("exists"):
        problems.append(
            "Queue %s already exists and does not carry this role's labels %s: it is not "
            "ours, so it is neither reused nor deleted: delete it "
            "(kubectl delete queues.scheduling.run.ai %s) or set kai_gpu_access_zero_queue"
            % (
                options.get("zero_queue"),
                options.get("owned_labels") or {},
                options.get("zero_queue"),
            )
        )
    if options.get("zero_queue") in (options.get("queue"), options.get("missing_queue")):
        problems.append(
            "kai_gpu_access_zero_queue must differ from kai_gpu_access_queue and "
            "kai_gpu_access_missing_queue"
        )
    return problems, leftovers


def build_plan(raw, options, kai, check_mode):
    """The whole plan; ``options`` are the module's parameters."""
    names = [options.get("queue"), options.get("missing_queue"), options.get("zero_queue")]
    found = queues(raw, names)
    nodes = candidate_nodes(
        raw.get("nodes"), options.get("node_selector"), options.get("tolerations")
    )
    skip = skipped(options.get("needs") or {}, kai, check_mode)
    selected = [c for c in options.get("cases") or [] if c not in skip]
    problems = []
    leftovers = []
    kai_cases = [c for c in selected if "kai" in ((options.get("needs") or {}).get(c) or [])]
    sharing_queue = found.get(options.get("queue")) or {}
    if kai_cases and sharing_queue.get("exists") is False:
        problems.append(
            "kai_gpu_access_queue '%s' does not exist on the cluster: the KAI cases (%s) would "
            "wait for it; name an existing queue" % (options.get("queue"), ", ".join(kai_cases))
        )
    if "policy_queue" in selected:
        more, leftovers = _policy_queue_checks(found, options)
        problems += more
    nodes_read = raw.get("nodes") is not None
    if nodes_read and not nodes and any(c in GPU_CASES for c in selected):
        problems.append(
            "no GPU node can take the probes (allocatable %s, kai_gpu_access_node_selector, "
            "taints not in kai_gpu_access_tolerations, cordons): nothing would be scheduled"
            % GPU_RESOURCE
        )
    return {
        "enforcement": enforcement(raw),
        "queues": found,
        "zero_queue_parent": sharing_queue.get("parent"),
        "candidate_nodes": nodes,
        "contention": contention(
            nodes, options.get("contention_share"), options.get("fraction"), options["alloc_mib"]
        ),
        "skipped": skip,
        "problems": problems,
        "leftovers": leftovers,
        "access": raw.get("access") or {},
    }
