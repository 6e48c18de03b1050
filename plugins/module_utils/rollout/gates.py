# -*- coding: utf-8 -*-
# Copyright: kaiops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Rollout preflight gates: rules as data, pure functions apart from reading the evidence store.

A gate is a dict ``{stage, gate, figure, threshold, passed, message, fix}``:

- stage ``inputs``: the change request itself (owner, target version, thresholds, rollback
  target, regression evidence or waiver). Evaluated on the controller; no cluster is read.
- stage ``cluster``: what the read-only inventory of one cluster says (reachable, KAI
  release found, current version readable).

``passed`` is True or False; ``message`` says why a gate failed and ``fix`` how to fix it.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.kaiops.runbooks.plugins.module_utils.rollout.client import (
    find_regression_reports,
)

SCHEMA = "kaiops.report/v1"
# An exact release tag: v<major>.<minor>.<patch>, optionally -<pre-release>.
TAG = re.compile(r"^v(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(-[0-9A-Za-z.-]+)?$")

# The acceptance thresholds a rollout is judged against: name -> rule (as data).
# kind: "seconds" (> 0 number), "fraction" (0 < x <= 1), "count" (int >= 0),
# "window" (int seconds, 60..86400). Percentile pairs are also checked p50 <= p95.
THRESHOLDS = {
    "bind_latency_p50_s": {"kind": "seconds", "what": "submission-to-bound latency, p50"},
    "bind_latency_p95_s": {"kind": "seconds", "what": "submission-to-bound latency, p95"},
    "ready_latency_p50_s": {"kind": "seconds", "what": "submission-to-Ready latency, p50"},
    "ready_latency_p95_s": {"kind": "seconds", "what": "submission-to-Ready latency, p95"},
    "completion_rate_min": {"kind": "fraction", "what": "probe completion rate (failures count)"},
    "binder_restarts_max": {"kind": "count", "what": "binder container restarts"},
    "stale_objects_max": {"kind": "count", "what": "stale reservation pods and ConfigMaps"},
    "observation_window_s": {"kind": "window", "what": "observation window"},
}
PERCENTILE_PAIRS = (
    ("bind_latency_p50_s", "bind_latency_p95_s"),
    ("ready_latency_p50_s", "ready_latency_p95_s"),
)
THRESHOLDS_EXAMPLE = (
    "{bind_latency_p50_s: 2, bind_latency_p95_s: 5, ready_latency_p50_s: 5, "
    "ready_latency_p95_s: 15, completion_rate_min: 1.0, binder_restarts_max: 0, "
    "stale_objects_max: 0, observation_window_s: 300}"
)

# Inventory statuses that mean the cluster could not be read.
UNREADABLE = ("unreachable", "unauthorized", "forbidden", "invalid_input", "error", "missing")


def gate(stage, name, figure, threshold, passed, message="", fix=""):
    return {
        "stage": stage,
        "gate": name,
        "figure": figure,
        "threshold": threshold,
        "passed": bool(passed),
        "message": message,
        "fix": fix,
    }


def _number(value):
    """A float from an int/float/numeric string (extra vars arrive as strings); None otherwise."""
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, str):
        try:
            return float(value.strip())
        except ValueError:
            return None
    return None


def _check_threshold(kind, value):
    """Problem text for one threshold value, or None when it is valid."""
    number = _number(value)
    if value is None or value == "":
        return "missing"
    if number is None:
        return "%r is not a number" % (value,)
    if kind == "seconds" and not number > 0:
        return "%s must be greater than 0 seconds" % value
    if kind == "fraction" and not 0 < number <= 1:
        return "%s must be a fraction in (0, 1], e.g. 0.99" % value
    if kind in ("count", "window") and number != int(number):
        return "%s must be a whole number" % value
    if kind == "count" and number < 0:
        return "%s must be 0 or more" % value
    if kind == "window" and not 60 <= number <= 86400:
        return "%s must be between 60 and 86400 seconds" % value
    return None


