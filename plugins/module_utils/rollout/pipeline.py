# Copyright: kaiops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The rollout as a pipeline: its stages as data, and one record per cluster. Pure.

``STAGES`` lists the rollout's steps in order, which operation of the role ``kai_rollout`` runs
each, and whether it is built; a step that is not built is reported as not run with its
``reason`` (the policy lives here, not in the role). The record of a cluster is made by
``new_record`` (the change request) and only ever added to, by ``add_skip``, ``add_inventory``,
``add_snapshot``, ``add_failure`` and the change window's ``add_*``: these are the rules the
run's journal is folded through (``rollout/record.py``), each entry a module appended; the role
never writes a gate or a step itself. The report (``rollout/report.py``) is built from the
records.

A record: ``{schema, cluster, request, request_well_formed, current_version, inventory_status,
gates, steps, evidence, regression, snapshot_plan}``; gates as ``rollout/gates.py`` makes them,
steps ``{step, status, reason}`` with status ``done``, ``failed`` or ``not_run``.
"""

import os

from ansible_collections.kaiops.runbooks.plugins.module_utils.kai import facts
from ansible_collections.kaiops.runbooks.plugins.module_utils.rollout import change as C
from ansible_collections.kaiops.runbooks.plugins.module_utils.rollout import waves as W
from ansible_collections.kaiops.runbooks.plugins.module_utils.rollout.gates import (
    INVALID_WAIVER,
    checked,
    cluster_gates,
    failed,
    failure_gate,
    gate,
    snapshot_gate,
)
from ansible_collections.kaiops.runbooks.plugins.module_utils.vocabulary import read_waves

SCHEMA = "kaiops.rollout-record/v1"
STEP_STATUSES = ("done", "failed", "not_run")
NOT_REACHED = "not reached: the run stopped before this step (see the steps before it)"

# The rollout's steps in order and the operation of role kai_rollout that runs each. Every step
# is built; a step a cluster did not reach is reported as not run with the reason recorded, or
# NOT_REACHED.
STAGES = (
    {"step": "request", "operation": "request", "built": True},
    {"step": "inventory", "operation": "preflight", "built": True},
    {"step": "governance", "operation": "preflight", "built": True},
    {"step": "snapshot", "operation": "preflight", "built": True},
    {"step": "baseline", "operation": "change", "built": True, "reason": NOT_REACHED},
    {"step": "upgrade", "operation": "change", "built": True, "reason": NOT_REACHED},
    {"step": "verify", "operation": "change", "built": True, "reason": NOT_REACHED},
    {"step": "decision", "operation": "change", "built": True, "reason": NOT_REACHED},
    {"step": "rollback", "operation": "change", "built": True, "reason": NOT_REACHED},
)
CHANGE_STEPS = tuple(s["step"] for s in STAGES if s["operation"] == "change")
REFUSED_BEFORE_CLUSTER = "change request refused before any cluster call"


def pending_steps():
    """The change steps, each {step, reason}: a cluster that did not record one did not reach it."""
    return [{"step": s["step"], "reason": s["reason"]} for s in STAGES if s.get("reason")]


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


def refused_record(cluster, refusal):
    """The record of a cluster whose request the request check of every playbook refused
    (kai_request): one failed request gate per problem, nothing read or changed."""
    found = [
        checked(
            "request",
            "request:%s" % p.get("field"),
            "refused",
            "the request check's rules (plugins/module_utils/request/rules.py)",
            p.get("message") or "refused",
            p.get("fix") or "",
        )
        for p in refusal.get("problems") or []
    ]
    record = new_record(cluster, dict(refusal.get("request") or {}), found)
    if refusal.get("operation") == "rollback":
        record["change"] = {"operation": "rollback", "action": "rollback"}
    return record


def add_skip(record, reason=REFUSED_BEFORE_CLUSTER):
    """The cluster steps of a malformed request: not run, with the reason."""
    out = C.copy_record(record)
    out["steps"] += [_step("inventory", "not_run", reason), _step("snapshot", "not_run", reason)]
    return out


def add_inventory(record, inventory, namespace, reservation_namespace, helm_release):
    """The read-only inventory of the cluster: its gates, the version and the snapshot plan.

    When an earlier run of this change was interrupted after it changed the cluster (the record's
    ``change.resume``, from ``add_earlier``), the rollback target is judged against what that run
    recorded before its change, not against the target that runs now.
    """
    out = C.copy_record(record)
    inventory = inventory or {}
    request = out.get("request") or {}
    resume = (out.get("change") or {}).get("resume")
    before = None
    if resume and (inventory.get("kai") or {}).get("version") and resume.get("before"):
        # only the rollback target; the agreement of helm and the components is judged on what
        # runs (judging it on the earlier version reported a split that was not there)
        before = resume["before"].get("version")
    out["gates"] += cluster_gates(
        out.get("cluster"), inventory, request.get("rollback_target"), version_before=before
    )
    if resume:
        out["gates"].append(
            gate(
                "cluster",
                "resumed",
                "run %s (%s) recorded %s at revision %s before its change"
                % (
                    resume.get("bundle"),
                    resume.get("status"),
                    (resume.get("before") or {}).get("version"),
                    (resume.get("before") or {}).get("revision"),
                ),
                "the cluster runs the target already: the state before the change is that run's",
                True,
            )
        )
    out["current_version"] = (inventory.get("kai") or {}).get("version")
    # Every report that ran on the lab's stand-in says so, next to the version.
    out["implementation_label"] = (inventory.get("kai") or {}).get("implementation_label")
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
    out = C.copy_record(record)
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
    out = C.copy_record(record)
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


# ---------------------------------------------------------------- the change window


def _change(out):
    return out.setdefault("change", {})


def _canary_gate(canary):
    """The gate ``canary_group`` of ``canary`` ({name, hosts, play}), or None when none is named."""
    name = canary.get("name")
    if name in (None, ""):
        return None
    problem, fix = W.canary_problem(name, canary.get("hosts"), canary.get("play") or [])
    figure = "%s: %s" % (name, ", ".join(canary.get("hosts") or []) or "no cluster")
    return checked("request", "canary_group", figure, W.CANARY_THRESHOLD, problem, fix)


def add_policy(record, policy_value, waves_value, canary=None):
    """The failed-gate policy, the waves and the canary group of the change request (stage
    request, no cluster read); ``canary``: {name, hosts (the group's), play (the play's hosts)}.
    A malformed one makes the request malformed: no cluster is read. With a canary group, the
    recorded waves are the play's serial: the group's size first, then the request's."""
    out = C.copy_record(record)
    canary = canary or {}
    policy, problem = C.read_policy(policy_value)
    out["gates"].append(
        checked(
            "request",
            "failed_gate_policy",
            C.policy_text(policy) if policy else policy_value,
            C.POLICY_THRESHOLD,
            problem,
            C.POLICY_FIX,
        )
    )
    waves, wave_problem = read_waves(waves_value)
    out["gates"].append(
        checked(
            "request",
            "waves",
            waves if waves else waves_value,
            "clusters per wave: numbers >= 1 or percentages (Ansible serial)",
            wave_problem,
            "set kaiops_rollout_waves to e.g. [1, '25%', '100%']",
        )
    )
    canary_gate = _canary_gate(canary)
    if canary_gate:
        out["gates"].append(canary_gate)
    if problem or wave_problem or (canary_gate and not canary_gate["passed"]):
        out["request_well_formed"] = False
        out["steps"][0] = _step(
            "request",
            "done",
            "failed gates: %s" % ", ".join(g["gate"] for g in failed(out["gates"])),
        )
    _change(out)["policy"] = policy
    _change(out)["waves"] = waves
    if canary_gate and canary_gate["passed"] and waves:
        _change(out)["waves"] = [len(canary["hosts"])] + waves
        _change(out)["canary"] = {"group": canary["name"], "clusters": list(canary["hosts"])}
    return out


