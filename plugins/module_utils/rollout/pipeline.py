# -*- coding: utf-8 -*-
# Copyright: kaiops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The rollout as a pipeline: its stages as data, and one record per cluster. Pure.

``STAGES`` lists the rollout's steps in order, which operation of the role ``kai_rollout`` runs
each, and whether it is built; a step that is not built is reported as not run with its
``reason`` (the policy lives here, not in the role). The record of a cluster is made by
``new_record`` (the change request) and only ever added to, by ``add_skip``, ``add_inventory``,
``add_snapshot`` and ``add_failure``: the role keeps what the module ``kai_rollout_record``
returns and never writes a gate or a step itself. The report (``rollout/report.py``) is built
from the records.

A record: ``{schema, cluster, request, request_well_formed, current_version, inventory_status,
gates, steps, evidence, regression, snapshot_plan}``; gates as ``rollout/gates.py`` makes them,
steps ``{step, status, reason}`` with status ``done``, ``failed`` or ``not_run``.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import copy

from ansible_collections.kaiops.runbooks.plugins.module_utils.kai import facts
from ansible_collections.kaiops.runbooks.plugins.module_utils.rollout.gates import (
    INVALID_WAIVER,
    cluster_gates,
    failed,
    failure_gate,
    snapshot_gate,
)

SCHEMA = "kaiops.rollout-record/v1"
STEP_STATUSES = ("done", "failed", "not_run")
NOT_BUILT = (
    "not built yet: the Helm upgrade, the probe verification and the automatic rollback are the "
    "rollout's next operations (issue 6)"
)

STAGES = (
    {"step": "request", "operation": "request", "built": True},
    {"step": "inventory", "operation": "preflight", "built": True},
    {"step": "snapshot", "operation": "preflight", "built": True},
    {"step": "upgrade", "operation": "upgrade", "built": False, "reason": NOT_BUILT},
    {"step": "verify", "operation": "verify", "built": False, "reason": "not built yet (issue 6)"},
    {
        "step": "rollback",
        "operation": "rollback",
        "built": False,
        "reason": "not built yet (issue 6)",
    },
)
REFUSED_BEFORE_CLUSTER = "change request refused before any cluster call"


def pending_steps():
    """The steps not built yet, each {step, reason}, in pipeline order."""
    return [{"step": s["step"], "reason": s["reason"]} for s in STAGES if not s["built"]]


def _step(step, status, reason):
    return {"step": step, "status": status, "reason": reason}


def new_record(cluster, request, gates, regression=None, link=None):
    """The record of one cluster after its change request was judged (no cluster was read).

    The request is well-formed when every request gate passed except, possibly, the regression
    evidence missing: then the read-only cluster checks still run, so the one refusal names every
    reason. A malformed request (a malformed waiver included) reads no cluster at all.
    """
    bad = [g["gate"] for g in failed(gates)]
    malformed = [
        g
        for g in failed(gates)
        if g["gate"] != "regression_evidence" or g["figure"] == INVALID_WAIVER
    ]
    return {
        "schema": SCHEMA,
        "cluster": cluster,
        "request": request,
        "request_well_formed": not malformed,
        "current_version": None,
        "inventory_status": None,
        "gates": list(gates),
        "steps": [
            _step(
                "request",
                "done",
                "failed gates: %s" % ", ".join(bad) if bad else "every request gate passed",
            )
        ],
        # The passing reproduce report, relative to this run's folder.
        "evidence": [link] if link else [],
        "regression": regression,
        "snapshot_plan": None,
    }


def _copy(record):
    out = copy.deepcopy(record or {})
    for key in ("gates", "steps", "evidence"):
        out.setdefault(key, [])
    return out


def add_skip(record, reason=REFUSED_BEFORE_CLUSTER):
    """The cluster steps of a malformed request: not run, with the reason."""
    out = _copy(record)
    out["steps"] += [_step("inventory", "not_run", reason), _step("snapshot", "not_run", reason)]
    return out


