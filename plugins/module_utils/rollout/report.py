# Copyright: kaiops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The rollout report: one document per run, rendered as JSON, Markdown and JUnit XML.

Pure functions (``render_markdown`` reads its template). ``build`` takes the change request
and, per cluster, the record of ``rollout/pipeline.py`` (gates, steps - run / not run / failed,
with the reason - and evidence paths), and decides:

- cluster decision ``refused`` when any gate failed, ``proceed`` when every gate passed;
- run decision ``refused`` when any cluster was refused, otherwise ``proceed``.

The steps that are not built yet come from the pipeline's ``STAGES``. A step that was not run
says why; nothing is reported as done that was not done. ``error_report`` is the document
written when the report itself cannot be built, so a run always leaves its three files.

Judging apart from rendering: ``markdown_context`` (with ``change_board``, the change board's
summary) turns the document into the data ``templates/reports/rollout.md.j2`` lays out;
``junit_suites`` gives its cases to the one JUnit writer (``render/junit.py``).
"""

from decimal import Decimal

from ansible_collections.kaiops.runbooks.plugins.module_utils.evidence.report import run_line
from ansible_collections.kaiops.runbooks.plugins.module_utils.render import junit, markdown
from ansible_collections.kaiops.runbooks.plugins.module_utils.rollout.change import (
    APPROVAL_STAGE,
    APPROVAL_STEP,
    DECISIONS,
    pair_text,
    policy_text,
)
from ansible_collections.kaiops.runbooks.plugins.module_utils.rollout.pipeline import (
    METHOD_TEXT,
    STAGES,
    STEP_STATUSES,
)
from ansible_collections.kaiops.runbooks.plugins.module_utils.rollout.pipeline import (
    pending_steps as pipeline_pending_steps,
)
from ansible_collections.kaiops.runbooks.plugins.module_utils.rollout.probes import side_by_side
from ansible_collections.kaiops.runbooks.plugins.module_utils.rollout.waves import fleet

SCHEMA = "kaiops.report/v1"
RUN_EVIDENCE = ["run.json", "tasks.jsonl", "junit.xml", "manifest.sha256"]
# Steps in the order the rollout runs them; a step outside the pipeline (no record) comes first.
STEP_ORDER = {s["step"]: n for n, s in enumerate(STAGES)}
# The soak's verification runs only when the request asks for it (not a step of every record):
# after the verification, before the decision.
STEP_ORDER["soak"] = STEP_ORDER["verify"] + 0.5
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
    "not_started",
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
    if (entry.get("change") or {}).get("not_started"):
        reasons.append(entry["change"]["not_started"])  # never started: the wave that stopped it
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
    fleet_view = fleet(out_clusters)
    if fleet_view:
        extra["fleet"] = fleet_view
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


def _figure(gate_record):
    """A gate's figure as the report shows it: a number with its unit when the gate has one."""
    figure, unit = gate_record.get("figure"), gate_record.get("unit")
    if unit and isinstance(figure, (int, float)) and not isinstance(figure, bool):
        return "%s %s" % (figure, unit)
    return figure


def _request(report):
    return report["request"] if isinstance(report.get("request"), dict) else {}


def _not_run_steps(report):
    """The steps some cluster did not run, in the order the rollout runs them."""
    return sorted(
        {
            s["step"]
            for c in report["clusters"].values()
            for s in c["steps"]
            if s["status"] == "not_run"
        },
        key=lambda step: (STEP_ORDER.get(step, -1), step),
    )


def _asked(req):
    """What was asked, each field as the report shows it."""
    return {
        "change_owner": req.get("change_owner"),
        "kai_version": req.get("kai_version"),
        "rollback_target": req.get("rollback_target"),
        "regression_waiver": waiver_text(req.get("regression_waiver")),
        "rehearsal_waiver": waiver_text(req.get("rehearsal_waiver")),
    }


def _thresholds(req):
    thresholds = req.get("thresholds")
    if isinstance(thresholds, dict) and thresholds:
        return [{"name": k, "value": v} for k, v in sorted(thresholds.items())]
    return []