def add_earlier(record, earlier):
    """What earlier runs of this change left (``change.earlier_runs``): the approved run a
    repeated run stands on, the interrupted runs (kept, listed) and the one resumed from."""
    out = C.copy_record(record)
    change = _change(out)
    change["interrupted_runs"] = list(earlier.get("interrupted") or [])
    if earlier.get("approved"):
        change["prior"] = earlier["approved"]
    if earlier.get("origin"):
        # The cluster runs the target already: the state before the change is the one this run
        # (an interrupted one, or the approved one) recorded.
        change["resume"] = earlier["origin"]
    return out


def add_governance(record, summary, gate_record, evidence=None):
    out = C.copy_record(record)
    out["gates"].append(gate_record)
    _change(out)["governance"] = summary
    if evidence:
        out["evidence"].append(evidence)
    out["steps"].append(
        _step(
            "governance",
            "done" if not summary.get("error") else "failed",
            gate_record["figure"] if not summary.get("error") else summary["error"],
        )
    )
    return out


def add_before(record, before):
    """The release as it was before the change: {version, revision, chart} (the snapshot's, or
    the interrupted run's when resuming)."""
    out = C.copy_record(record)
    change = _change(out)
    resume = change.get("resume")
    change["before"] = dict(resume["before"]) if resume and resume.get("before") else dict(before)
    change["before"]["snapshot"] = (
        resume["snapshot"] if resume and resume.get("snapshot") else before.get("snapshot")
    )
    return out


