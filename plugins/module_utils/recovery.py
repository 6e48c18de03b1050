# -*- coding: utf-8 -*-
# Copyright: kaiops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Service layer and rules for recovery from the KAI binder nil-data ConfigMap panic.

- ``RecoveryService.collect`` reads (the client is the layer below): one LIST per kind (Pods,
  ConfigMaps, BindRequests), one GET of the binder Deployment and one of namespace
  kube-system. An API the cluster does not serve, or one the credentials may not read, is
  recorded in ``access``; only a failure to list Pods is fatal (nothing can be judged then).
- ``find`` turns those reads into findings: what is left behind by a failed bind, each
  classified with the evidence that ties it to the panic or to an unrelated cause.
- ``start_latencies`` / ``derive_window``: the observation window from the cluster's own
  measured pod start latencies (rules as data, the clock passed in).
- ``plan``: which object each enabled step acts on; a disabled step plans nothing.
- ``observe``: after interventions, per finding recovered / not recovered / not applicable,
  with the timestamps read from the objects' conditions.

Every function below ``collect`` is pure. What the operator sees on a cluster hit by the
defect is in the project's reference notes ("What an operator observes").
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import datetime
import re

from ansible_collections.kaiops.runbooks.plugins.module_utils.access import read_optional
from ansible_collections.kaiops.runbooks.plugins.module_utils.errors import KaiopsError
from ansible_collections.kaiops.runbooks.plugins.module_utils.inventory import (
    NIL_MAP_REASON,
    SHARED_CM_ANNOTATION,
)

RESERVATION_NAMESPACE = "kai-resource-reservation"
GPU_GROUP_LABEL = "runai-gpu-group"
FRACTION_ANNOTATION = "gpu-fraction"
RESERVE_INDEX_ANNOTATION = "run.ai/reserve_for_gpu_index"
BIND_REQUEST = ("scheduling.run.ai/v1alpha2", "BindRequest")
DEPLOYMENT = ("apps/v1", "Deployment")

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

# The enabled-by-the-user steps and the finding kind each one acts on.
STEPS = {
    "delete_failed_bindrequests": "failed_bindrequest",
    "delete_stale_reservation_pods": "stale_reservation_pod",
    "delete_orphan_configmaps": "orphan_configmap",
    "restart_binder": None,  # acts on the binder Deployment, for the bind failures found
}
DELETE_STEPS = tuple(s for s, kind in STEPS.items() if kind)

# Classifications: how a finding relates to the binder panic.
NIL_MAP = "nil_map_panic"  # the panic's message is on the object itself
STALE = "stale_after_failed_bind"  # left behind by a failed bind (rollback skipped)
OTHER_BIND_ERROR = "other_bind_error"  # a bind failed, for another reason
UNRELATED = "unrelated_pending"  # Pending for resources: not this bug
UNDETERMINED = "undetermined"  # stale state with no failure on record to tie it to

# Finding kinds whose recovery is the pod getting bound.
POD_WORK_KINDS = ("failed_bind", "unbound_group_pod")

_CM_NAME = r"^%s-(i?\d+)(-evar)?$"
_CM_SUFFIX = re.compile(r"^.+-(i?\d+)(-evar)?$")


class RecoveryService(object):
    def __init__(self, client):
        self._client = client

    def _optional(self, access, section, read):
        """Run read(); record 'ok', 'forbidden' or 'not_served' for the section."""
        return read_optional(access, section, read, not_found="not_served")

    def collect(self, kai_namespace="kai-scheduler", binder_deployment="binder"):
        """Every read recovery needs, in one dict. One LIST per kind, never one per object."""
        client = self._client
        access = {}
        raw = {"access": access}
        try:
            raw["pods"] = client.list("v1", "Pod")
        except KaiopsError as exc:
            raise KaiopsError(
                "Failed to list pods: %s" % exc.msg,
                status=exc.status,
                http_status=exc.http_status,
            ) from exc
        access["pods"] = "ok"
        raw["configmaps"] = self._optional(
            access, "configmaps", lambda: client.list("v1", "ConfigMap")
        )
        raw["bind_requests"] = self._optional(
            access, "bind_requests", lambda: client.list(BIND_REQUEST[0], BIND_REQUEST[1])
        )
        raw["binder"] = self._optional(
            access,
            "binder",
            lambda: client.read(DEPLOYMENT[0], DEPLOYMENT[1], binder_deployment, kai_namespace),
        )
        if access["binder"] == "ok" and raw["binder"] is None:
            access["binder"] = "absent"
        kube_system = self._optional(
            access, "kube_system", lambda: client.read("v1", "Namespace", "kube-system")
        )
        raw["disposable"] = (
            _annotations(kube_system or {}).get("kaiops.dev/disposable") == "true"
            if kube_system is not None
            else None
        )
        raw["api_calls"] = client.calls
        return raw


