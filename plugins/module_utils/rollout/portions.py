# Copyright: kaiops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""How much of each shared GPU the verification's pods were given at once. Pure.

KAI shares a GPU through a GPU group: the fraction pods of one group run on one device, held by
one reservation pod (label ``runai-gpu-group``, annotation ``run.ai/reserve_for_gpu_index`` naming
the device). KAI-Scheduler #2153: pods created in one burst were packed into one group past 1.0,
up to 4 pods of 0.5 on one card. This module adds up, per device, the portions of the pods that
held it at the same moment - from the watches (when each probe got its group and when it ended)
and, at the end of the window, the other live pods of the probes' groups - with each pod's
portion from its BindRequest (``spec.receivedGPU.portion``, what the scheduler gave) or, without
one, its ``gpu-fraction`` annotation. A pod whose portion cannot be read makes the figure "no
data", never a pass.
"""

import math

from ansible_collections.kaiops.runbooks.plugins.module_utils.k8s.objects import meta as _meta
from ansible_collections.kaiops.runbooks.plugins.module_utils.kai import facts as F

GROUP_LABEL = F.GPU_GROUP_LABEL
DEVICE_ANNOTATION = F.RESERVE_INDEX_ANNOTATION
LIMIT = 1.0
EPSILON = 1e-6  # portions are written with two decimals: 0.33 x 3 must not read as over


def _float(value):
    try:
        out = float(str(value))
    except (TypeError, ValueError):
        return None
    return out if math.isfinite(out) else None


def _ended(obj, rec_type):
    phase = (obj.get("status") or {}).get("phase")
    return (
        rec_type == "DELETED"
        or phase in ("Succeeded", "Failed")
        or bool(_meta(obj).get("deletionTimestamp"))
    )


def bindrequest_portions(bindrequests):
    """{(namespace, pod): portion} from BindRequests (objects or watch records)."""
    out = {}
    for item in bindrequests or []:
        obj = item.get("object", item) if isinstance(item, dict) else {}
        spec = obj.get("spec") or {}
        portion = _float((spec.get("receivedGPU") or {}).get("portion"))
        if spec.get("podName") and portion is not None:
            out[(_meta(obj).get("namespace"), spec["podName"])] = portion
    return out


def pod_portion(pod, by_bindrequest):
    meta = _meta(pod)
    found = by_bindrequest.get((meta.get("namespace"), meta.get("name")))
    if found is not None:
        return found
    return _float((meta.get("annotations") or {}).get(F.FRACTION_ANNOTATION))


def intervals(pod_records):
    """Per probe pod: its group, node, when it held the group (first record with a node and a
    group) and when it stopped (ended, deleted, or None: still holding at the end)."""
    out = {}
    for rec in pod_records or []:
        obj = rec["object"]
        name = _meta(obj).get("name")
        group = (_meta(obj).get("labels") or {}).get(GROUP_LABEL)
        node = (obj.get("spec") or {}).get("nodeName")
        held = out.get(name)
        if held is None and group and node and not _ended(obj, rec["type"]):
            out[name] = {"group": group, "node": node, "start": rec["t"], "end": None, "pod": obj}
        elif held is not None and held["end"] is None:
            if _ended(obj, rec["type"]):
                held["end"] = rec["t"]
            elif rec["type"] != "DELETED":
                held["pod"] = obj
    return out


def devices(reservations):
    """{group: {device key}} from reservation pods: the node and the device it reserved."""
    out = {}
    for item in reservations or []:
        obj = item.get("object", item)
        meta = _meta(obj)
        group = (meta.get("labels") or {}).get(GROUP_LABEL)
        device = (meta.get("annotations") or {}).get(DEVICE_ANNOTATION)
        node = (obj.get("spec") or {}).get("nodeName")
        if group and device and node and device != "-1":
            out.setdefault(group, set()).add("%s/%s" % (node, device))
    return out


def duplicate_reservations(records, before=()):
    """GPU groups that had two reservation pods at once during the window (KAI-Scheduler #1673:
    no bind ever needs two, and the second holds a GPU the scheduler does not count), from the
    reservation namespace's watch records. A group counts when at least one of the pods is new
    (uid not in ``before``): duplicates older than the change are the recovery scan's. The
    duplicates go with their group, so the scan at the window's end no longer sees them."""
    spans = {}  # (group, name) -> [first seen, ended or None, uid]
    for rec in records or []:
        obj = rec.get("object") or {}
        meta = _meta(obj)
        group = (meta.get("labels") or {}).get(GROUP_LABEL)
        if not group or not meta.get("name"):
            continue
        span = spans.setdefault((group, meta["name"]), [rec["t"], None, meta.get("uid")])
        if span[1] is None and _ended(obj, rec["type"]):
            span[1] = rec["t"]
    by_group = {}
    for (group, name), (start, end, uid) in spans.items():
        by_group.setdefault(group, []).append((start, end, name, uid))
    out = []
    for group, pods in sorted(by_group.items()):
        pods.sort(key=lambda p: (p[0], p[2]))
        together = set()
        for i, (_start, end, name, uid) in enumerate(pods):
            for later in pods[i + 1 :]:
                if end is None or later[0] < end:
                    together |= {(name, uid), (later[2], later[3])}
        if together and any(uid not in before for _name, uid in together):
            out.append({"group": group, "pods": sorted(name for name, _uid in together)})
    return out


