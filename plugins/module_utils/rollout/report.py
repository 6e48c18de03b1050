# -*- coding: utf-8 -*-
# Copyright: kaiops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The rollout report: one document per run, rendered as JSON, Markdown and JUnit XML.

Pure functions. ``build`` takes the change request and, per cluster, the record of
``rollout/pipeline.py`` (gates, steps - run / not run / failed, with the reason - and evidence
paths), and decides:

- cluster decision ``refused`` when any gate failed, ``proceed`` when every gate passed;
- run decision ``refused`` when any cluster was refused, otherwise ``proceed``.

The steps that are not built yet come from the pipeline's ``STAGES``. A step that was not run
says why; nothing is reported as done that was not done. ``error_report`` is the document
written when the report itself cannot be built, so a run always leaves its three files.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from decimal import Decimal

from ansible_collections.kaiops.runbooks.plugins.module_utils.evidence.report import run_line
from ansible_collections.kaiops.runbooks.plugins.module_utils.render import junit
from ansible_collections.kaiops.runbooks.plugins.module_utils.rollout.change import (
    APPROVAL_STAGE,
    APPROVAL_STEP,
    DECISIONS,
    pair_text,
    policy_text,
)
from ansible_collections.kaiops.runbooks.plugins.module_utils.rollout.pipeline import (
    STAGES,
    STEP_STATUSES,
)
from ansible_collections.kaiops.runbooks.plugins.module_utils.rollout.pipeline import (
    pending_steps as pipeline_pending_steps,
)
from ansible_collections.kaiops.runbooks.plugins.module_utils.rollout.probes import side_by_side

SCHEMA = "kaiops.report/v1"
RUN_EVIDENCE = ["run.json", "tasks.jsonl", "junit.xml", "manifest.sha256"]
# Steps in the order the rollout runs them; a step outside the pipeline (no record) comes first.
STEP_ORDER = {s["step"]: n for n, s in enumerate(STAGES)}
STEP_ORDER[APPROVAL_STEP] = len(STAGES)  # what the approval rests on, last (rollout/change.py)
# A failed change step decides as a failed gate does (a helm upgrade cut off); a preflight step
# that failed has its gate already (or, governance, reports only).
DECIDING_STEPS = frozenset(s["step"] for s in STAGES if s["operation"] == "change")
# The step of a cluster that has no record: it failed before its preflight ran.
NO_RECORD_STEP = {
    "step": "preflight",
    "status": "failed",
    "reason": "no preflight recorded: the host failed before the preflight ran; "
    "see the task output",
}


def _decision(gates):
    return "refused" if any(not g.get("passed") for g in gates) else "proceed"


# How bad a cluster's decision is for the run's: the run takes its worst cluster's.
SEVERITY = (
    "refused",
    "rollback_failed",
    "failed",
    "rolled_back",
    "paused",
    "not_approved",
    "proceed",
    "continued",
    "approved",
)


def run_decision(decisions):
    """The run's decision: ``approved`` only when every cluster was approved."""
    if not decisions:
        return "refused"
    return min(decisions, key=SEVERITY.index)


def _cluster_decision(entry, gates):
    """``refused`` without a gate or with a failed one, else ``proceed``; the change window's
    own decision (rollout/change.py decide()) when it recorded one."""
    decision = _decision(gates) if gates else "refused"
    if gates and entry.get("decision") in DECISIONS:
        decision = entry["decision"]
    return decision


def _gate_reasons(gates):
    """Each failed gate's message, with its fix when it has one."""
    if not gates:
        return ["no preflight gate was recorded for this cluster"]
    return [
        "%s (fix: %s)" % (g.get("message") or g["gate"], g["fix"])
        if g.get("fix")
        else g.get("message") or g["gate"]
        for g in gates
        if not g.get("passed")
    ]


def _not_run_reason(pending, entry, gates, decision):
    """Why a step of the pipeline that the cluster did not record was not run."""
    failed_names = [g["gate"] for g in gates if not g.get("passed")]
    reason = (
        "preflight refused (failed gates: %s)" % (", ".join(failed_names) or "none recorded")
        if decision == "refused"
        else pending.get("reason") or "not run"
    )
    note = (entry.get("change") or {}).get("baseline_note")
    if pending.get("step") == "baseline" and note and decision != "refused":
        reason = "not measured: %s" % note
    return reason