def _gate_row(g):
    return {
        "stage": g.get("stage"),
        "gate": g["gate"],
        "figure": _figure(g),
        "threshold": g.get("threshold"),
        "passed": bool(g.get("passed")),
    }


def _cluster_section(name, cluster):
    """A cluster's part of the report: its decision and reasons, gates, steps and evidence."""
    return {
        "name": name,
        "decision": cluster["decision"].upper(),
        "current_version": cluster.get("current_version"),
        "label": cluster.get("implementation_label") or None,
        "reasons": cluster["reasons"],
        "not_approved": cluster["decision"] == "not_approved",
        "gates": [_gate_row(g) for g in cluster["gates"]],
        "steps": [
            {"step": s["step"], "status": s["status"].replace("_", " "), "reason": s["reason"]}
            for s in cluster["steps"]
        ],
        "evidence": cluster["evidence"],
    }


def markdown_context(report):
    """What ``templates/reports/rollout.md.j2`` lays out: each choice made, each figure
    formatted (the change board's part from ``change_board``)."""
    req = _request(report)
    rollback_only = report.get("clusters") and all(
        (c.get("change") or {}).get("operation") == "rollback" for c in report["clusters"].values()
    )
    return {
        "operation": "rollback" if rollback_only else "rollout",
        "generated_at": report["generated_at"],
        "run_line": run_line(report["run"]) if report.get("run") else None,
        "decision": report["decision"].upper(),
        "error": report.get("error"),
        "board": change_board(report),
        "fleet": _fleet_context(report.get("fleet")),
        "not_run": ", ".join(_not_run_steps(report)),
        "request": _asked(req),
        "cluster_names": sorted(report["clusters"]),
        "thresholds": _thresholds(req),
        "evidence": report["evidence"],
        "clusters": [_cluster_section(n, c) for n, c in sorted(report["clusters"].items())],
    }


def _fleet_context(view):
    """The fleet view as report.md words it: decisions upper-case, versions and times filled."""
    if not view:
        return None
    rows = [
        dict(
            r,
            decision=r["decision"].upper(),
            before=r["before"] or "-",
            after=r["after"] or "unchanged",
            failed_gates=", ".join(r["failed_gates"]) or "-",
            took=_fmt_s(r["duration_s"]),
        )
        for r in view["rows"]
    ]
    return dict(
        view,
        decision=view["decision"].upper(),
        not_approved=", ".join(
            "%s %s" % (c["cluster"], c["decision"].upper()) for c in view["not_approved"]
        ),
        rows=rows,
    )


def render_markdown(report, template_dir=None):
    """report.md: ``report`` rendered with ``templates/reports/rollout.md.j2``."""
    return markdown.render("rollout.md.j2", markdown_context(report), template_dir)


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


def _fleet_cases(view):
    """The fleet's waves as cases: a wave over its failure budget is a failure; a cluster not
    started is skipped with its reason (never a pass)."""
    cases = []
    for w in view["waves"]:
        case = {"classname": "rollout.fleet", "name": "wave %d budget" % w["wave"]}
        if w["spent"]:
            case["failure"] = {
                "message": "wave %d: %d failed / %d allowed"
                % (w["wave"], len(w["failed"]), w["allowed"]),
                "type": "failure_budget",
                "text": "failed: %s" % ", ".join(w["failed"]),
            }
        cases.append(case)
    cases += [
        {
            "classname": "rollout.fleet",
            "name": "not started:%s" % c["cluster"],
            "skipped": c["reason"],
        }
        for c in view["not_started"]
    ]
    return cases


def junit_suites(report):
    """One suite per cluster, one case per gate, then its failed change steps and the steps that
    did not run; the fleet's waves in a suite of their own when clusters recorded waves. A report
    that could not be built is one error, in a suite of its own."""
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
    if report.get("fleet"):
        suites.append({"name": "rollout fleet", "cases": _fleet_cases(report["fleet"])})
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
    "not_started": "not started: an earlier wave failed more than its failure budget allows",
    "refused": "refused before any change",
}


