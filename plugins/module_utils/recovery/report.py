# -*- coding: utf-8 -*-
# Copyright: kaiops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The recovery report (recovery.json / recovery.md): pure functions, no I/O.

Keeps two questions apart, as the release article asks: *prevention of recurrence* (is the
binder that runs now in the affected range? read from kai_inventory_facts) and *remediation
of existing damage* (what was found, what was done, what recovered).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

SCHEMA = "kaiops.report/v1"
FAILED_STATUSES = ("refused", "error", "missing", "invalid_input")


def prevention(inventory, kai_namespace="kai-scheduler", affected_range=None, fixed_version=None):
    """The prevention line from the inventory's facts (binder version against the range).

    ``affected_range`` and ``fixed_version`` are the release facts (meta/kai_releases.yml, given
    to the module by its action plugin); the inventory's own range wins when it has one.
    """
    inventory = inventory or {}
    kai = inventory.get("kai") or {}
    exposure = inventory.get("exposure") or {}
    rng = exposure.get("affected_range") or affected_range
    out = {
        "installed": kai.get("installed"),
        "binder_version": kai.get("version"),
        "affected_range": rng,
        "in_range": exposure.get("version_in_range"),
        "verdict": exposure.get("verdict"),
        "source": "kaiops.runbooks.kai_inventory_facts",
    }
    if not inventory:
        out["line"] = "not assessed: the KAI inventory could not be read on this cluster"
    elif not kai.get("installed"):
        out["line"] = (
            "not assessable: KAI is not installed in namespace %s (no binder or kai-operator "
            "Deployment), so there is no binder version to check against %s" % (kai_namespace, rng)
        )
    elif out["in_range"] is None:
        out["line"] = (
            "unknown: the binder image has no readable version tag; cannot say whether it is "
            "in %s" % rng
        )
    elif out["in_range"]:
        out["line"] = (
            "NOT prevented: binder %s is in the affected range %s - the failure recurs on any "
            "GPU-sharing pod whose ConfigMap exists with no data; recovery does not change that, "
            "upgrading the binder to %s does (rollout.yml)"
            % (
                out["binder_version"],
                rng,
                "%s or later" % fixed_version if fixed_version else "a release outside it",
            )
        )
    else:
        out["line"] = (
            "prevented: binder %s is outside the affected range %s; what is found here is damage "
            "left from before" % (out["binder_version"], rng)
        )
    return out


def remediation(findings, interventions, outcomes):
    by_class = {}
    for finding in findings:
        by_class[finding["classification"]] = by_class.get(finding["classification"], 0) + 1
    applied = [i for i in interventions if i.get("outcome") in ("deleted", "restarted")]
    verdicts = {}
    for outcome in outcomes:
        verdicts[outcome["verdict"]] = verdicts.get(outcome["verdict"], 0) + 1
    line = (
        "%d finding(s)%s; %d intervention(s) applied%s; "
        "recovered %d, not recovered %d, not applicable %d"
        % (
            len(findings),
            " (" + ", ".join("%s %d" % kv for kv in sorted(by_class.items())) + ")"
            if by_class
            else "",
            len(applied),
            " (" + ", ".join(sorted({i["step"] for i in applied})) + ")" if applied else "",
            verdicts.get("recovered", 0),
            verdicts.get("not_recovered", 0),
            verdicts.get("not_applicable", 0),
        )
    )
    return {
        "line": line,
        "findings": len(findings),
        "by_classification": by_class,
        "interventions_applied": len(applied),
        "verdicts": verdicts,
    }


def unrecovered_acted_on(entry):
    """Findings an applied intervention acted on that did not recover in the window."""
    acted = set()
    for item in entry.get("interventions") or []:
        if item.get("outcome") in ("deleted", "restarted"):
            acted.update(item.get("findings") or [])
    outcomes = (entry.get("observation") or {}).get("outcomes") or []
    return [
        o["finding"] for o in outcomes if o["finding"] in acted and o["verdict"] == "not_recovered"
    ]


def build(clusters, generated_at, run_id=None, affected_range=None, fixed_version=None):
    out = {}
    for name, entry in sorted(clusters.items()):
        entry = dict(entry or {})
        status = entry.get("status") or "missing"
        findings = entry.get("findings") or []
        interventions = entry.get("interventions") or []
        outcomes = (entry.get("observation") or {}).get("outcomes") or []
        entry["status"] = status
        entry["prevention"] = prevention(
            entry.get("inventory"),
            entry.get("kai_namespace") or "kai-scheduler",
            affected_range,
            fixed_version,
        )
        entry["remediation"] = remediation(findings, interventions, outcomes)
        entry["unrecovered_after_intervention"] = unrecovered_acted_on(entry)
        entry.pop("inventory", None)
        out[name] = entry
    summary = {
        "clusters": len(out),
        "failed": sorted(n for n, e in out.items() if e["status"] in FAILED_STATUSES),
        "findings": sum(len(e.get("findings") or []) for e in out.values()),
        "interventions_applied": sum(
            e["remediation"]["interventions_applied"] for e in out.values()
        ),
        "unrecovered_after_intervention": sorted(
            n for n, e in out.items() if e["unrecovered_after_intervention"]
        ),
    }
    return {
        "schema": SCHEMA,
        "kind": "recovery",
        "generated_at": generated_at,
        "run_id": run_id,
        "summary": summary,
        "clusters": out,
    }


