# Copyright: kaiops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The recovery report (recovery.json / recovery.md): pure functions, no I/O. ``build`` judges;
``render_markdown`` only gives ``templates/reports/recovery.md.j2`` what it prints.

Keeps two questions apart, as the release article asks: *prevention of recurrence* (is the
binder that runs now in the affected range? read from kai_inventory_info) and *remediation
of existing damage* (what was found, what was done, what recovered).
"""

from ansible_collections.kaiops.runbooks.plugins.module_utils.render import markdown

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
        "source": "kaiops.runbooks.kai_inventory_info",
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


def _interventions(entry):
    """Each intervention with its optional parts given: the target's namespace, and where the
    journal recorded and applied it ("#<seq> <at>", None when it has no sequence number)."""
    rows = []
    for item in entry.get("interventions") or []:
        rows.append(
            dict(
                item,
                namespace=item["target"].get("namespace") or "",
                recorded=(
                    "#%s %s" % (item["recorded_seq"], item["recorded_at"])
                    if item.get("recorded_seq")
                    else None
                ),
                applied=(
                    "#%s %s" % (item["applied_seq"], item["applied_at"])
                    if item.get("applied_seq")
                    else None
                ),
                reason=item.get("reason"),
                snapshot=item.get("snapshot"),
            )
        )
    return rows


def _observation(entry):
    """The observation window's line and outcomes; None when the run stopped before it."""
    obs = entry.get("observation") or {}
    if not obs:
        return None
    return {
        "window_s": obs.get("window_s"),
        "source": (entry.get("window") or {}).get("source", "-"),
        "started_at": obs.get("started_at") or "-",
        "read_at": obs.get("read_at") or "-",
        "attempts": obs.get("attempts") or 1,
        "watched": obs.get("watched"),
        "outcomes": [dict(o, at=o.get("at")) for o in obs.get("outcomes") or []],
    }


def _pending(entry):
    """Each Pending pod with its cause (the shared classifier's), the first proof as text."""
    rows = []
    for pod in (entry.get("pending") or {}).get("pods") or []:
        first = (pod.get("evidence") or [{}])[0]
        rows.append(
            {
                "key": "%s/%s" % (pod["pod"]["namespace"], pod["pod"]["name"]),
                "cause": pod["cause"],
                "proof": "%s %s `%s` = %s"
                % (first.get("kind"), first.get("name"), first.get("field"), first.get("value"))
                if first
                else None,
                "waiting": "%ss" % int(pod["waiting_s"])
                if pod.get("waiting_s") is not None
                else None,
                "step": pod.get("step"),
                "owner": pod.get("owner"),
            }
        )
    return rows


def _cluster(name, entry):
    """One cluster as the template prints it: the entry, its counts as text and each optional
    part given (the template reads the required ones, status and the two lines, from the entry)."""
    remediation = entry["remediation"]
    verdicts = remediation["verdicts"]
    access = entry.get("access") or {}
    return dict(
        entry,
        name=name,
        counts=[
            "%d" % n
            for n in (
                remediation["findings"],
                remediation["interventions_applied"],
                verdicts.get("recovered", 0),
                verdicts.get("not_recovered", 0),
                verdicts.get("not_applicable", 0),
            )
        ],
        error=entry.get("error"),
        steps=", ".join(entry.get("steps_enabled") or []) or "none (read-only run)",
        check_mode=entry.get("check_mode"),
        scope=", ".join(entry.get("namespaces") or []) or "all namespaces",
        notes=entry.get("notes") or [],
        apis_read=", ".join("%s %s" % kv for kv in sorted(access.items())),
        findings=[
            dict(f, since=f.get("since"), evidence="; ".join(f["evidence"]))
            for f in entry.get("findings") or []
        ],
        interventions=_interventions(entry),
        pending=_pending(entry),
        pending_read=bool(entry.get("pending")),
        idle_steps=entry.get("idle_steps") or [],
        observation=_observation(entry),
        unrecovered=", ".join(entry.get("unrecovered_after_intervention") or []),
    )


def render_markdown(report, template_dir=None):
    """recovery.md, rendered with ``templates/reports/recovery.md.j2``."""
    clusters = [_cluster(name, entry) for name, entry in report["clusters"].items()]
    context = dict(report, run_id=report.get("run_id") or "-", clusters=clusters)
    return markdown.render("recovery.md.j2", context, template_dir)