def _fmt_s(value):
    return "-" if value is None else "%s s" % value


# A rollback run's own words for its decisions (every cluster's change a rollback).
ROLLBACK_DECISION_TEXT = {
    "rolled_back": "rolled back to the revision the bundle recorded before its change, "
    "configuration restored, verified",
    "rollback_failed": "the rollback did not end verified: act now",
}
# The gates the change board shows (the change's own) and those it only counts (before it).
BOARD_STAGES = ("upgrade", "verify", "soak", "rollback", "governance", APPROVAL_STAGE)
PREFLIGHT_STAGES = ("request", "cluster", "snapshot")

# The downgrades as the steps name them, and "none" when no downgrade was needed.
DOWNGRADE_TEXT = dict(METHOD_TEXT, none="nothing to do, it already ran")


def rehearsal(name, change, decision):
    """The rollback rehearsal an approval rests on: the bundle found, with the version pair, its
    time to restore, verified; or none on record for the pair (with the waiver, or not
    approved)."""
    pair = change.get("rehearsal_pair") or {}
    found = change.get("rehearsal")
    if found:
        where = found.get("operation") or "rollback"
        if found.get("group"):
            where += ", on %s of rehearsal group %s" % (found.get("cluster"), found["group"])
        return {
            "found": True,
            "bundle": found.get("bundle"),
            "where": where,
            "versions": "%s -> %s" % (found.get("from") or "-", found.get("to") or "-"),
            "restore": _fmt_s(found.get("time_to_restore_s")),
            "verified": _fmt_s(found.get("time_to_verified_s")),
        }
    waiver = change.get("rehearsal_waiver")
    return {
        "found": False,
        "pair": pair_text(pair.get("cluster") or name, pair),
        "waiver": waiver_text(waiver) if waiver else None,
        "not_approved": decision == "not_approved",
    }


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


def _headline(report, clusters):
    """The decision in words; a rollback's own words when every cluster rolled back."""
    rollback_only = all(
        (c.get("change") or {}).get("operation") == "rollback" for c in clusters.values()
    )
    text = DECISION_TEXT.get(report["decision"], report["decision"])
    if rollback_only:
        text = ROLLBACK_DECISION_TEXT.get(report["decision"], text)
    return text[:1].upper() + text[1:]


def _change_row(name, cluster, req):
    change = cluster.get("change") or {}
    return {
        "name": name,
        "decision": cluster["decision"].upper(),
        "change": _changed(cluster),
        "owner": (cluster.get("request") or req).get("change_owner"),
        "policy": policy_text(change.get("policy")),
        "took": _fmt_s(change.get("duration_s")),
    }


def _board_gates(name, cluster):
    """The gates of the change itself (upgrade, verification, rollback, governance, approval);
    the request's and the preflight's are only counted here."""
    return [
        dict(_gate_row(g), cluster=name, evidence=g.get("evidence"))
        for g in cluster["gates"]
        if g.get("stage") in BOARD_STAGES
    ]


def _preflight_gates(clusters):
    return [g for c in clusters.values() for g in c["gates"] if g.get("stage") in PREFLIGHT_STAGES]


def _before_after(change):
    """The figures measured before and after the change, side by side (None: neither)."""
    figs = change.get("figures") or {}
    if not (figs.get("baseline") or figs.get("verify")):
        return None
    rows = side_by_side(figs.get("baseline"), figs.get("verify"))
    soak = figs.get("soak")
    if soak:  # the soak's figures beside the verification's, row for row
        at_end = {r["figure"]: r["after"] for r in side_by_side(None, soak)}
        for row in rows:
            row["soak"] = at_end[row["figure"]]
    return {
        "before": (figs.get("baseline") or {}).get("version") or "-",
        "after": (figs.get("verify") or {}).get("version") or "-",
        "soak": "after a soak of %s s" % change.get("soak_s") if soak else None,
        "rows": rows,
        "not_measured": None
        if figs.get("baseline")
        else (change.get("baseline_note") or "see the steps"),
    }