def threshold_gates(thresholds):
    """One gate per threshold, plus one per percentile pair; unknown keys fail as typos."""
    stage, gates = "inputs", []
    fix_var = "kaiops_rollout_thresholds"
    if not isinstance(thresholds, dict) or not thresholds:
        return [
            gate(
                stage,
                "thresholds",
                "missing" if not thresholds else type(thresholds).__name__,
                "a dict of %d acceptance thresholds" % len(THRESHOLDS),
                False,
                "acceptance thresholds are missing",
                "set %s, e.g. %s" % (fix_var, THRESHOLDS_EXAMPLE),
            )
        ]
    for name, rule in THRESHOLDS.items():
        value = thresholds.get(name)
        problem = _check_threshold(rule["kind"], value)
        gates.append(
            gate(
                stage,
                "threshold:" + name,
                value,
                rule["kind"],
                problem is None,
                "threshold %s (%s): %s" % (name, rule["what"], problem) if problem else "",
                "set %s.%s" % (fix_var, name) if problem else "",
            )
        )
    for low, high in PERCENTILE_PAIRS:
        a, b = _number(thresholds.get(low)), _number(thresholds.get(high))
        if a is not None and b is not None and a > b:
            gates.append(
                gate(
                    stage,
                    "threshold:%s<=%s" % (low, high),
                    "%s > %s" % (thresholds.get(low), thresholds.get(high)),
                    "p50 <= p95",
                    False,
                    "threshold %s (%s) is above %s (%s)"
                    % (low, thresholds.get(low), high, thresholds.get(high)),
                    "a p50 cannot exceed its p95: fix %s" % fix_var,
                )
            )
    unknown = sorted(set(thresholds) - set(THRESHOLDS))
    if unknown:
        gates.append(
            gate(
                stage,
                "thresholds:unknown",
                unknown,
                "known names",
                False,
                "unknown threshold name(s) %s" % ", ".join(unknown),
                "use only %s" % ", ".join(THRESHOLDS),
            )
        )
    return gates


def owner_gate(owner):
    owner = (owner or "").strip() if isinstance(owner, str) else owner
    ok = isinstance(owner, str) and bool(owner)
    return gate(
        "inputs",
        "change_owner",
        owner or "missing",
        "non-empty",
        ok,
        "" if ok else "change owner is missing",
        "" if ok else "set kaiops_rollout_change_owner (who answers for this change)",
    )


def target_gate(target):
    ok = isinstance(target, str) and bool(TAG.match(target))
    return gate(
        "inputs",
        "target_version",
        target or "missing",
        "exact release tag vX.Y.Z",
        ok,
        ""
        if ok
        else (
            "target version is missing"
            if not target
            else "target version %r is not an exact release tag like v0.16.14" % (target,)
        ),
        "" if ok else "set kaiops_rollout_target_version to a release tag, e.g. v0.16.14",
    )


def rollback_gate(rollback, target):
    """A Helm revision number (>= 1) or a release tag other than the target."""
    fix = (
        "set kaiops_rollout_rollback_target to the Helm revision to return to (e.g. 3) "
        "or the release tag to reinstall (e.g. v0.16.13)"
    )
    figure, problem = rollback, None
    if rollback is None or rollback == "":
        figure, problem = "missing", "rollback target is missing"
    elif isinstance(rollback, bool):
        problem = "rollback target %r is neither a Helm revision nor a release tag" % rollback
    elif isinstance(rollback, int) or (isinstance(rollback, str) and rollback.isdigit()):
        if int(rollback) < 1:
            problem = "rollback target revision %s must be 1 or more" % rollback
    elif isinstance(rollback, str) and TAG.match(rollback):
        if rollback == target:
            problem = "rollback target %s is the target version itself" % rollback
    else:
        problem = (
            "rollback target %r is neither a Helm revision number nor a release tag like v0.16.13"
            % (rollback,)
        )
    return gate(
        "inputs",
        "rollback_target",
        figure,
        "Helm revision >= 1 or a release tag other than the target",
        problem is None,
        problem or "",
        fix if problem else "",
    )