def add_wave(record, wave, position, waves, failure_budget):
    """The cluster's wave (1: the canary) and place in the play's host order (``rollout/waves.py``)
    with the failure budget the request gave; recorded before the change starts."""
    out = C.copy_record(record)
    change = _change(out)
    change.update(wave=wave, position=position, wave_count=waves, failure_budget=failure_budget)
    return out


def add_not_started(record, reason):
    """An earlier wave failed more than it allows: the change never starts here (decision
    ``not_started``, every change step not run with the reason), never reported as passed."""
    out = C.copy_record(record)
    _change(out)["not_started"] = reason
    return add_change_skip(out, reason)


def add_change_skip(record, reason):
    """Every change step not run, with the reason (--check, an earlier wave failed, refused)."""
    out = C.copy_record(record)
    recorded = {s["step"] for s in out["steps"]}
    for step in CHANGE_STEPS:
        if step not in recorded:
            out["steps"].append(_step(step, "not_run", reason))
    return _decided(out)


def add_prior(record):
    """A repeated run after success: nothing is upgraded or probed again; the gates of the run it
    stands on are recorded with their evidence there."""
    out = C.copy_record(record)
    prior = _change(out)["prior"]
    reason = "already done: approved in %s at revision %s; nothing upgraded or probed again" % (
        prior["bundle"],
        prior["revision"],
    )
    out["gates"].append(
        gate(
            "verify",
            "verified_earlier",
            "%s: %d verification gates passed" % (prior["bundle"], len(prior.get("gates") or [])),
            "an approved run of this change at the revision that runs now",
            True,
        )
    )
    out["evidence"].append("../%s/report.md" % prior["bundle"])
    _change(out)["after"] = {"version": prior["version"], "revision": prior["revision"]}
    return add_change_skip(out, reason)


def add_figures(record, phase, figures, thresholds, identity=None, timing=None):
    """A verification's figures; after the upgrade (``verify``) and after a rollback
    (``rollback``) they are judged as gates, before the change (``baseline``) only recorded."""
    from ansible_collections.kaiops.runbooks.plugins.module_utils.rollout.acceptance import (
        verify_gates,
    )

    out = C.copy_record(record)
    change = _change(out)
    change.setdefault("figures", {})[phase] = figures
    if figures.get("evidence"):
        out["evidence"].append(figures["evidence"])
    if phase == "baseline":
        out["steps"].append(
            _step(
                "baseline",
                "done",
                "%s probes on %s: completion %s, submit-to-bound p50 %s s"
                % (
                    figures.get("probes"),
                    figures.get("version"),
                    (figures.get("completion") or {}).get("rate"),
                    (figures.get("submit_to_bound") or {}).get("p50_s"),
                ),
            )
        )
        return out
    # The soak's verification is judged as the verification is (the same thresholds, the same
    # baseline), under its own stage so that the report shows both.
    stage = phase if phase in ("verify", "soak") else "rollback"
    baseline = change.get("figures", {}).get("baseline") or (change.get("resume") or {}).get(
        "baseline"
    )
    gates = verify_gates(stage, figures, thresholds, baseline=baseline)
    out["gates"] += gates
    bad = [g["gate"] for g in gates if not g["passed"]]
    if phase in ("verify", "soak"):
        after = " after a soak of %s s" % change.get("soak_s") if phase == "soak" else ""
        out["steps"].append(
            _step(
                phase,
                "done",
                "%d gates%s, failed: %s" % (len(gates), after, ", ".join(bad))
                if bad
                else "%d gates passed on %s%s" % (len(gates), figures.get("version"), after),
            )
        )
    else:
        change.setdefault("rollback", {})["verified"] = not bad
    return out