def _steps(entry, gates, decision, pending_steps):
    """The cluster's recorded steps (an unknown status reads ``failed``), then each pending step
    it did not record as ``not_run``, in the order the rollout runs them."""
    steps = []
    for step in entry.get("steps") or []:
        status = step.get("status")
        if status not in STEP_STATUSES:
            status = "failed"
        steps.append(
            {"step": step.get("step"), "status": status, "reason": step.get("reason") or ""}
        )
    recorded = {s["step"] for s in steps}
    for pending in pending_steps or ():
        if pending.get("step") in recorded:
            continue
        reason = _not_run_reason(pending, entry, gates, decision)
        steps.append({"step": pending.get("step"), "status": "not_run", "reason": reason})
    steps.sort(key=lambda s: STEP_ORDER.get(s["step"], -1))
    return steps


def _cluster_report(entry, pending_steps):
    """One cluster's part of the report: its decision, the reasons for it, its steps."""
    if not entry:
        entry = {"steps": [NO_RECORD_STEP]}
    gates = list(entry.get("gates") or [])
    decision = _cluster_decision(entry, gates)
    reasons = _gate_reasons(gates)
    steps = _steps(entry, gates, decision, pending_steps)
    if gates:
        # so that no decision stands without its reason
        reasons += [
            "step %s failed: %s" % (s["step"], s["reason"] or "no reason recorded")
            for s in steps
            if s["status"] == "failed" and s["step"] in DECIDING_STEPS
        ]
    out = {
        "decision": decision,
        "reasons": reasons,
        "request": entry.get("request"),
        "current_version": entry.get("current_version"),
        "implementation_label": entry.get("implementation_label"),
        "gates": gates,
        "steps": steps,
        "evidence": sorted(set(entry.get("evidence") or [])),
    }
    if entry.get("change"):
        out["change"] = entry["change"]
    return out


def _summary(out_clusters):
    return {
        "clusters": len(out_clusters),
        "gates": sum(len(c["gates"]) for c in out_clusters.values()),
        "gates_failed": sum(
            1 for c in out_clusters.values() for g in c["gates"] if not g.get("passed")
        ),
    }


def build(request, clusters, generated_at, run_id=None, pending_steps=None, run=None):
    """The report document (what report.json holds).

    ``run``: who ran what (``evidence/report.run_facts``: operator, commit, inventory), kept as
    the report's ``run``.

    ``pending_steps``: steps of the rollout that come after preflight, each ``{step, reason}``
    (default: the pipeline's steps not built yet); a cluster that did not record one gets it as
    ``not_run``, with the refusal as the reason when the cluster was refused, else the given
    reason.
    """
    if pending_steps is None:
        pending_steps = pipeline_pending_steps()
    request = request if isinstance(request, dict) else {}
    out_clusters = {
        name: _cluster_report(clusters[name] or {}, pending_steps) for name in sorted(clusters)
    }
    refused = sorted(n for n, c in out_clusters.items() if c["decision"] == "refused")
    extra = {}
    if any(c.get("change") for c in out_clusters.values()):
        rate = next(
            (
                c["change"].get("rate")
                for c in out_clusters.values()
                if (c.get("change") or {}).get("rate")
            ),
            0,
        )
        extra["cost"] = change_cost(out_clusters, rate)
    return dict(
        extra,
        **{
            "schema": SCHEMA,
            "kind": "rollout",
            "run_id": run_id,
            "run": run,
            "generated_at": generated_at,
            "kai_version": request.get("kai_version"),
            "request": request,
            "decision": run_decision([c["decision"] for c in out_clusters.values()]),
            "refused_clusters": refused,
            # Files of this run's bundle, relative to it (each cluster lists its own as well).
            "evidence": list(RUN_EVIDENCE),
            "clusters": out_clusters,
            "summary": _summary(out_clusters),
        },
    )


def error_report(request, clusters, generated_at, run_id, error):
    """The document written when ``build`` or a renderer failed: every cluster refused."""
    names = sorted(str(n) for n in clusters) if isinstance(clusters, dict) else []
    reason = "the rollout report could not be built: %s" % error
    return {
        "schema": SCHEMA,
        "kind": "rollout",
        "run_id": run_id,
        "generated_at": generated_at,
        "kai_version": request.get("kai_version") if isinstance(request, dict) else None,
        "request": request if isinstance(request, dict) else {"as_given": request},
        "decision": "refused",
        "refused_clusters": names,
        "error": reason,
        "evidence": list(RUN_EVIDENCE),
        "clusters": {
            name: {
                "decision": "refused",
                "reasons": [reason],
                "request": None,
                "current_version": None,
                "gates": [],
                "steps": [],
                "evidence": [],
            }
            for name in names
        },
        "summary": {"clusters": len(names), "gates": 0, "gates_failed": 0},
    }