def normalize_waiver(waiver):
    """(waiver dict or None, problem text or None). A string is read as the reason."""
    if waiver in (None, "", {}):
        return None, None
    if isinstance(waiver, str):
        waiver = {"reason": waiver}
    if not isinstance(waiver, dict):
        return None, "regression waiver must be a dict {reason, approved_by}"
    reason = waiver.get("reason")
    if not isinstance(reason, str) or not reason.strip():
        return None, "regression waiver has no reason"
    return {"reason": reason.strip(), "approved_by": waiver.get("approved_by") or None}, None


def regression_gate(target, evidence_root, waiver):
    """Pass on a passing reproduce report of the target, or on a waiver with a reason."""
    waiver, waiver_problem = normalize_waiver(waiver)
    threshold = "a passing reproduce report for the target, or a waiver with a reason"
    if waiver_problem:
        return gate(
            "inputs",
            "regression_evidence",
            "invalid waiver",
            threshold,
            False,
            waiver_problem,
            "give kaiops_rollout_regression_waiver: {reason: <why>, approved_by: <who>} "
            "or remove it",
        ), None
    if not isinstance(target, str) or not TAG.match(target):
        return gate(
            "inputs",
            "regression_evidence",
            "not checked",
            threshold,
            False,
            "regression evidence cannot be matched without a valid target version",
            "fix kaiops_rollout_target_version first",
        ), None
    passing, considered = find_regression_reports(evidence_root, target)
    if passing:
        return gate(
            "inputs",
            "regression_evidence",
            "reproduce report %s/report.json" % passing[-1],
            threshold,
            True,
        ), {"bundle": passing[-1], "considered": considered, "root": evidence_root}
    if waiver:
        return gate(
            "inputs",
            "regression_evidence",
            "waived: %s" % waiver["reason"],
            threshold,
            True,
            "",
        ), {"waiver": waiver, "considered": considered, "root": evidence_root}
    seen = (
        " (rejected: %s)" % "; ".join("%s: %s" % (c["bundle"], c["rejected"]) for c in considered)
        if considered
        else ""
    )
    return gate(
        "inputs",
        "regression_evidence",
        "none",
        threshold,
        False,
        "no passing reproduce report for %s in %s%s" % (target, evidence_root or "-", seen),
        "run the reproduce playbook against %s first, or set kaiops_rollout_regression_waiver "
        "with a reason" % target,
    ), {"considered": considered, "root": evidence_root}


def input_gates(owner, target, thresholds, rollback, waiver, evidence_root):
    """Every gate of the change request, in a fixed order, and the regression details."""
    gates = [owner_gate(owner), target_gate(target)]
    gates += threshold_gates(thresholds)
    gates.append(rollback_gate(rollback, target))
    regression, detail = regression_gate(target, evidence_root, waiver)
    gates.append(regression)
    return gates, detail