def add_progress(record, decided_at):
    """The progress deadline judged at the decision (``rollout/waves.py``); nothing when the
    request set none."""
    from ansible_collections.kaiops.runbooks.plugins.module_utils.rollout.waves import (
        progress_gate,
    )

    out = C.copy_record(record)
    found = progress_gate(_change(out), decided_at)
    if found is not None:
        out["gates"].append(found)
    return out


def _upgrade_gates(stage, result, identity):
    """The upgrade's or rollback's gates: helm's failure first, then what runs and rolled out,
    and for a rollback the objects kept across it."""
    from ansible_collections.kaiops.runbooks.plugins.module_utils.rollout.acceptance import (
        kept_gate,
        upgrade_gates,
    )

    gates = upgrade_gates(
        stage,
        identity,
        result.get("expected_version"),
        result.get("rolled_out_s"),
        result.get("timeout_s"),
        result.get("evidence"),
        result.get("helm_status"),
        reasons=result.get("reasons"),
    )
    if stage == "rollback" and result.get("survivors_before") is not None:
        gates.append(
            kept_gate(
                result["survivors_before"], result.get("survivors_after"), result.get("evidence")
            )
        )
    if result.get("error"):
        gates.insert(
            0,
            checked(
                stage,
                "helm",
                "failed",
                "helm %s succeeded"
                % ("upgrade" if stage == "upgrade" else result.get("method") or "downgrade"),
                result["error"],
                "read the task output; the release's history is in the evidence",
            ),
        )
    return gates


def _upgrade_entry(stage, result, identity, gates):
    ok = not result.get("error")
    entry = {
        "status": "done" if ok and all(g["passed"] for g in gates) else "failed",
        "changed": bool(result.get("changed")),
        "revision_before": C.revision(result.get("revision_before")),
        "revision": C.revision(result.get("revision")),
        "chart": result.get("chart"),
        "chart_ref": result.get("chart_ref"),
        "version": identity.get("version"),
        "implementation": identity.get("implementation_label"),
        "started_at": result.get("started_at"),
        "finished_at": result.get("finished_at"),
        "duration_s": result.get("duration_s"),
        "attempts": result.get("attempts"),
        "error": result.get("error"),
    }
    if stage == "upgrade":
        # Where the release's values named the version that ran (paths, never values).
        entry["values_repointed"] = list(result.get("values_repointed") or [])
    if stage == "rollback":
        # The supported downgrade used and why (helm rollback does not restore KAI's chart).
        entry["method"] = result.get("method")
        entry["method_why"] = result.get("method_why")
        entry["survivors_before"] = result.get("survivors_before")
        entry["survivors_after"] = result.get("survivors_after")
        # Hook Jobs of the uninstalled release left waiting on an image never pulled, deleted
        # so that the downgrade could go on (rollout/restore.py stuck_hooks).
        entry["hooks_deleted"] = list(result.get("hooks_deleted") or [])
    return entry


def _upgrade_reason(entry, result, identity, gates):
    if entry["status"] != "done":
        return "failed: %s" % "; ".join(g["message"] for g in gates if not g["passed"])
    label = identity.get("implementation_label")
    return "%s to %s (revision %s -> %s) in %s s" % (
        "upgraded" if entry["changed"] else "already at the target, nothing changed:",
        "%s, %s" % (identity.get("version"), label) if label else identity.get("version"),
        result.get("revision_before"),
        result.get("revision"),
        result.get("duration_s"),
    )