def waiver_text(waiver):
    """How the report shows the waiver: its reason and who approved it."""
    if waiver in (None, "", {}):
        return "none"
    if not isinstance(waiver, dict):
        return "invalid (not a mapping): %s" % (waiver,)
    return "%s (approved by %s)" % (waiver.get("reason") or "-", waiver.get("approved_by") or "-")


def _cell(value):
    if value is None or value == "":
        return "-"
    if isinstance(value, (list, tuple)):
        value = ", ".join(str(v) for v in value)
    return str(value).replace("|", "\\|").replace("\n", " ")


def _figure(gate_record):
    """A gate's figure as the report shows it: a number with its unit when the gate has one."""
    figure, unit = gate_record.get("figure"), gate_record.get("unit")
    if unit and isinstance(figure, (int, float)) and not isinstance(figure, bool):
        return "%s %s" % (figure, unit)
    return figure


def render_markdown(report):
    req = report["request"] if isinstance(report.get("request"), dict) else {}
    rollback_only = report.get("clusters") and all(
        (c.get("change") or {}).get("operation") == "rollback" for c in report["clusters"].values()
    )
    lines = [
        "# KAI Scheduler %s report" % ("rollback" if rollback_only else "rollout"),
        "",
        "Generated: %s" % report["generated_at"],
        "",
    ]
    if report.get("run"):
        lines += [run_line(report["run"]), ""]
    lines += ["**Decision: %s**" % report["decision"].upper(), ""]
    if report.get("error"):
        lines += ["**Error**: %s" % _cell(report["error"]), ""]
    lines += change_board(report)
    not_run = sorted(
        {
            s["step"]
            for c in report["clusters"].values()
            for s in c["steps"]
            if s["status"] == "not_run"
        },
        key=lambda step: (STEP_ORDER.get(step, -1), step),
    )
    if not_run:
        lines += ["Steps not run (reason per cluster below): %s." % ", ".join(not_run), ""]
    lines += [
        "## What was asked",
        "",
        "| Field | Value |",
        "|---|---|",
        "| Change owner | %s |" % _cell(req.get("change_owner")),
        "| KAI version under test | %s |" % _cell(req.get("kai_version")),
        "| Rollback target | %s |" % _cell(req.get("rollback_target")),
        "| Regression waiver | %s |" % _cell(waiver_text(req.get("regression_waiver"))),
        "| Rehearsal waiver | %s |" % _cell(waiver_text(req.get("rehearsal_waiver"))),
        "| Clusters | %s |" % _cell(sorted(report["clusters"])),
        "",
        "Thresholds:",
        "",
    ]
    thresholds = req.get("thresholds")
    if isinstance(thresholds, dict) and thresholds:
        lines += ["- `%s`: %s" % (k, _cell(v)) for k, v in sorted(thresholds.items())]
    else:
        lines += ["- none given"]
    lines += ["", "Run evidence: %s" % ", ".join("[%s](%s)" % (p, p) for p in report["evidence"])]
    for name, cluster in sorted(report["clusters"].items()):
        lines += [
            "",
            "## Cluster %s: %s" % (name, cluster["decision"].upper()),
            "",
            "Current KAI version: %s%s"
            % (
                _cell(cluster.get("current_version")),
                " (%s)" % cluster["implementation_label"]
                if cluster.get("implementation_label")
                else "",
            ),
            "",
        ]
        if cluster["reasons"]:
            because = (
                "Not approved because:"
                if cluster["decision"] == "not_approved"
                else "Refused because:"
            )
            lines += [because, ""] + ["- %s" % r for r in cluster["reasons"]] + [""]
        lines += ["| Stage | Gate | Figure | Threshold | Result |", "|---|---|---|---|---|"]
        for g in cluster["gates"]:
            lines.append(
                "| %s | %s | %s | %s | %s |"
                % (
                    _cell(g.get("stage")),
                    _cell(g["gate"]),
                    _cell(_figure(g)),
                    _cell(g.get("threshold")),
                    "pass" if g.get("passed") else "**FAIL**",
                )
            )
        if cluster["steps"]:
            lines += ["", "| Step | Status | Reason |", "|---|---|---|"]
            for s in cluster["steps"]:
                lines.append(
                    "| %s | %s | %s |"
                    % (_cell(s["step"]), s["status"].replace("_", " "), _cell(s["reason"]))
                )
        if cluster["evidence"]:
            lines += ["", "Evidence:", ""]
            lines += ["- [%s](%s)" % (p, p) for p in cluster["evidence"]]
    return "\n".join(lines) + "\n"