def _add(sums, keys, portion, name):
    for key in keys:
        sums.setdefault(key, {"portion": 0.0, "pods": []})
        sums[key]["portion"] += portion
        sums[key]["pods"].append(name)


def device_portions(pod_records, bindrequests, reservations, others=None):
    """The most any device was given at once. ``pod_records``: the probes' pod watch records;
    ``bindrequests``: BindRequest objects or records (the probes' and, at the end, the cluster's);
    ``reservations``: reservation pods (records or objects); ``others``: live pods at the end of
    the window outside the probes' and the reservation namespace (those in the probes' groups
    count then)."""
    by_br = bindrequest_portions(bindrequests)
    held = intervals(pod_records)
    # placed by the BindRequest that succeeded, the label only without one (F.gpu_group)
    bound = F.bound_gpu_groups(bindrequests)
    for name, h in held.items():
        h["group"] = bound.get((_meta(h["pod"]).get("namespace"), name), h["group"])
    group_devices = devices(reservations)
    unknown = sorted(n for n, h in held.items() if pod_portion(h["pod"], by_br) is None)
    groups = {h["group"] for h in held.values()}
    worst = {"portion": 0.0, "device": None, "pods": [], "at": None}
    peak = {}  # device -> its most at once, when over the limit
    instants = sorted({h["start"] for h in held.values()}) + [None]  # None: the window's end
    for t in instants:
        sums = {}
        for name, h in held.items():
            holding = (
                h["end"] is None
                if t is None
                else h["start"] <= t and (h["end"] is None or t < h["end"])
            )
            portion = pod_portion(h["pod"], by_br)
            if holding and portion is not None:
                keys = group_devices.get(h["group"]) or {"group/%s" % h["group"]}
                _add(sums, keys, portion, name)
        if t is None:
            _others(sums, others, groups, group_devices, by_br, unknown, bound)
        for key, item in sums.items():
            if item["portion"] > worst["portion"] + EPSILON:
                worst = dict(item, device=key, at=t)
            if item["portion"] > max(LIMIT, (peak.get(key) or {}).get("portion", 0)) + EPSILON:
                peak[key] = dict(item, device=key, at=t, portion=round(item["portion"], 3))
    return {
        "max": round(worst["portion"], 3) if held else None,
        "max_device": worst["device"],
        "max_pods": sorted(worst["pods"]),
        "over": [peak[k] for k in sorted(peak)],
        "unknown": unknown,
        "groups": len(groups),
        "pods": len(held),
        "limit": LIMIT,
        "note": "per device, the portions of the pods holding it at once (BindRequest "
        "receivedGPU.portion, else gpu-fraction); devices from the reservation pods",
    }


def _others(sums, others, groups, group_devices, by_br, unknown, bound):
    """Live pods outside the probes in the probes' groups, at the end of the window."""
    for pod in others or []:
        meta = _meta(pod)
        group = F.gpu_group(pod, bound)
        name = "%s/%s" % (meta.get("namespace"), meta.get("name"))
        if group not in groups or _ended(pod, None):
            continue
        if not (pod.get("spec") or {}).get("nodeName"):
            continue
        portion = pod_portion(pod, by_br)
        if portion is None:
            unknown.append(name)
            continue
        _add(sums, group_devices.get(group) or {"group/%s" % group}, portion, name)
