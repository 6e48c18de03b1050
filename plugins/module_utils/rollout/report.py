# -*- coding: utf-8 -*-
# Copyright: kaiops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The rollout report: one document per run, rendered as JSON, Markdown and JUnit XML.

Pure functions. ``build`` takes the change request and, per cluster, the gates, the steps
(run / not run / failed, with the reason) and the evidence paths, and decides:

- cluster decision ``refused`` when any gate failed, ``proceed`` when every gate passed;
- run decision ``refused`` when any cluster was refused, otherwise ``proceed``.

A step that was not run says why; nothing is reported as done that was not done.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from xml.sax.saxutils import escape, quoteattr

SCHEMA = "kaiops.report/v1"
STEP_STATUSES = ("done", "failed", "not_run")


def _decision(gates):
    return "refused" if any(not g.get("passed") for g in gates) else "proceed"


def build(request, clusters, generated_at, run_id=None, pending_steps=()):
    """The report document (what report.json holds).

    ``pending_steps``: steps of the rollout that come after preflight, each
    ``{step, reason}``; a cluster that did not record one gets it as ``not_run``, with the
    refusal as the reason when the cluster was refused, else the given reason.
    """
    out_clusters = {}
    for name in sorted(clusters):
        entry = clusters[name] or {}
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
        "kai_version": request.get("target_version"),
        "request": request,
        "decision": "refused" if refused or not out_clusters else "proceed",
        "refused_clusters": refused,
        # Files of this run's bundle, relative to it (each cluster lists its own as well).
        "evidence": ["run.json", "tasks.jsonl", "junit.xml", "manifest.sha256"],
        "clusters": out_clusters,
        "summary": {
            "clusters": len(out_clusters),
            "gates": sum(len(c["gates"]) for c in out_clusters.values()),
            "gates_failed": sum(
                1 for c in out_clusters.values() for g in c["gates"] if not g.get("passed")
            ),
        },
    }


def _cell(value):
    if value is None or value == "":
        return "-"
    if isinstance(value, (list, tuple)):
        value = ", ".join(str(v) for v in value)
    return str(value).replace("|", "\\|").replace("\n", " ")


def render_markdown(report):
    req = report["request"]
    lines = [
        "# KAI Scheduler rollout report",
        "",
        "Generated: %s" % report["generated_at"],
        "",
        "**Decision: %s**" % report["decision"].upper(),
        "",
    ]
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
        "| Target version | %s |" % _cell(req.get("target_version")),
        "| Rollback target | %s |" % _cell(req.get("rollback_target")),
        "| Regression waiver | %s |"
        % _cell((req.get("regression_waiver") or {}).get("reason") or "none"),
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
    """One testsuite per cluster, one testcase per gate; a failed gate is a <failure>."""
    suites = []
    total = failures = 0
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
        '<testsuites name="kaiops rollout" tests="%d" failures="%d" errors="0">\n%s\n'
        "</testsuites>\n" % (total, failures, "\n".join(suites))
    )