def _gate_case(name, g):
    """A gate of cluster ``name`` as a test case; a failed gate is a failure with its figure,
    threshold and fix."""
    case = {"classname": "rollout.%s.%s" % (name, g.get("stage") or "gate"), "name": g["gate"]}
    if not g.get("passed"):
        case["failure"] = {
            "message": g.get("message") or "gate failed",
            "type": "gate",
            "text": "figure: %s; threshold: %s; fix: %s"
            % (g.get("figure"), g.get("threshold"), g.get("fix") or "-"),
        }
    return case


def _step_cases(name, steps):
    """A failed change step is a failure of its own; a step that did not run is skipped, with
    its reason."""
    failed = [
        {
            "classname": "rollout.%s.step" % name,
            "name": "step:%s" % s["step"],
            "failure": {
                "message": "step %s failed" % s["step"],
                "type": "step",
                "text": s["reason"] or "no reason recorded",
            },
        }
        for s in steps
        if s["status"] == "failed" and s["step"] in DECIDING_STEPS
    ]
    not_run = [
        {
            "classname": "rollout.%s.step" % name,
            "name": "step:%s" % s["step"],
            "skipped": s["reason"] or "not run",
        }
        for s in steps
        if s["status"] == "not_run"
    ]
    return failed + not_run


def junit_suites(report):
    """One suite per cluster, one case per gate, then its failed change steps and the steps that
    did not run. A report that could not be built is one error, in a suite of its own."""
    suites = []
    if report.get("error"):
        error = {"message": report["error"], "type": "report", "text": report["error"]}
        suites.append(
            {
                "name": "rollout report",
                "cases": [{"classname": "rollout.report", "name": "report", "error": error}],
            }
        )
    for name, cluster in sorted(report["clusters"].items()):
        cases = [_gate_case(name, g) for g in cluster["gates"]]
        suites.append(
            {"name": "rollout " + name, "cases": cases + _step_cases(name, cluster["steps"])}
        )
    return suites


def render_junit(report):
    """junit.xml, written by the one JUnit writer (render/junit.py)."""
    return junit.render("kaiops rollout", junit_suites(report))


# ---------------------------------------------------------------- the change board's summary

DECISION_TEXT = {
    "approved": "the target runs, every verification gate passed and the rollback is rehearsed "
    "(or waived)",
    "not_approved": "the target runs and every verification gate passed, but no rollback of this "
    "version pair was rehearsed: not approved",
    "rolled_back": "a gate failed; rolled back to the recorded revision and verified there",
    "rollback_failed": "a gate failed and the rollback did not end verified: act now",
    "paused": "a gate failed; stopped as the policy says, nothing undone",
    "continued": "a gate failed; the change stays by the recorded decision",
    "failed": "a change step failed",
    "proceed": "preflight passed; no change was made (check run, or the run stopped)",
    "refused": "refused before any change",
}


def _fmt_s(value):
    return "-" if value is None else "%s s" % value


DOWNGRADE_TEXT = {
    "upgrade": "helm upgrade to the recorded chart version",
    "reinstall": "helm uninstall and install of the recorded chart version",
    "none": "nothing to do, it already ran",
}