def cluster_gates(cluster, inventory, rollback_target=None):
    """Gates from one cluster's kai_inventory output: reachable, KAI release, version, and
    whether the rollback target is what runs now (a tag) or a revision that exists."""
    stage = "cluster"
    inventory = inventory or {}
    status = inventory.get("status") or "missing"
    if status in UNREADABLE:
        return [
            gate(
                stage,
                "reachable",
                status,
                "inventoried",
                False,
                "cluster %s could not be inventoried: %s - %s"
                % (cluster, status, inventory.get("error") or "no inventory recorded"),
                "fix access to the cluster (kubeconfig, context, RBAC), then run again",
            )
        ]
    gates = [gate(stage, "reachable", status, "inventoried", True)]
    kai = inventory.get("kai") or {}
    helm = kai.get("helm") or {}
    release = helm.get("release")
    installed = bool(kai.get("installed")) and bool(release)
    figure = (
        "%s revision %s" % (release, helm.get("revision"))
        if release
        else ("Deployments without a Helm release" if kai.get("installed") else "none")
    )
    gates.append(
        gate(
            stage,
            "kai_release",
            figure,
            "a KAI Helm release in %s" % (kai.get("namespace") or "the KAI namespace"),
            installed,
            ""
            if installed
            else "no KAI release on cluster %s (namespace %s)" % (cluster, kai.get("namespace")),
            ""
            if installed
            else "install KAI with Helm first, or set kaiops_kai_namespace to its namespace",
        )
    )
    if installed:
        version = kai.get("version")
        ok = isinstance(version, str) and bool(
            TAG.match(version if version[:1] == "v" else "v" + version)
        )
        gates.append(
            gate(
                stage,
                "current_version",
                version or "unreadable",
                "a release tag",
                ok,
                "" if ok else "current KAI version on %s is unreadable (%s)" % (cluster, version),
                "" if ok else "pin the KAI images to release tags",
            )
        )
        rollback = rollback_gate_for_cluster(
            cluster, version, helm.get("revision"), rollback_target
        )
        if rollback:
            gates.append(rollback)
    return gates


def rollback_gate_for_cluster(cluster, version, revision, rollback_target):
    """A tag must be the version running now; a revision must exist (not above the current)."""
    if rollback_target in (None, "") or isinstance(rollback_target, bool):
        return None
    fix = "set kaiops_rollout_rollback_target to what runs now (version %s, Helm revision %s)" % (
        version,
        revision,
    )
    if isinstance(rollback_target, int) or str(rollback_target).isdigit():
        wanted = int(rollback_target)
        ok = isinstance(revision, int) and 1 <= wanted <= revision
        return gate(
            "cluster",
            "rollback_target_recorded",
            "revision %s (current %s)" % (wanted, revision),
            "a Helm revision that exists",
            ok,
            ""
            if ok
            else "rollback revision %s is not a recorded revision of the release on %s (current %s)"
            % (wanted, cluster, revision),
            "" if ok else fix,
        )
    current = version if (version or "")[:1] == "v" else "v%s" % version
    ok = rollback_target == current
    return gate(
        "cluster",
        "rollback_target_recorded",
        "%s (running %s)" % (rollback_target, current),
        "the version running now",
        ok,
        ""
        if ok
        else "rollback target %s is not the version running on %s (%s)"
        % (rollback_target, cluster, current),
        "" if ok else fix,
    )


def failed(gates):
    return [g for g in gates if not g["passed"]]


def refusal_message(cluster, gates):
    """One message naming every failed gate and its fix."""
    bad = failed(gates)
    if not bad:
        return ""
    parts = ["%s (fix: %s)" % (g["message"], g["fix"]) if g["fix"] else g["message"] for g in bad]
    return "Rollout refused for %s: %s" % (cluster, "; ".join(parts))


def snapshot_selections(inventory, namespace, reservation_namespace, helm_release):
    """kai_snapshot selections for the state a rollback needs, from one cluster's inventory.

    KAI's Deployments, its Config and SchedulingShards, the queues, the reservation pods, the
    Helm release Secrets (metadata only: kai_snapshot drops their data) and each GPU-sharing
    ConfigMap the inventory found (owned by pods with runai/shared-gpu-configmap), by name.
    Returns (selections, note); note says when the inventory listed fewer ConfigMaps than exist.
    """
    selections = [
        {"kind": "Deployment", "api_version": "apps/v1", "namespace": namespace},
        {"kind": "Config", "api_version": "kai.scheduler/v1"},
        {"kind": "SchedulingShard", "api_version": "kai.scheduler/v1"},
        {"kind": "Queue", "api_version": "scheduling.run.ai/v2"},
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
