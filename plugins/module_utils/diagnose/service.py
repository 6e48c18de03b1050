# -*- coding: utf-8 -*-
# Copyright: kaiops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Service layer of diagnose: the client's reads turned into the classifier's snapshot, and the
cluster's diagnosis. Pure: no I/O, the clock passed in.

The causes, their rules and their order are the shared classifier's (``scan/pending.py``),
so ``recovery.yml`` gives a Pending pod the same cause as ``diagnose.yml``.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.kaiops.runbooks.plugins.module_utils.k8s.objects import iso, meta
from ansible_collections.kaiops.runbooks.plugins.module_utils.kai import facts
from ansible_collections.kaiops.runbooks.plugins.module_utils.scan.pending import (
    SHARING_ARG,
    classify,
)


def _flag(args, name):
    """True/False for ``--name=true|false`` (or a bare ``--name``), None when absent."""
    for arg in args:
        if arg == name:
            return True
        if arg.startswith(name + "="):
            return arg.split("=", 1)[1].strip().lower() in ("true", "1", "yes")
    return None


def sharing(deployments, config, kai_namespace):
    """Whether GPU sharing is on, and the object and field that say so: the admission
    container's flag first, else kai-config's spec.admission.gpuSharing."""
    admission = next((d for d in deployments or [] if meta(d).get("name") == facts.ADMISSION), None)
    for container in ((admission or {}).get("spec") or {}).get("template", {}).get("spec", {}).get(
        "containers"
    ) or []:
        found = _flag(list(container.get("args") or []), SHARING_ARG)
        if found is not None:
            return {
                "enabled": found,
                "kind": "Deployment",
                "namespace": kai_namespace,
                "name": facts.ADMISSION,
                "field": "spec.template.spec.containers[%s].args" % container.get("name"),
            }
    configured = (((config or {}).get("spec") or {}).get("admission") or {}).get("gpuSharing")
    if configured is not None:
        return {
            "enabled": bool(configured),
            "kind": "Config",
            "namespace": None,
            "name": facts.KAI_CONFIG_NAME,
            "field": "spec.admission.gpuSharing",
        }
    return {"enabled": None}


def snapshot(raw):
    """The classifier's snapshot (``scan/pending.py`` SECTIONS) of the client's reads."""
    pods = raw.get("pods") or []
    reservation_ns = raw.get("reservation_namespace") or facts.RESERVATION_NAMESPACE
    kai_ns = raw.get("kai_namespace") or facts.NAMESPACE
    return {
        "access": raw.get("access") or {},
        "kai_namespace": kai_ns,
        "reservation_namespace": reservation_ns,
        "scheduler_name": raw.get("scheduler_name") or facts.SCHEDULER_NAME,
        "pods": pods,
        "podgroups": raw.get("podgroups") or [],
        "queues": raw.get("queues") or [],
        "bindrequests": raw.get("bindrequests") or [],
        "reservation_pods": [
            p
            for p in pods
            if meta(p).get("namespace") == reservation_ns
            and facts.labels(p).get("app") == "kai-resource-reservation"
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


def diagnose(raw, now, cluster, namespaces=()):
    """The cluster's diagnosis: each Pending pod's cause with its proofs, grouped by cause."""
    found = classify(snapshot(raw), now, namespaces)
    access = raw.get("access") or {}
    # partial: a section the credentials may not read or the cluster does not serve (logs that
    # were not asked for are a choice, not a gap).
    refused = [s for s, state in access.items() if state in ("forbidden", "not_served")]
    return {
        "cluster": cluster,
        "status": "partial" if refused else "ok",
        "read_at": iso(now),
        "namespaces": list(namespaces or []),
        "pending": len(found["pods"]),
        "by_cause": found["by_cause"],
        "pods": found["pods"],
        "notes": found["notes"],
        "access": access,
        "api_calls": raw.get("api_calls"),
    }