def rehearsal_line(name, change, decision):
    """The rollback rehearsal an approval rests on: the bundle, the version pair, its time to
    restore, verified; or none on record for the pair (not approved), or the waiver."""
    pair = change.get("rehearsal_pair") or {}
    found = change.get("rehearsal")
    head = "Rollback rehearsal for %s: " % name
    if found:
        where = found.get("operation") or "rollback"
        if found.get("group"):
            where += ", on %s of rehearsal group %s" % (found.get("cluster"), found["group"])
        return (
            head
            + "[%s](../%s/report.md) (%s), %s -> %s, time to restore %s, %s to a "
            % (
                found.get("bundle"),
                found.get("bundle"),
                where,
                found.get("from") or "-",
                found.get("to") or "-",
                _fmt_s(found.get("time_to_restore_s")),
                _fmt_s(found.get("time_to_verified_s")),
            )
            + "passing verification, verified."
        )
    none = "none on record for %s" % pair_text(pair.get("cluster") or name, pair)
    waiver = change.get("rehearsal_waiver")
    if waiver:
        return head + "%s; waived: %s." % (none, waiver_text(waiver))
    if decision == "not_approved":
        return head + (
            "%s: not approved (rehearse it: playbooks/rollback.yml from this run's bundle, then "
            "roll out again; or kaiops_rollout_rehearsal_waiver)." % none
        )
    return head + none + "."


def _changed(cluster):
    change = cluster.get("change") or {}
    before, after = change.get("before") or {}, change.get("after") or {}
    upgrade = change.get("upgrade") or {}
    text = "%s (rev %s)" % (
        before.get("version") or cluster.get("current_version") or "-",
        before.get("revision") or "-",
    )
    if after.get("version"):
        text += " -> %s (rev %s)" % (after.get("version"), after.get("revision"))
    rollback = change.get("rollback") or {}
    if rollback.get("revision") or rollback.get("version"):
        # What runs after the downgrade, read from the components (not helm's label).
        text += " -> back to %s (rev %s)" % (
            rollback.get("version") or "unreadable",
            rollback.get("revision") or "-",
        )
    if upgrade and not upgrade.get("changed") and upgrade.get("status") == "done":
        text += ", no upgrade needed"
    if change.get("prior"):
        text += ", already approved in %s" % change["prior"]["bundle"]
    return text