def add_inventory(record, inventory, namespace, reservation_namespace, helm_release):
    """The read-only inventory of the cluster: its gates, the version and the snapshot plan."""
    out = _copy(record)
    inventory = inventory or {}
    request = out.get("request") or {}
    out["gates"] += cluster_gates(out.get("cluster"), inventory, request.get("rollback_target"))
    out["current_version"] = (inventory.get("kai") or {}).get("version")
    out["inventory_status"] = inventory.get("status") or "missing"
    out["evidence"] += ["inventory.md", "inventory.json"]
    out["steps"].append(_step("inventory", "done", "status " + out["inventory_status"]))
    selections, note = snapshot_selections(
        inventory, namespace, reservation_namespace, helm_release
    )
    out["snapshot_plan"] = {"selections": selections, "note": note}
    bad = [g["gate"] for g in failed(out["gates"])]
    out["snapshot_due"] = not bad
    if bad:
        out["steps"].append(_step("snapshot", "not_run", "preflight refused: " + ", ".join(bad)))
    return out


def add_snapshot(record, objects, helm=None, use_helm=True):
    """The snapshot of KAI's state before the change: objects (kai_snapshot's result) and the
    Helm release (kai_helm_snapshot's, or None when helm was not used)."""
    out = _copy(record)
    plan = out.get("snapshot_plan") or {}
    out["gates"].append(
        snapshot_gate(
            objects.get("count"), (helm or {}).get("revision"), use_helm, plan.get("note")
        )
    )
    if objects.get("folder"):
        out["evidence"].append(objects["folder"] + "/index.json")
    if helm and helm.get("folder"):
        out["evidence"].append(helm["folder"] + "/release.json")
    out["steps"].append(
        _step(
            "snapshot",
            "done",
            "%s objects in %s" % (objects.get("count"), objects.get("folder") or "-"),
        )
    )
    out["snapshot_due"] = False
    return out


def add_failure(record, stage, task, msg, cluster=None):
    """A task of an operation failed: a failed gate and a failed step, both with its message."""
    out = _copy(record)
    cluster = out.get("cluster") or cluster
    out.setdefault("cluster", cluster)
    out.setdefault("schema", SCHEMA)
    out.setdefault("request", {})
    out["gates"].append(failure_gate(cluster, stage, task, msg))
    out["steps"].append(_step("preflight", "failed", "%s: %s" % (task, msg or "no message")))
    out["snapshot_due"] = False
    return out


def snapshot_selections(inventory, namespace, reservation_namespace, helm_release):
    """kai_snapshot selections for the state a rollback needs, from one cluster's inventory.

    KAI's Deployments, its Config and SchedulingShards, the queues, the reservation pods, the
    Helm release Secrets (metadata only: kai_snapshot drops their data) and each GPU-sharing
    ConfigMap the inventory found (owned by pods with runai/shared-gpu-configmap), by name.
    Returns (selections, note); note says when the inventory listed fewer ConfigMaps than exist.
    """
    selections = [
        {"kind": "Deployment", "api_version": "apps/v1", "namespace": namespace},
        {"kind": facts.KAI_CONFIG[1], "api_version": facts.KAI_CONFIG[0]},
        {"kind": facts.SCHEDULING_SHARD[1], "api_version": facts.SCHEDULING_SHARD[0]},
        {"kind": facts.QUEUE[1], "api_version": facts.QUEUE[0]},
        {"kind": "Pod", "api_version": "v1", "namespace": reservation_namespace},
        {
            "kind": "Secret",
            "api_version": "v1",
            "namespace": namespace,
            "label_selectors": ["owner=helm", "name=" + helm_release],
        },
    ]
    path = (inventory or {}).get("affected_path") or {}
    listed = path.get("configmap_list") or []
    for cm in listed:
        selections.append(
            {
                "kind": "ConfigMap",
                "api_version": "v1",
                "namespace": cm["namespace"],
                "field_selectors": ["metadata.name=" + cm["name"]],
            }
        )
    note = ""
    if (path.get("configmaps") or 0) > len(listed):
        note = "GPU-sharing ConfigMaps: %d of %d captured (the inventory lists at most %d)" % (
            len(listed),
            path["configmaps"],
            len(listed),
        )
    return selections, note