def add_upgrade(record, stage, result):
    """The upgrade (stage ``upgrade``) or the Helm rollback (stage ``rollback``): helm's result,
    the release after it, the version that runs and the bounded rollout wait."""
    out = C.copy_record(record)
    change = _change(out)
    identity = result.get("identity") or {}
    gates = _upgrade_gates(stage, result, identity)
    out["gates"] += gates
    entry = _upgrade_entry(stage, result, identity, gates)
    if stage == "upgrade":
        change["upgrade"] = entry
        change["after"] = {"version": identity.get("version"), "revision": entry["revision"]}
        change["after_objects"] = result.get("objects")
        reason = _upgrade_reason(entry, result, identity, gates)
        out["steps"].append(_step("upgrade", entry["status"], reason))
    else:
        rollback = change.setdefault("rollback", {})
        rollback.update(entry)
        rollback["status"] = entry["status"]
    return out


def add_decision(record, action):
    """The failed-gate policy applied after verification: what the role does next."""
    out = C.copy_record(record)
    change = _change(out)
    policy = change.get("policy") or dict(C.DEFAULT_POLICY)
    failed_names = [g["gate"] for g in failed(out["gates"]) if g["stage"] in C.CHANGE_GATE_STAGES]
    if not failed_names and change.get("error"):
        failed_names = ["the upgrade failed (%s)" % change["error"].split(":", 1)[0]]
    if action == "none":
        reason = "every verification gate passed: the change stays"
    elif action == "rollback":
        reason = "failed gates %s: policy %s, downgrading to %s (revision %s before the change)" % (
            ", ".join(failed_names),
            C.policy_text(policy),
            (change.get("before") or {}).get("version"),
            (change.get("before") or {}).get("revision"),
        )
    elif action == "pause":
        reason = "failed gates %s: policy pause - stopped and reported, nothing undone" % (
            ", ".join(failed_names)
        )
    else:
        reason = "failed gates %s: policy continue - %s" % (
            ", ".join(failed_names),
            C.policy_text(policy),
        )
    change["action"] = action
    out["steps"].append(_step("decision", "done", reason))
    if action != "rollback":
        out["steps"].append(
            _step("rollback", "not_run", "not needed" if action == "none" else reason)
        )
    return _decided(out)


# The supported downgrades of KAI's chart (helm rollback restores only the operator: contract
# section 14), as the report names them.
METHOD_TEXT = {
    "upgrade": "helm upgrade to the recorded chart version",
    "reinstall": "helm uninstall and install of the recorded chart version",
}


def add_rollback(record, restore=None, timing=None, error=None):
    """The rollback's restoration of KAI's configuration and its time to restore."""
    out = C.copy_record(record)
    rollback = _change(out).setdefault("rollback", {})
    if restore is not None:
        rollback["restore"] = restore
    if timing:
        rollback.update(timing)
    if error:
        rollback["status"] = "failed"
        rollback["error"] = error
    verified = rollback.get("verified")
    status = "done" if rollback.get("status") == "done" and verified else "failed"
    if error and rollback.get("version") is None and restore is None:
        out["steps"].append(
            _step(
                "rollback",
                "failed",
                "failed before KAI was downgraded to %s: %s"
                % ((_change(out).get("before") or {}).get("version"), error),
            )
        )
        return _decided(out)
    reason = "%s to %s (release revision %s -> %s), runs %s after it; restored %s, not "
    reason += "restored %s; verification %s; time to restore %s s"
    summary = (restore or {}).get("summary") or {}
    before = _change(out).get("before") or {}
    out["steps"].append(
        _step(
            "rollback",
            status,
            reason
            % (
                METHOD_TEXT.get(rollback.get("method"), "downgrade"),
                before.get("version"),
                rollback.get("revision_before"),
                rollback.get("revision"),
                rollback.get("version") or "unreadable",
                summary.get("restored"),
                summary.get("not_restored"),
                "passed" if verified else "FAILED" if verified is False else "not run",
                rollback.get("time_to_restore_s"),
            )
            + (" - %s" % error if error else ""),
        )
    )
    return _decided(out)


def add_change_error(record, step, task, msg):
    """A task of the change failed: the step failed with its message."""
    out = C.copy_record(record)
    change = _change(out)
    change["error"] = "%s: %s" % (task, msg or "no message")
    out["steps"].append(_step(step, "failed", change["error"]))
    return _decided(out)