def change_board(report):
    """The part a change board reads first: what changed where and by whom, each gate with its
    figure and threshold, the decision, the rollback and its time, before/after, governance,
    cost, evidence links."""
    clusters = report.get("clusters") or {}
    if not any(c.get("change") for c in clusters.values()):
        return []
    req = report["request"] if isinstance(report.get("request"), dict) else {}
    rollback_only = all(
        (c.get("change") or {}).get("operation") == "rollback" for c in clusters.values()
    )
    text = DECISION_TEXT.get(report["decision"], report["decision"])
    if rollback_only:
        text = {
            "rolled_back": "rolled back to the revision the bundle recorded before its change, "
            "configuration restored, verified",
            "rollback_failed": "the rollback did not end verified: act now",
        }.get(report["decision"], text)
    lines = [
        "%s." % (text[:1].upper() + text[1:]),
        "",
        "## What changed, where, by whom",
        "",
        "| Cluster | Decision | Change (version, Helm revision) | Owner | On a failed gate "
        "| Took |",
        "|---|---|---|---|---|---|",
    ]
    for name, c in sorted(clusters.items()):
        change = c.get("change") or {}
        took = change.get("duration_s")
        lines.append(
            "| %s | **%s** | %s | %s | %s | %s |"
            % (
                _cell(name),
                c["decision"].upper(),
                _cell(_changed(c)),
                _cell((c.get("request") or req).get("change_owner")),
                _cell(policy_text(change.get("policy"))),
                _fmt_s(took),
            )
        )
    lines += [
        "",
        "Prevention (this upgrade) and remediation (recovery.yml, its own owner and report) are "
        "separate steps: this report covers prevention.",
        "",
        "## Gates",
        "",
        "| Cluster | Stage | Gate | Figure | Threshold | Result | Evidence |",
        "|---|---|---|---|---|---|---|",
    ]
    for name, c in sorted(clusters.items()):
        for g in c["gates"]:
            if g.get("stage") not in (
                "upgrade",
                "verify",
                "rollback",
                "governance",
                APPROVAL_STAGE,
            ):
                continue
            link = g.get("evidence")
            lines.append(
                "| %s | %s | %s | %s | %s | %s | %s |"
                % (
                    _cell(name),
                    _cell(g.get("stage")),
                    _cell(g["gate"]),
                    _cell(_figure(g)),
                    _cell(g.get("threshold")),
                    "pass" if g.get("passed") else "**FAIL**",
                    "[%s](%s)" % (link, link) if link else "-",
                )
            )
    pre = sum(
        1
        for c in clusters.values()
        for g in c["gates"]
        if g.get("stage") in ("request", "cluster", "snapshot")
    )
    pre_failed = sum(
        1
        for c in clusters.values()
        for g in c["gates"]
        if g.get("stage") in ("request", "cluster", "snapshot") and not g.get("passed")
    )
    lines += [
        "",
        "Request and preflight: %d gates, %d failed (per cluster below)." % (pre, pre_failed),
    ]
    for name, c in sorted(clusters.items()):
        change = c.get("change") or {}
        figs = change.get("figures") or {}
        if figs.get("baseline") or figs.get("verify"):
            lines += [
                "",
                "## Before and after the change: %s" % name,
                "",
                "| Figure | Before (%s) | After (%s) |"
                % (
                    (figs.get("baseline") or {}).get("version") or "-",
                    (figs.get("verify") or {}).get("version") or "-",
                ),
                "|---|---|---|",
            ]
            for row in side_by_side(figs.get("baseline"), figs.get("verify")):
                lines.append(
                    "| %s | %s | %s |" % (row["figure"], _cell(row["before"]), _cell(row["after"]))
                )
            if not figs.get("baseline"):
                lines += [
                    "",
                    "Before: not measured in this run (%s)."
                    % (change.get("baseline_note") or "see the steps"),
                ]
        rollback = change.get("rollback") or {}
        if rollback:
            restore = rollback.get("restore") or {}
            summary = restore.get("summary") or {}
            lines += [
                "",
                "## Rollback: %s" % name,
                "",
                "- downgrade to %s: %s (release revision %s -> %s), now runs %s: %s; time to "
                "restore %s (downgrade started to every component at the recorded version, rolled "
                "out), %s to a passing verification"
                % (
                    (change.get("before") or {}).get("version") or "-",
                    DOWNGRADE_TEXT.get(rollback.get("method"), rollback.get("method") or "-"),
                    rollback.get("revision_before") or "-",
                    rollback.get("revision") or "-",
                    rollback.get("version") or "unreadable",
                    rollback.get("status"),
                    _fmt_s(rollback.get("time_to_restore_s")),
                    _fmt_s(rollback.get("time_to_verified_s")),
                ),
                "- from the failed gate's decision to a passing verification on %s: %s"
                % (
                    (change.get("before") or {}).get("version") or "-",
                    _fmt_s(rollback.get("decision_to_verified_s")),
                )
                if rollback.get("decision_to_verified_s") is not None
                else "- (rollback.yml: no failed gate; timed from the start of the downgrade)",
                "- why this downgrade: %s (helm rollback is not used: it does not restore KAI's "
                "chart, docs/change-window.md)" % _cell(rollback.get("method_why") or "-"),
                "- kept through it: %s"
                % (
                    ", ".join(
                        "%s %d" % (k, len(v))
                        for k, v in sorted((rollback.get("survivors_after") or {}).items())
                    )
                    or "not read"
                ),
                "- configuration restored: %s, already as recorded: %s, "
                "**not restored automatically: %s**"
                % (summary.get("restored"), summary.get("unchanged"), summary.get("not_restored")),
            ]
            for item in summary.get("not_restored_objects") or []:
                lines.append("  - %s" % _cell(item))
        if "rehearsal" in change:
            lines += ["", rehearsal_line(name, change, c["decision"])]
        interrupted = change.get("interrupted_runs") or []
        if interrupted:
            lines += ["", "Interrupted runs of this change, kept as they are:"]
            for run in interrupted:
                lines.append(
                    "- %s (status %s, last task: %s)%s"
                    % (
                        run["bundle"],
                        run.get("status"),
                        run.get("last_task") or "-",
                        "; resumed from its snapshot"
                        if change.get("resume", {}).get("bundle") == run["bundle"]
                        else "",
                    )
                )
        interventions = [
            r
            for r in (rollback.get("restore") or {}).get("results") or []
            if r.get("outcome") in ("recreated", "replaced")
        ]
        lines += [
            "",
            "Interventions on %s: %s."
            % (
                name,
                "; ".join("%s %s" % (r["outcome"], r["object"]) for r in interventions)
                if interventions
                else "none beyond the Helm %s" % ("downgrade" if rollback else "upgrade"),
            ),
        ]
        governance = change.get("governance")
        if governance:
            lines += ["", "## Governance: %s" % name, ""]
            if governance.get("error"):
                lines.append("RBAC not read: %s" % _cell(governance["error"]))
            else:
                lines += ["| Object | Can edit it (non-system subjects first) |", "|---|---|"]
                for t in governance.get("targets") or []:
                    editors = sorted(t["editors"], key=lambda e: (e["system"], e["subject"]))
                    text = ", ".join(
                        "%s%s" % (e["subject"], "" if not e["system"] else " (system)")
                        for e in editors
                    )
                    lines.append(
                        "| %s | %s |"
                        % (_cell(t["target"]), _cell(text) if text else "nobody found")
                    )
                broad = governance.get("broad") or []
                lines += [""] + (
                    ["Broad grants flagged:"]
                    + [
                        "- **%s** via %s: %s" % (b["subject"], b["via"], ", ".join(b["why"]))
                        for b in broad
                    ]
                    if broad
                    else ["No broad grant flagged."]
                )
            regression = governance.get("regression_evidence")
            if regression:
                lines += ["", "Regression evidence is kept in: %s" % _cell(regression)]
    cost = report.get("cost")
    if cost and cost.get("markdown"):
        lines += ["", cost["markdown"].rstrip()]
    elif cost and cost.get("error"):
        lines += ["", "Cost of the change window: not computed (%s)." % cost["error"]]
    lines += ["", "---", ""]
    return lines


