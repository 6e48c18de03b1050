# Copyright: kaiops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The diagnosis report (report.json, report.md, junit.xml): pure functions, no I/O. ``build``
judges; ``render_markdown`` only gives ``templates/reports/diagnose.md.j2`` what it prints;
``junit_suites`` gives its cases to the one JUnit writer (``render/junit.py``).

Per cluster: the Pending pods KAI schedules grouped by cause (count, oldest wait, the recovery
step or the owner), then each pod with the objects and fields that prove its cause.
"""

from ansible_collections.kaiops.runbooks.plugins.module_utils.render import junit, markdown
from ansible_collections.kaiops.runbooks.plugins.module_utils.scan.pending import (
    CAUSE_IDS,
    CAUSES,
    UNKNOWN,
)

SCHEMA = "kaiops.report/v1"
# A cluster entry with one of these statuses (or none) was not diagnosed.
FAILED_STATUSES = (
    "unreachable",
    "unauthorized",
    "forbidden",
    "not_found",
    "invalid_input",
    "error",
    "missing",
)


def failed(entry):
    """Not diagnosed: a failure status, or any entry that carries an error."""
    return entry["status"] in FAILED_STATUSES or bool(entry.get("error"))


def cause_table():
    """Every cause in the order it is tried, with its step and owner (the report's legend)."""
    return [
        {"id": c["id"], "title": c["title"], "step": c["step"], "owner": c["owner"]}
        for c in CAUSES + (UNKNOWN,)
    ]


def build(clusters, generated_at, run_id=None):
    """The report document from each cluster's diagnosis (or failure record)."""
    out = {}
    for name, entry in sorted((clusters or {}).items()):
        entry = dict(entry or {})
        entry["status"] = entry.get("status") or "missing"
        entry.setdefault("pods", [])
        entry.setdefault("by_cause", [])
        out[name] = entry
    by_cause = {}
    for entry in out.values():
        for row in entry["by_cause"]:
            by_cause[row["cause"]] = by_cause.get(row["cause"], 0) + row["count"]
    not_read = sorted(n for n, e in out.items() if failed(e))
    summary = {
        "clusters": len(out),
        "failed": not_read,
        "pending": sum(len(e["pods"]) for e in out.values()),
        "by_cause": {c: by_cause[c] for c in CAUSE_IDS if c in by_cause},
        "unknown": by_cause.get(UNKNOWN["id"], 0),
    }
    return {
        "schema": SCHEMA,
        "kind": "diagnose",
        "generated_at": generated_at,
        "run_id": run_id,
        "decision": "incomplete" if not_read else "diagnosed",
        "summary": summary,
        "causes": cause_table(),
        "clusters": out,
    }


def duration(seconds):
    """3725 -> '1h02m05s'; None -> None."""
    if seconds is None:
        return None
    seconds = int(seconds)
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return "%dh%02dm%02ds" % (hours, minutes, secs)
    return "%dm%02ds" % (minutes, secs) if minutes else "%ds" % secs


def _proof_text(item):
    where = "%s/%s" % (item["namespace"], item["name"]) if item.get("namespace") else item["name"]
    return "%s %s `%s` = %s" % (item["kind"], where, item["field"], item["value"])


def _cluster(name, entry):
    """One cluster as the template prints it: every optional part given."""
    return {
        "name": name,
        "status": entry["status"],
        "error": entry.get("error"),
        "pending": len(entry["pods"]),
        "read_at": entry.get("read_at"),
        "notes": entry.get("notes") or [],
        "by_cause": [
            dict(row, oldest=duration(row.get("oldest_wait_s")), act=row["step"] or row["owner"])
            for row in entry["by_cause"]
        ],
        "pods": [
            dict(
                pod,
                key="%s/%s" % (pod["pod"]["namespace"], pod["pod"]["name"]),
                waiting=duration(pod.get("waiting_s")),
                proofs=[_proof_text(item) for item in pod["evidence"]],
            )
            for pod in entry["pods"]
        ],
    }


def render_markdown(report, template_dir=None):
    """report.md, rendered with ``templates/reports/diagnose.md.j2``."""
    context = dict(
        report,
        run_id=report.get("run_id") or "-",
        clusters=[_cluster(n, e) for n, e in report["clusters"].items()],
    )
    return markdown.render("diagnose.md.j2", context, template_dir)


def junit_suites(report):
    """One suite per cluster. A cluster not read is an error; each Pending pod a case that
    fails when no cause could be proven (unknown); no Pending pod, one passing case."""
    suites = []
    for name, entry in report["clusters"].items():
        classname = "diagnose.%s" % name
        if failed(entry):
            error = {"message": entry.get("error") or entry["status"], "type": entry["status"]}
            cases = [{"classname": classname, "name": "read the cluster", "error": error}]
        elif not entry["pods"]:
            cases = [{"classname": classname, "name": "no Pending pod KAI schedules"}]
        else:
            cases = []
            for pod in entry["pods"]:
                case = {
                    "classname": classname,
                    "name": "%s/%s: %s"
                    % (pod["pod"]["namespace"], pod["pod"]["name"], pod["cause"]),
                }
                if pod["cause"] == UNKNOWN["id"]:
                    case["failure"] = {
                        "message": "no cause proven",
                        "type": "unknown",
                        "text": "\n".join(_proof_text(i) for i in pod["evidence"]),
                    }
                cases.append(case)
        suites.append({"name": "diagnose %s" % name, "cases": cases})
    return suites


def render_junit(report):
    """junit.xml, written by the one JUnit writer (render/junit.py)."""
    return junit.render("kaiops diagnose", junit_suites(report))