def _decided(out):
    out["decision"] = C.decide(out)
    return out


def finish(record):
    """The record as the report reads it: the decision made from everything recorded."""
    out = C.copy_record(record)
    if out.get("change") is not None or out.get("decision"):
        return _decided(out)
    return out


def _rollback_request(entry, report, thresholds, owner):
    """The change request of that bundle, with the thresholds and owner given now."""
    request = dict(entry.get("request") or (report or {}).get("request") or {})
    if isinstance(thresholds, dict) and thresholds:
        request["thresholds"] = thresholds
    if owner:
        request["change_owner"] = owner
    return request


def _bundle_problem(cluster, bundle, report, entry, before, request):
    """Why the bundle cannot be rolled back to, or None: the first of the rules that fails."""
    if not bundle:
        return "no bundle given: set kaiops_rollout_rollback_bundle to a rollout bundle"
    if report is None:
        return "bundle %s has no readable report.json" % bundle
    if report.get("kind") != "rollout":
        return "bundle %s is not a rollout's (kind %s)" % (bundle, report.get("kind"))
    if not entry:
        return "bundle %s has no record of cluster %s" % (bundle, cluster)
    if not before.get("revision") or not before.get("snapshot"):
        return "bundle %s recorded no Helm revision and snapshot before a change on %s" % (
            bundle,
            cluster,
        )
    if not isinstance(request.get("thresholds"), dict) or not request.get("thresholds"):
        return "no thresholds to verify the rollback against (kaiops_thresholds)"
    return None


def _rollback_snapshot(snapshot, bundle_path):
    """The snapshot folder before the change, made absolute against the bundle read."""
    if snapshot and bundle_path and not os.path.isabs(snapshot):
        # "snapshots/..." in that bundle, or "<interrupted bundle>/snapshots/..." next to it
        inside = os.path.join(bundle_path, snapshot)
        snapshot = (
            inside
            if os.path.isdir(inside)
            else os.path.join(os.path.dirname(bundle_path), snapshot)
        )
    return snapshot


def _bundle_gate(bundle, before, problem):
    return checked(
        "request",
        "rollback_bundle",
        "%s: revision %s (%s) recorded before its change"
        % (bundle, before.get("revision"), before.get("version"))
        if problem is None
        else bundle or "none",
        "a rollout bundle with this cluster's revision and snapshot before the change",
        problem,
        "give kaiops_rollout_rollback_bundle=<evidence root>/<rollout bundle>",
    )


def _rollback_change(bundle, change, before, snapshot):
    baseline = (change.get("figures") or {}).get("baseline")
    return {
        "operation": "rollback",
        "bundle": bundle,
        "before": dict(before, snapshot=snapshot),
        "after": change.get("after"),
        "after_objects": change.get("after_objects"),
        "policy": {"policy": "rollback", "source": "rollback.yml"},
        "action": "rollback",
        # the old version's own figures before that change: the rollback is held to them
        "figures": {"baseline": baseline} if baseline else {},
    }


def new_rollback_record(cluster, bundle, report, thresholds=None, owner=None, bundle_path=None):
    """The record of rollback.yml for one cluster, from the rollout bundle it restores: the
    revision, version and snapshot that bundle recorded before its change. A bundle that is
    missing, not a rollout's, or without this cluster's record refuses (nothing is touched)."""
    entry = ((report or {}).get("clusters") or {}).get(cluster) or {}
    change = entry.get("change") or {}
    before = change.get("before") or {}
    request = _rollback_request(entry, report, thresholds, owner)
    problem = _bundle_problem(cluster, bundle, report, entry, before, request)
    snapshot = _rollback_snapshot(before.get("snapshot") or "", bundle_path)
    return {
        "schema": SCHEMA,
        "cluster": cluster,
        "request": request,
        "request_well_formed": problem is None,
        "current_version": None,
        "inventory_status": None,
        "gates": [_bundle_gate(bundle, before, problem)],
        "steps": [_step("request", "done", problem or "bundle %s read" % bundle)],
        "evidence": ["../%s/report.md" % bundle] if problem is None else [],
        "regression": None,
        "snapshot_plan": None,
        "change": _rollback_change(bundle, change, before, snapshot),
    }