def _rollback(change, rollback):
    """The downgrade: how, to what, what it kept and restored, and its times."""
    summary = (rollback.get("restore") or {}).get("summary") or {}
    before = (change.get("before") or {}).get("version") or "-"
    from_decision = rollback.get("decision_to_verified_s")
    return {
        "before": before,
        "method": DOWNGRADE_TEXT.get(rollback.get("method"), rollback.get("method") or "-"),
        "revision_before": rollback.get("revision_before") or "-",
        "revision": rollback.get("revision") or "-",
        "version": rollback.get("version") or "unreadable",
        "status": rollback.get("status"),
        "restore": _fmt_s(rollback.get("time_to_restore_s")),
        "verified": _fmt_s(rollback.get("time_to_verified_s")),
        "from_decision": None if from_decision is None else _fmt_s(from_decision),
        "why": rollback.get("method_why") or "-",
        "kept": ", ".join(
            "%s %d" % (k, len(v))
            for k, v in sorted((rollback.get("survivors_after") or {}).items())
        )
        or "not read",
        "restored": summary.get("restored"),
        "unchanged": summary.get("unchanged"),
        "not_restored": summary.get("not_restored"),
        "not_restored_objects": summary.get("not_restored_objects") or [],
    }


def _interrupted(change):
    """Earlier runs of this change that were cut off, and which one this run resumed."""
    return [
        {
            "bundle": run["bundle"],
            "status": run.get("status"),
            "last_task": run.get("last_task") or "-",
            "resumed": change.get("resume", {}).get("bundle") == run["bundle"],
        }
        for run in change.get("interrupted_runs") or []
    ]


def _governance(governance):
    """Who can edit KAI's objects, non-system subjects first, and the broad grants flagged."""
    out = {"error": governance.get("error"), "targets": [], "broad": []}
    if not out["error"]:
        for t in governance.get("targets") or []:
            editors = sorted(t["editors"], key=lambda e: (e["system"], e["subject"]))
            text = ", ".join(
                "%s%s" % (e["subject"], "" if not e["system"] else " (system)") for e in editors
            )
            out["targets"].append({"target": t["target"], "editors": text})
        out["broad"] = [
            {"subject": b["subject"], "via": b["via"], "why": ", ".join(b["why"])}
            for b in governance.get("broad") or []
        ]
    out["regression"] = governance.get("regression_evidence")
    return out


def _board_cluster(name, cluster):
    """A cluster's sections of the change board, in the order they are read."""
    change = cluster.get("change") or {}
    rollback = change.get("rollback") or {}
    out = {
        "name": name,
        "figures": _before_after(change),
        "rollback": _rollback(change, rollback) if rollback else None,
        "rehearsal": rehearsal(name, change, cluster["decision"])
        if "rehearsal" in change
        else None,
        "interrupted": _interrupted(change),
        "interventions": [
            {"outcome": r["outcome"], "object": r["object"]}
            for r in (rollback.get("restore") or {}).get("results") or []
            if r.get("outcome") in ("recreated", "replaced")
        ]
        + [
            {"outcome": h.get("outcome"), "object": h.get("what")}
            for h in rollback.get("hooks_deleted") or []
        ],
    }
    governance = change.get("governance")
    out["governance"] = _governance(governance) if governance else None
    return out


def change_board(report):
    """The part a change board reads first, as data for the template (None when no cluster has
    a change): what changed where and by whom, each gate with its figure and threshold, the
    decision, the rollback and its time, before/after, governance, cost, evidence links."""
    clusters = report.get("clusters") or {}
    if not any(c.get("change") for c in clusters.values()):
        return None
    req = _request(report)
    ordered = sorted(clusters.items())
    headline = _headline(report, clusters)
    changes = [_change_row(name, c, req) for name, c in ordered]
    gates = [row for name, c in ordered for row in _board_gates(name, c)]
    preflight = _preflight_gates(clusters)
    sections = [_board_cluster(name, c) for name, c in ordered]
    cost = report.get("cost") or {}
    return {
        "headline": headline,
        "changes": changes,
        "gates": gates,
        "preflight": len(preflight),
        "preflight_failed": sum(1 for g in preflight if not g.get("passed")),
        "clusters": sections,
        # the cost module renders its own section (change_cost)
        "cost_markdown": cost["markdown"].rstrip() if cost.get("markdown") else None,
        "cost_error": cost.get("error"),
    }