def _cell(value):
    if value is None or value == "":
        return "-"
    return str(value).replace("|", "\\|").replace("\n", " ")


def render_markdown(report):
    lines = [
        "# Recovery: KAI binder nil-data ConfigMap panic",
        "",
        "Generated %s, run `%s`." % (report["generated_at"], report.get("run_id") or "-"),
        "",
        "| cluster | status | findings | interventions applied | recovered | not recovered "
        "| not applicable |",
        "|---|---|---|---|---|---|---|",
    ]
    for name, entry in report["clusters"].items():
        verdicts = entry["remediation"]["verdicts"]
        lines.append(
            "| %s | %s | %d | %d | %d | %d | %d |"
            % (
                _cell(name),
                _cell(entry["status"]),
                entry["remediation"]["findings"],
                entry["remediation"]["interventions_applied"],
                verdicts.get("recovered", 0),
                verdicts.get("not_recovered", 0),
                verdicts.get("not_applicable", 0),
            )
        )
    for name, entry in report["clusters"].items():
        lines += ["", "## %s" % name, ""]
        if entry.get("error"):
            lines += ["**%s**: %s" % (entry["status"].upper(), entry["error"]), ""]
        lines.append("- **Prevention of recurrence**: %s" % entry["prevention"]["line"])
        lines.append("- **Remediation of existing damage**: %s" % entry["remediation"]["line"])
        lines.append(
            "- Steps enabled: %s%s"
            % (
                ", ".join(entry.get("steps_enabled") or []) or "none (read-only run)",
                " - --check run, nothing applied" if entry.get("check_mode") else "",
            )
        )
        scope = entry.get("namespaces") or []
        lines.append("- Scope: %s" % (", ".join(scope) if scope else "all namespaces"))
        for note in entry.get("notes") or []:
            lines.append("- **%s**" % note)
        access = entry.get("access") or {}
        if access:
            lines.append(
                "- APIs read: %s" % ", ".join("%s %s" % kv for kv in sorted(access.items()))
            )
        lines += ["", "### Findings", ""]
        findings = entry.get("findings") or []
        if not findings:
            lines.append(
                "None found in what could be read (see the notes above for what could not)."
            )
        else:
            lines += [
                "| finding | classification | since | evidence |",
                "|---|---|---|---|",
            ]
            for f in findings:
                lines.append(
                    "| `%s` | %s | %s | %s |"
                    % (
                        f["id"],
                        f["classification"],
                        _cell(f.get("since")),
                        _cell("; ".join(f["evidence"])),
                    )
                )
        lines += [
            "",
            "### Interventions (each recorded in interventions.jsonl before it was applied)",
            "",
        ]
        interventions = entry.get("interventions") or []
        if not interventions:
            lines.append("None applied.")
        else:
            lines += [
                "| id | step | object | recorded (seq, at) | applied (seq, at) | outcome "
                "| snapshot |",
                "|---|---|---|---|---|---|---|",
            ]
            for i in interventions:
                t = i["target"]
                lines.append(
                    "| %s | %s | %s %s/%s | %s | %s | %s: %s | %s |"
                    % (
                        i["id"],
                        i["step"],
                        t["kind"],
                        t.get("namespace") or "",
                        t["name"],
                        _cell(
                            "#%s %s" % (i["recorded_seq"], i["recorded_at"])
                            if i.get("recorded_seq")
                            else None
                        ),
                        _cell(
                            "#%s %s" % (i["applied_seq"], i["applied_at"])
                            if i.get("applied_seq")
                            else None
                        ),
                        i["outcome"],
                        _cell(i.get("reason")),
                        _cell(i.get("snapshot")),
                    )
                )
        for idle in entry.get("idle_steps") or []:
            lines.append("- step %s: nothing done - %s" % (idle["step"], idle["reason"]))
        obs = entry.get("observation") or {}
        window = entry.get("window") or {}
        lines += ["", "### Observation", ""]
        if obs:
            lines.append(
                "Window %ss (%s); observed %s to %s, %s read(s)%s."
                % (
                    obs.get("window_s"),
                    window.get("source", "-"),
                    obs.get("started_at") or "-",
                    obs.get("read_at") or "-",
                    obs.get("attempts") or 1,
                    ""
                    if obs.get("watched")
                    else " - one read only: read-only run (no step enabled, or --check)",
                )
            )
            lines += ["", "| finding | verdict | at | why |", "|---|---|---|---|"]
            for o in obs.get("outcomes") or []:
                lines.append(
                    "| `%s` | %s | %s | %s |"
                    % (o["finding"], o["verdict"], _cell(o.get("at")), _cell(o["why"]))
                )
        else:
            lines.append("Not observed (the run stopped before).")
        if entry.get("unrecovered_after_intervention"):
            lines += [
                "",
                "**Not recovered after an intervention**: %s"
                % ", ".join(entry["unrecovered_after_intervention"]),
            ]
    return "\n".join(lines) + "\n"
