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

from xml.sax.saxutils import escape, quoteattr

from ansible_collections.kaiops.runbooks.plugins.module_utils.rollout.pipeline import (
    STEP_STATUSES,
)
from ansible_collections.kaiops.runbooks.plugins.module_utils.rollout.pipeline import (
    pending_steps as pipeline_pending_steps,
)

SCHEMA = "kaiops.report/v1"
RUN_EVIDENCE = ["run.json", "tasks.jsonl", "junit.xml", "manifest.sha256"]
# The step of a cluster that has no record: it failed before its preflight ran.
NO_RECORD_STEP = {
    "step": "preflight",
    "status": "failed",
    "reason": "no preflight recorded: the host failed before the preflight ran; "
    "see the task output",
}


def _decision(gates):
    return "refused" if any(not g.get("passed") for g in gates) else "proceed"


def build(request, clusters, generated_at, run_id=None, pending_steps=None):
    """The report document (what report.json holds).

    ``pending_steps``: steps of the rollout that come after preflight, each ``{step, reason}``
    (default: the pipeline's steps not built yet); a cluster that did not record one gets it as
    ``not_run``, with the refusal as the reason when the cluster was refused, else the given
    reason.
    """
    if pending_steps is None:
        pending_steps = pipeline_pending_steps()
    request = request if isinstance(request, dict) else {}
    out_clusters = {}
    for name in sorted(clusters):
        entry = clusters[name] or {}
        if not entry:
            entry = {"steps": [NO_RECORD_STEP]}
        gates = list(entry.get("gates") or [])
        decision = _decision(gates) if gates else "refused"
        reasons = [
            "%s (fix: %s)" % (g.get("message") or g["gate"], g["fix"])
            if g.get("fix")
            else g.get("message") or g["gate"]
            for g in gates
            if not g.get("passed")
        ]
        if not gates:
            reasons = ["no preflight gate was recorded for this cluster"]
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
            failed_names = [g["gate"] for g in gates if not g.get("passed")]
            reason = (
                "preflight refused (failed gates: %s)"
                % (", ".join(failed_names) or "none recorded")
                if decision == "refused"
                else pending.get("reason") or "not run"
            )
            steps.append({"step": pending.get("step"), "status": "not_run", "reason": reason})
        out_clusters[name] = {
            "decision": decision,
            "reasons": reasons,
            "request": entry.get("request"),
            "current_version": entry.get("current_version"),
            "gates": gates,
            "steps": steps,
            "evidence": sorted(entry.get("evidence") or []),
        }
    refused = sorted(n for n, c in out_clusters.items() if c["decision"] == "refused")
    return {
        "schema": SCHEMA,
        "kind": "rollout",
        "run_id": run_id,
        "generated_at": generated_at,
        "kai_version": request.get("kai_version"),
        "request": request,
        "decision": "refused" if refused or not out_clusters else "proceed",
        "refused_clusters": refused,
        # Files of this run's bundle, relative to it (each cluster lists its own as well).
        "evidence": list(RUN_EVIDENCE),
        "clusters": out_clusters,
        "summary": {
            "clusters": len(out_clusters),
            "gates": sum(len(c["gates"]) for c in out_clusters.values()),
            "gates_failed": sum(
                1 for c in out_clusters.values() for g in c["gates"] if not g.get("passed")
            ),
        },
    }


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


def render_markdown(report):
    req = report["request"] if isinstance(report.get("request"), dict) else {}
    lines = [
        "# KAI Scheduler rollout report",
        "",
        "Generated: %s" % report["generated_at"],
        "",
        "**Decision: %s**" % report["decision"].upper(),
        "",
    ]
    if report.get("error"):
        lines += ["**Error**: %s" % _cell(report["error"]), ""]
    not_run = sorted(
        {
            s["step"]
            for c in report["clusters"].values()
            for s in c["steps"]
            if s["status"] == "not_run"
        }
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
            "Current KAI version: %s" % _cell(cluster.get("current_version")),
            "",
        ]
        if cluster["reasons"]:
            lines += ["Refused because:", ""] + ["- %s" % r for r in cluster["reasons"]] + [""]
        lines += ["| Stage | Gate | Figure | Threshold | Result |", "|---|---|---|---|---|"]
        for g in cluster["gates"]:
            lines.append(
                "| %s | %s | %s | %s | %s |"
                % (
                    _cell(g.get("stage")),
                    _cell(g["gate"]),
                    _cell(g.get("figure")),
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


def render_junit(report):
    """One testsuite per cluster, one testcase per gate; a failed gate is a <failure>. A report
    that could not be built is one <error>."""
    suites = []
    total = failures = errors = 0
    if report.get("error"):
        total, errors = 1, 1
        suites.append(
            '  <testsuite name="rollout report" tests="1" failures="0" errors="1" skipped="0">\n'
            '    <testcase classname="rollout.report" name="report"><error message=%s type=%s>'
            "%s</error></testcase>\n  </testsuite>"
            % (quoteattr(report["error"]), quoteattr("report"), escape(report["error"]))
        )
    for name, cluster in sorted(report["clusters"].items()):
        cases = []
        bad = 0
        for g in cluster["gates"]:
            classname = "rollout.%s.%s" % (name, g.get("stage") or "gate")
            body = ""
            if not g.get("passed"):
                bad += 1
                text = "figure: %s; threshold: %s; fix: %s" % (
                    g.get("figure"),
                    g.get("threshold"),
                    g.get("fix") or "-",
                )
                body = "<failure message=%s type=%s>%s</failure>" % (
                    quoteattr(g.get("message") or "gate failed"),
                    quoteattr("gate"),
                    escape(text),
                )
            cases.append(
                "    <testcase classname=%s name=%s>%s</testcase>"
                % (quoteattr(classname), quoteattr(g["gate"]), body)
            )
        total += len(cases)
        failures += bad
        suites.append(
            '  <testsuite name=%s tests="%d" failures="%d" errors="0" skipped="0">\n%s\n'
            "  </testsuite>" % (quoteattr("rollout " + name), len(cases), bad, "\n".join(cases))
        )
    return (
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        '<testsuites name="kaiops rollout" tests="%d" failures="%d" errors="%d">\n%s\n'
        "</testsuites>\n" % (total, failures, errors, "\n".join(suites))
    )