def _probe_workloads(name, phase, f):
    """The workloads (wall-clock seconds) and GPU groups of one verification's probes.

    Only a probe that could not start when submitted counts towards the failure loss, from its
    submission: one that never bound or whose bind failed first. A probe that bound at its first
    attempt only waited in the queue (seconds of scheduling), which is queue age, not loss
    (reproduce's cost section follows the same rule)."""
    workloads, groups = [], set()
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
                "submitted": sub if bound is None or r.get("failed_attempts") else None,
            }
        )
    return workloads, groups


def _cluster_window(name, change, acc):
    """One cluster's verifications added to ``acc`` (starts, ends, pool, workloads,
    completed): the pool gets its probes' groups and its other GPUs."""
    gpus, groups = 0, set()
    for phase, f in (change.get("figures") or {}).items():
        if not f or not f.get("started_wall") or not f.get("finished_wall"):
            continue
        acc["starts"].append(f["started_wall"])
        acc["ends"].append(f["finished_wall"])
        gpus = max(gpus, (f.get("capacity") or {}).get("gpus") or 0)
        acc["completed"] += f.get("valid_completions") or 0
        found, used = _probe_workloads(name, phase, f)
        acc["workloads"] += found
        groups |= used
        for stamp in (change.get("started_wall"), change.get("finished_wall")):
            if stamp:
                acc["starts"].append(stamp)
                acc["ends"].append(stamp)
    acc["pool"] += sorted(groups) + [
        "%s/gpu-%d" % (name, i) for i in range(max(gpus - len(groups), 0))
    ]


def change_cost(clusters, rate=0):
    """Utilisation and cost of the change window (module_utils/cost.py) from the probes'
    lifetimes: each probe holds half of its GPU group from bind to the end of its verification;
    the pool is the clusters' GPUs. Busy time is not useful throughput: valid completions are
    counted apart."""
    from ansible_collections.kaiops.runbooks.plugins.module_utils import cost

    acc = {"starts": [], "ends": [], "pool": [], "workloads": [], "completed": 0}
    for name, c in sorted(clusters.items()):
        _cluster_window(name, (c or {}).get("change") or {}, acc)
    if not acc["workloads"] or not acc["starts"]:
        return None
    t0 = min(acc["starts"])

    def hours(t):
        return Decimal(str(round(t - t0, 3))) / 3600

    items = [
        cost.Workload(
            name=w["name"],
            gpus=w["gpu"],
            portion=Decimal(w["portion"]),
            start=None if w["start"] is None else hours(w["start"]),
            end=hours(w["end"]),
            submitted=None if w["submitted"] is None else hours(w["submitted"]),
        )
        for w in acc["workloads"]
    ]
    try:
        window = cost.Window(start=Decimal(0), end=hours(max(acc["ends"])), gpus=acc["pool"])
        rep = cost.compute_report(window, items, rate or 0)
    except cost.CostError as exc:
        return {"error": str(exc)}
    return {
        "window_hours": str(cost.q(rep.window_hours, "0.0001")),
        "gpus": rep.gpus,
        "available_gpu_hours": str(rep.available_gpu_hours),
        "busy_gpu_hours": str(rep.busy_gpu_hours),
        "utilisation": None if rep.utilisation is None else str(rep.utilisation),
        "rate": str(rep.rate),
        "window_cost": str(rep.window_cost),
        "completed_valid_jobs": acc["completed"],
        "markdown": cost.render_markdown(
            rep,
            completed_valid_jobs=acc["completed"],
            title="Utilisation and cost of the change window",
        ),
    }