def change_cost(clusters, rate=0):
    """Utilisation and cost of the change window (gpu_access/cost.py) from the probes' lifetimes:
    each probe holds half of its GPU group from bind to the end of its verification; the pool is
    the clusters' GPUs. Busy time is not useful throughput: valid completions are counted apart."""
    from ansible_collections.kaiops.runbooks.plugins.module_utils.gpu_access import cost

    starts, ends, pool, workloads, completed = [], [], [], [], 0
    for name, c in sorted(clusters.items()):
        change = (c or {}).get("change") or {}
        figs = change.get("figures") or {}
        gpus, groups = 0, set()
        for phase, f in figs.items():
            if not f or not f.get("started_wall") or not f.get("finished_wall"):
                continue
            starts.append(f["started_wall"])
            ends.append(f["finished_wall"])
            gpus = max(gpus, (f.get("capacity") or {}).get("gpus") or 0)
            completed += f.get("valid_completions") or 0
            for r in f.get("probe_results") or []:
                gpu = "%s/%s" % (name, r.get("gpu_group") or "%s-%s" % (phase, r["name"]))
                groups.add(gpu)
                sub = r.get("submitted_wall")
                if sub is None:
                    continue
                bound = r.get("submit_to_bound_s")
                workloads.append(
                    {
                        "name": "%s/%s/%s" % (name, phase, r["name"]),
                        "gpu": gpu,
                        "portion": "0.5",
                        "start": None if bound is None else sub + bound,
                        "end": f["finished_wall"],
                        "submitted": sub,
                    }
                )
            for stamp in (change.get("started_wall"), change.get("finished_wall")):
                if stamp:
                    starts.append(stamp)
                    ends.append(stamp)
        pool += sorted(groups) + [
            "%s/gpu-%d" % (name, i) for i in range(max(gpus - len(groups), 0))
        ]
    if not workloads or not starts:
        return None
    t0 = min(starts)

    def hours(t):
        return Decimal(str(round(t - t0, 3))) / 3600

    items = [
        cost.Workload(
            name=w["name"],
            gpus=w["gpu"],
            portion=Decimal(w["portion"]),
            start=None if w["start"] is None else hours(w["start"]),
            end=hours(w["end"]),
            submitted=hours(w["submitted"]),
        )
        for w in workloads
    ]
    try:
        window = cost.Window(start=Decimal(0), end=hours(max(ends)), gpus=pool)
        rep = cost.compute_report(window, items, rate or 0)
    except cost.CostError as exc:
        return {"error": str(exc)}
    md = cost.render_markdown(
        rep, completed_valid_jobs=completed, title="Utilisation and cost of the change window"
    )
    return {
        "window_hours": str(cost.q(rep.window_hours, "0.0001")),
        "gpus": rep.gpus,
        "available_gpu_hours": str(rep.available_gpu_hours),
        "busy_gpu_hours": str(rep.busy_gpu_hours),
        "utilisation": None if rep.utilisation is None else str(rep.utilisation),
        "rate": str(rep.rate),
        "window_cost": str(rep.window_cost),
        "completed_valid_jobs": completed,
        "markdown": md,
    }