# ---------------------------------------------------------------- helpers (pure)


def _meta(obj):
    return obj.get("metadata") or {}


def _annotations(obj):
    return _meta(obj).get("annotations") or {}


def _labels(obj):
    return _meta(obj).get("labels") or {}


def parse_time(text):
    """RFC 3339 (as the API server writes it) -> aware datetime; None when absent/unreadable."""
    if not text:
        return None
    try:
        return datetime.datetime.strptime(str(text).replace("Z", "+0000"), "%Y-%m-%dT%H:%M:%S%z")
    except ValueError:
        try:
            return datetime.datetime.fromisoformat(str(text).replace("Z", "+00:00"))
        except ValueError:
            return None


def iso(when):
    return when.astimezone(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ") if when else None


def ref(obj):
    meta = _meta(obj)
    return {
        "api_version": obj.get("apiVersion"),
        "kind": obj.get("kind"),
        "namespace": meta.get("namespace"),
        "name": meta.get("name"),
        "uid": meta.get("uid"),
        "resource_version": meta.get("resourceVersion"),
    }


def condition(pod, kind):
    for cond in (pod.get("status") or {}).get("conditions") or []:
        if cond.get("type") == kind:
            return cond
    return None


def is_bound(pod):
    return bool((pod.get("spec") or {}).get("nodeName"))


def is_live(pod):
    phase = (pod.get("status") or {}).get("phase")
    return phase not in ("Succeeded", "Failed") and not _meta(pod).get("deletionTimestamp")


def age_s(obj, now):
    created = parse_time(_meta(obj).get("creationTimestamp"))
    return (now - created).total_seconds() if created else None


def in_scope(namespace, namespaces):
    return not namespaces or namespace in namespaces


def _key(obj):
    meta = _meta(obj)
    return "%s/%s" % (meta.get("namespace"), meta.get("name"))


def _finding(kind, obj, classification, evidence, step=None, since=None, **extra):
    meta = _meta(obj)
    finding = {
        "id": "%s:%s" % (kind, _key(obj)),
        "kind": kind,
        "object": ref(obj),
        "classification": classification,
        "evidence": evidence,
        "step": step,
        "since": since or meta.get("creationTimestamp"),
    }
    finding.update(extra)
    return finding


# ---------------------------------------------------------------- find (pure)


def find(raw, now, namespaces=(), reservation_namespace=RESERVATION_NAMESPACE, min_age_s=300):
    """Findings from collect()'s reads. Stale-state kinds only count objects older than
    min_age_s: a reservation pod or ConfigMap is legitimately unbound for the moment a bind
    takes."""
    access = raw.get("access") or {}
    namespaces = list(namespaces or [])
    pods = raw.get("pods") or []
    configmaps = raw.get("configmaps") or []
    bind_requests = raw.get("bind_requests") or []
    notes = []
    for section in ("bind_requests", "configmaps"):
        if access.get(section) == "not_served":
            notes.append(NOT_SERVED[section])
        elif access.get(section) == "forbidden":
            notes.append(FORBIDDEN[section])
    br_note = {
        "not_served": NOT_SERVED["bind_requests"],
        "forbidden": FORBIDDEN["bind_requests"],
    }.get(access.get("bind_requests"))

    pods_by_key = {_key(p): p for p in pods}
    pods_by_uid = {_meta(p).get("uid"): p for p in pods if _meta(p).get("uid")}
    # GPU groups that a live, bound pod (not a reservation pod) still uses.
    groups_in_use = {
        _labels(p)[GPU_GROUP_LABEL]
        for p in pods
        if GPU_GROUP_LABEL in _labels(p)
        and is_bound(p)
        and is_live(p)
        and _meta(p).get("namespace") != reservation_namespace
    }
    failed_brs = [b for b in bind_requests if (b.get("status") or {}).get("phase") == "Failed"]
    failed_by_pod = {}
    for br in failed_brs:
        pod_key = "%s/%s" % (_meta(br).get("namespace"), (br.get("spec") or {}).get("podName"))
        failed_by_pod.setdefault(pod_key, []).append(br)

    findings = []
    failed_groups = {}  # group -> classification of the failed bind that left it

    # 1. Work that is pending: unbound pods with a failed bind, a GPU group, or no resources.
    for pod in pods:
        meta = _meta(pod)
        ns = meta.get("namespace")
        if ns == reservation_namespace or not in_scope(ns, namespaces):
            continue
        if is_bound(pod) or not is_live(pod):
            continue
        fraction = FRACTION_ANNOTATION in _annotations(pod)
        group = _labels(pod).get(GPU_GROUP_LABEL)
        pod_bound = condition(pod, "PodBound")
        bind_failed = pod_bound is not None and pod_bound.get("status") == "False"
        brs = failed_by_pod.get(_key(pod), [])
        scheduled = condition(pod, "PodScheduled")
        evidence = []
        if fraction:
            evidence.append(
                "annotation gpu-fraction=%s (GPU-sharing path)"
                % _annotations(pod)[FRACTION_ANNOTATION]
            )
        if bind_failed:
            evidence.append(
                "condition PodBound=False reason %s since %s: %s"
                % (
                    pod_bound.get("reason"),
                    pod_bound.get("lastTransitionTime"),
                    _short(pod_bound.get("message")),
                )
            )
        for br in brs:
            status = br.get("status") or {}
            evidence.append(
                "BindRequest %s phase Failed (failedAttempts %s): %s"
                % (
                    _meta(br).get("name"),
                    status.get("failedAttempts"),
                    _short(status.get("reason")),
                )
            )
        texts = [str((b.get("status") or {}).get("reason") or "") for b in brs]
        if bind_failed:
            texts.append(str(pod_bound.get("message") or ""))
        nil_map = any(NIL_MAP_REASON in t for t in texts)
        if fraction and (bind_failed or brs):
            classification = NIL_MAP if nil_map else OTHER_BIND_ERROR
            evidence.append(
                "'%s' in the failure: the binder panic on a ConfigMap with nil data"
                % NIL_MAP_REASON
                if nil_map
                else "the failure does not say '%s': a bind error, not shown to be this panic"
                % NIL_MAP_REASON
            )
            if group:
                evidence.append("label %s=%s kept after the failed bind" % (GPU_GROUP_LABEL, group))
                failed_groups[group] = classification
            findings.append(
                _finding(
                    "failed_bind",
                    pod,
                    classification,
                    evidence,
                    since=(pod_bound or {}).get("lastTransitionTime")
                    or (_meta(brs[0]).get("creationTimestamp") if brs else None),
                    gpu_group=group,
                    bind_requests=[_meta(b).get("name") for b in brs],
                )
            )
            continue
        unschedulable = (
            scheduled is not None
            and scheduled.get("status") == "False"
            and scheduled.get("reason") == "Unschedulable"
        )
        if group:
            old_enough = (age_s(pod, now) or 0) >= min_age_s
            if not old_enough and not unschedulable:
                continue
            evidence.append(
                "label %s=%s but no nodeName: a bind that completed or was rolled back "
                "leaves neither" % (GPU_GROUP_LABEL, group)
            )
            if unschedulable:
                classification = UNRELATED
                evidence.append(
                    "condition PodScheduled=False reason Unschedulable: %s - Pending for "
                    "resources, not the binder panic" % _short(scheduled.get("message"))
                )
            else:
                classification = UNDETERMINED
                evidence.append(
                    br_note + " for this pod"
                    if br_note
                    else "no failed BindRequest and no PodBound condition for this pod: "
                    "cannot tie it to the binder panic"
                )
            findings.append(
                _finding("unbound_group_pod", pod, classification, evidence, gpu_group=group)
            )
            continue
        if fraction and unschedulable:
            evidence.append(
                "condition PodScheduled=False reason Unschedulable since %s: %s - Pending for "
                "resources, not the binder panic (no bind was attempted)"
                % (scheduled.get("lastTransitionTime"), _short(scheduled.get("message")))
            )
            findings.append(
                _finding(
                    "pending_unschedulable",
                    pod,
                    UNRELATED,
                    evidence,
                    since=scheduled.get("lastTransitionTime"),
                )
            )

    # 2. Failed BindRequests (the objects themselves).
    for br in failed_brs:
        meta = _meta(br)
        if not in_scope(meta.get("namespace"), namespaces):
            continue
        spec, status = br.get("spec") or {}, br.get("status") or {}
        reason = str(status.get("reason") or "")
        pod = pods_by_key.get("%s/%s" % (meta.get("namespace"), spec.get("podName")))
        evidence = [
            "phase Failed, failedAttempts %s, reason: %s"
            % (status.get("failedAttempts"), _short(reason) or "(none)"),
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
            failed_groups.setdefault(group, classification)
        findings.append(
            _finding(
                "failed_bindrequest",
                br,
                classification,
                evidence,
                step="delete_failed_bindrequests",
                pod=spec.get("podName"),
            )
        )

    # 3. Reservation pods whose GPU group no live bound pod uses.
    for pod in pods:
        meta = _meta(pod)
        if meta.get("namespace") != reservation_namespace:
            continue
        if not in_scope(meta.get("namespace"), namespaces) or not is_live(pod):
            continue
        group = _labels(pod).get(GPU_GROUP_LABEL)
        if not group or group in groups_in_use:
            continue
        age = age_s(pod, now)
        if age is None or age < min_age_s:
            continue
        evidence = [
            "label %s=%s; no live bound pod carries this group" % (GPU_GROUP_LABEL, group),
            "age %ds >= %ds (kai_recovery_min_age_s)" % (age, min_age_s),
        ]
        if RESERVE_INDEX_ANNOTATION in _annotations(pod):
            evidence.append(
                "annotation %s=%s"
                % (RESERVE_INDEX_ANNOTATION, _annotations(pod)[RESERVE_INDEX_ANNOTATION])
            )
        if group in failed_groups:
            classification = STALE
            evidence.append(
                "the group of a failed bind (%s): its rollback was skipped" % failed_groups[group]
            )
        else:
            classification = UNDETERMINED
            evidence.append(
                (br_note + " for this group")
                if br_note
                else "no failed bind on record for this group"
            )
        findings.append(
            _finding(
                "stale_reservation_pod",
                pod,
                classification,
                evidence,
                step="delete_stale_reservation_pods",
                gpu_group=group,
            )
        )

    # 4. GPU-sharing ConfigMaps whose owner pod is gone or not bound.
    seen = set()
    failed_pods = {f["object"]["uid"]: f for f in findings if f["kind"] == "failed_bind"}
    for cm in configmaps:
        meta = _meta(cm)
        ns = meta.get("namespace")
        if not in_scope(ns, namespaces) or _key(cm) in seen:
            continue
        owners = meta.get("ownerReferences") or []
        single_pod_owner = len(owners) == 1 and owners[0].get("kind") == "Pod"
        owner = None
        named_by = None
        for pod in pods:
            prefix = _annotations(pod).get(SHARED_CM_ANNOTATION)
            if (
                prefix
                and _meta(pod).get("namespace") == ns
                and re.match(_CM_NAME % re.escape(prefix), meta.get("name") or "")
            ):
                owner, named_by = pod, prefix
                break
        if owner is None and single_pod_owner and _CM_SUFFIX.match(meta.get("name") or ""):
            owner = pods_by_uid.get(owners[0].get("uid"))
        elif owner is None:
            continue
        if named_by is None and owner is not None and not _on_sharing_path(owner):
            continue  # a pod-owned ConfigMap of a pod that does not share a GPU
        age = age_s(cm, now)
        if age is None or age < min_age_s:
            continue
        if owner is not None and is_bound(owner) and is_live(owner):
            continue
        seen.add(_key(cm))
        has_data = bool(cm.get("data")) or bool(cm.get("binaryData"))
        evidence = []
        if named_by:
            evidence.append(
                "named after pod %s's annotation %s=%s"
                % (_meta(owner).get("name"), SHARED_CM_ANNOTATION, named_by)
            )
        if single_pod_owner:
            evidence.append(
                "single owner: Pod %s (uid %s)" % (owners[0].get("name"), owners[0].get("uid"))
            )
        if owner is None:
            evidence.append("owner pod %s is gone" % owners[0].get("name"))
        else:
            evidence.append("owner pod %s is not bound" % _meta(owner).get("name"))
        role = "env" if (meta.get("name") or "").endswith("-evar") else "capabilities"
        trigger = (
            role == "capabilities"
            and not has_data
            and single_pod_owner
            and owner is not None
            and owners[0].get("uid") == _meta(owner).get("uid")
        )
        evidence.append("%s ConfigMap, %s" % (role, "with data" if has_data else "no data"))
        if trigger:
            evidence.append(
                "no data and owned by exactly its pod: the precondition of the panic - an affected "
                "binder fails on this pod again until this ConfigMap changes"
            )
        owner_failure = failed_pods.get(_meta(owner).get("uid")) if owner is not None else None
        if owner_failure is not None:
            classification = (
                NIL_MAP if owner_failure["classification"] == NIL_MAP and trigger else STALE
            )
            evidence.append("its pod's bind failed (%s)" % owner_failure["classification"])
        else:
            classification = UNDETERMINED
            evidence.append(
                (br_note + " for its pod") if br_note else "no failed bind on record for its pod"
            )
        findings.append(
            _finding(
                "orphan_configmap",
                cm,
                classification,
                evidence,
                step="delete_orphan_configmaps",
                role=role,
                has_data=has_data,
                trigger_ready=trigger,
                owner_pod=_meta(owner).get("name") if owner is not None else owners[0].get("name"),
            )
        )

    summary = {
        "findings": len(findings),
        "by_kind": _count(findings, "kind"),
        "by_classification": _count(findings, "classification"),
    }
    return {"findings": findings, "notes": notes, "summary": summary}


def _on_sharing_path(pod):
    return (
        FRACTION_ANNOTATION in _annotations(pod)
        or SHARED_CM_ANNOTATION in _annotations(pod)
        or GPU_GROUP_LABEL in _labels(pod)
    )


def _count(items, key):
    out = {}
    for item in items:
        out[item[key]] = out.get(item[key], 0) + 1
    return out


def _short(text, limit=240):
    text = " ".join(str(text or "").split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


# ---------------------------------------------------------------- window (pure)

WINDOW_RULE = {
    "multiplier": 3,
    "floor_s": 30,
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
        created = parse_time(_meta(pod).get("creationTimestamp"))
        started = pod_started(pod)
        if not created or not started or started < created:
            continue
        if (now - created).total_seconds() > lookback_s:
            continue
        samples.append(
            {
                "namespace": _meta(pod).get("namespace"),
                "name": _meta(pod).get("name"),
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
    if explicit_s:
        window, source = int(explicit_s), "kai_recovery_window_s (given)"
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


def plan(findings, steps, binder=None, kai_namespace="kai-scheduler", namespaces=()):
    """Interventions for the enabled steps only, each on one object found; and why a step
    enabled has nothing to do. binder: ref() of the binder Deployment, or None."""
    planned, idle = [], []
    for step in steps:
        if step not in STEPS:
            raise KaiopsError(
                "Failed to plan recovery step %r: unknown step; use one of %s"
                % (step, sorted(STEPS)),
                status="invalid_input",
            )
    for step in [s for s in STEPS if s in steps]:
        kind = STEPS[step]
        if kind is None:
            acted = [
                f["id"]
                for f in findings
                if f["kind"] in ("failed_bind", "failed_bindrequest", "orphan_configmap")
                and f["classification"] in (NIL_MAP, STALE, OTHER_BIND_ERROR)
            ]
            if not acted:
                idle.append({"step": step, "reason": "no failed bind found to retry"})
            elif not binder:
                idle.append(
                    {
                        "step": step,
                        "reason": "no binder Deployment in namespace %s on this cluster"
                        % kai_namespace,
                    }
                )
            else:
                planned.append(
                    {
                        "step": step,
                        "action": "restart",
                        "target": dict(binder),
                        "findings": acted,
                        "why": "rolling restart of the binder, for %d bind failure(s) found: %s"
                        % (len(acted), ", ".join(acted[:5])),
                    }
                )
            continue
        targets = [
            f
            for f in findings
            if f["kind"] == kind and in_scope(f["object"]["namespace"], namespaces)
        ]
        if not targets:
            idle.append({"step": step, "reason": "nothing of kind %s found" % kind})
        for finding in targets:
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


# ---------------------------------------------------------------- observe (pure)


def observe(baseline, raw, interventions=(), now=None, reservation_namespace=RESERVATION_NAMESPACE):
    """Per baseline finding: recovered / not_recovered / not_applicable, with when and why."""
    pods = raw.get("pods") or []
    by_uid = {}
    for kind_items in (pods, raw.get("configmaps") or [], raw.get("bind_requests") or []):
        for obj in kind_items:
            if _meta(obj).get("uid"):
                by_uid[_meta(obj)["uid"]] = obj
    pods_by_key = {_key(p): p for p in pods}
    groups_in_use = {}
    for p in pods:
        group = _labels(p).get(GPU_GROUP_LABEL)
        if (
            group
            and is_bound(p)
            and is_live(p)
            and _meta(p).get("namespace") != reservation_namespace
        ):
            groups_in_use.setdefault(group, p)
    deleted = {}
    for item in interventions or []:
        if item.get("outcome") == "deleted":
            deleted[(item.get("target") or {}).get("uid")] = item
    read_at = iso(now)
    outcomes = []
    for finding in baseline:
        obj = finding["object"]
        current = by_uid.get(obj.get("uid"))
        if finding["classification"] == UNRELATED:
            verdict, at, why = (
                "not_applicable",
                None,
                "Pending for resources: not this failure, recovery does not act on it",
            )
        elif finding["kind"] in POD_WORK_KINDS or finding["kind"] == "failed_bindrequest":
            pod = current
            if finding["kind"] == "failed_bindrequest":
                pod = pods_by_key.get("%s/%s" % (obj["namespace"], finding.get("pod")))
            verdict, at, why = _pod_outcome(pod)
            if finding["kind"] == "failed_bindrequest":
                gone = (
                    "the BindRequest is gone"
                    if current is None
                    else "the BindRequest is still there"
                )
                why = "%s; %s" % (gone, why)
        elif finding["kind"] == "stale_reservation_pod":
            user = groups_in_use.get(finding.get("gpu_group"))
            if current is None:
                verdict, at, why = _gone(obj, deleted, read_at)
            elif user is not None:
                cond = condition(user, "PodScheduled") or {}
                verdict, at = "recovered", cond.get("lastTransitionTime")
                why = "its GPU group is used again by bound pod %s" % _key(user)
            else:
                verdict, at, why = "not_recovered", None, "still there, its GPU group unused"
        elif finding["kind"] == "orphan_configmap":
            owner = next(
                (
                    p
                    for p in pods
                    if _meta(p).get("namespace") == obj["namespace"]
                    and _meta(p).get("name") == finding.get("owner_pod")
                ),
                None,
            )
            if current is None:
                verdict, at, why = _gone(obj, deleted, read_at)
            elif owner is not None and is_bound(owner) and is_live(owner):
                cond = condition(owner, "PodScheduled") or {}
                verdict, at = "recovered", cond.get("lastTransitionTime")
                why = "its owner pod %s is bound now" % finding.get("owner_pod")
            else:
                verdict, at, why = "not_recovered", None, "still there, its owner pod not bound"
        else:  # pragma: no cover - every kind is handled above
            verdict, at, why = "not_applicable", None, "unknown kind"
        outcomes.append(
            {"finding": finding["id"], "verdict": verdict, "at": at, "why": why, "read_at": read_at}
        )
    pending = [o for o in outcomes if o["verdict"] == "not_recovered"]
    return {
        "outcomes": outcomes,
        "pending": len(pending),
        "summary": _count(outcomes, "verdict"),
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
