# Copyright: kaiops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Report layer of reproduce: report.json (kind reproduce), report.md, junit.xml. No I/O but
reading the template: ``markdown_context`` formats the document for
``templates/reports/reproduce.md.j2``, ``junit_suites`` gives its cases to the one JUnit writer
(``render/junit.py``).

The verdict, for the release the run is about (the last build that is not exposed):
- `pass`: every case passed on every build - the exposed build reproduced the edge case
  and the patched build bound it, case by case;
- `fail`: a case failed; if it is the exposed build that did not reproduce the edge case,
  the report says to investigate the fixture before declaring the patch validated;
- `inconclusive`: the edge case could not be set up (a case did not run).
"""

from decimal import Decimal

from ansible_collections.kaiops.runbooks.plugins.module_utils import cost
from ansible_collections.kaiops.runbooks.plugins.module_utils.render import junit, markdown

EDGE_CASES = ("nil_data", "variants")


def _key(result):
    return result["case"] + ("/" + result["phase"] if result.get("phase") else "")


def expected_cases(plan):
    """For each build, the case keys meant to run on it (recovery spans an exposed build
    and the one after it)."""
    out = {}
    builds = plan.get("builds") or []
    for i, b in enumerate(builds):
        keys = list(plan.get("cases") or [])
        if plan.get("recovery"):
            if b["exposed"] and i + 1 < len(builds):
                keys.append("recovery/plant")
            if i > 0 and builds[i - 1]["exposed"]:
                keys.append("recovery/observe")
        out[b["version"]] = keys
    return out


def target_version(builds):
    fixed = [b["version"] for b in builds if not b["exposed"]]
    return fixed[-1] if fixed else (builds[-1]["version"] if builds else None)


def decide(builds, results, expected_cases):
    """(verdict, reasons) over every case result of every build."""
    reasons = []
    by_build = {}
    for r in results:
        by_build.setdefault(r["build"]["version"], {})[_key(r)] = r
    for b in builds:
        got = by_build.get(b["version"], {})
        for case in expected_cases.get(b["version"], []):
            if case not in got:
                reasons.append("%s on %s did not run" % (case, b["version"]))
    if reasons:
        return "inconclusive", reasons
    for b in builds:
        for key, r in sorted(by_build.get(b["version"], {}).items()):
            if r["verdict"] != "pass":
                failed = [c["name"] for c in r["assertions"] if c["result"] != "pass"]
                if b["exposed"] and key.split("/")[0] in EDGE_CASES:
                    reasons.append(
                        "the pre-patch build %s did not reproduce the failure in %s (%s): "
                        "investigate the "
                        "fixture before declaring the patch validated"
                        % (b["version"], key, "; ".join(failed))
                    )
                else:
                    reasons.append("%s on %s failed: %s" % (key, b["version"], "; ".join(failed)))
    return ("fail" if reasons else "pass"), reasons


def _workload(r, w, offset, length):
    """One observation as a cost workload: it holds its portion of its group from bind to the
    end of its case window (from the window's start when bound before it opened)."""
    bound = w.get("submit_to_bound_s")
    if bound is not None:
        start = offset + Decimal(str(bound)) / 3600
    elif w.get("node"):
        start = offset  # bound before its window opened: held from the case's start
    else:
        start = None
    held_back = start is None or bool(w.get("failed_attempts"))
    return cost.Workload(
        name="%s/%s/%s" % (r["build"]["version"], _key(r), w["name"]),
        gpus=w.get("gpu_group") or "%s/%s" % (_key(r), w["name"]),
        portion=Decimal("0.5"),
        start=start,
        end=offset + length,
        submitted=offset if held_back else None,
    )


def _case_windows(results):
    """The case windows laid end to end (hours): workloads, reservation-held GPU-hours,
    completed jobs, queue waits (s) and the axis' end."""
    offset = Decimal(0)
    workloads, held = [], Decimal(0)
    completed, waits = 0, []
    for r in results:
        length = Decimal(str(max(r.get("duration_s") or 0, 0.001))) / 3600
        for w in r["observations"]:
            workload = _workload(r, w, offset, length)
            workloads.append(workload)
            completed += 1 if w.get("completed") else 0
            if w.get("submit_to_bound_s") is not None:
                waits.append(w["submit_to_bound_s"])
            elif workload.start is None:
                waits.append(float(length * 3600))  # never bound: its whole window
        held += Decimal(str(r.get("reservation_held_s") or 0)) / 3600
        offset += length
    return workloads, held, completed, waits, offset


def _queue_age(waits):
    waits = sorted(waits)
    if not waits:
        return None
    return {"p50_s": waits[len(waits) // 2], "max_s": waits[-1], "count": len(waits)}


def _cost_markdown(rep, completed, held, queue_age):
    md = cost.render_markdown(
        rep, completed_valid_jobs=completed, title="Utilisation and cost of the reproduce window"
    )
    md += (
        "\nGPU capacity held idle by reservation pods of failed binds: %s GPU-hours "
        "(a reservation pod holds "
        "a whole GPU for as long as its bind keeps failing).\n" % cost.q(held)
    )
    if queue_age:
        md += (
            "\nQueue age (submission to bind, never-bound work at its full window): "
            "p50 %.3f s, max %.3f s over %d workloads.\n"
            % (queue_age["p50_s"], queue_age["max_s"], queue_age["count"])
        )
    return md


def cost_section(results, gpus, rate):
    """Utilisation and cost over the run's case windows, laid end to end on one axis (hours).

    Each workload holds its portion of one GPU (its group) from bind to the end of its case
    (from the case's start when it was bound before its window opened). Only work that could
    not start when submitted counts towards the failure loss, from its submission: work that
    never bound or whose bind failed first. Work that bound at its first attempt only waited
    in the queue: that is queue age, not loss. Reservation pods of failed binds hold a whole
    GPU each: that idle capacity is reported apart.
    """
    workloads, held, completed, waits, offset = _case_windows(results)
    if not workloads:
        return None
    # the pool names the GPUs the workloads held (their groups) plus the rest of the cluster's
    used = sorted(set(str(w.gpus) for w in workloads))
    pool = used + ["idle-%d" % i for i in range(max(0, gpus - len(used)))]
    window = cost.Window(start=Decimal(0), end=offset, gpus=pool)
    try:
        rep = cost.compute_report(window, workloads, rate)
    except cost.CostError as exc:
        return {"error": str(exc)}
    queue_age = _queue_age(waits)
    return {
        "gpus": len(pool),
        "window_hours": str(cost.q(offset)),
        "available_gpu_hours": str(rep.available_gpu_hours),
        "busy_gpu_hours": str(rep.busy_gpu_hours),
        "utilisation": None if rep.utilisation is None else str(rep.utilisation),
        "rate": str(rep.rate),
        "cost_per_busy_gpu_hour": None
        if rep.cost_per_busy_gpu_hour is None
        else str(rep.cost_per_busy_gpu_hour),
        "lost_busy_gpu_hours": str(rep.lost_busy_gpu_hours),
        "reservation_held_gpu_hours": str(held),
        "completed_valid_jobs": completed,
        "queue_age": queue_age,
        "markdown": _cost_markdown(rep, completed, held, queue_age),
    }


def _bound_text(w):
    """When a bound workload bound: timed, or why it was not."""
    bound = w.get("submit_to_bound_s")
    if bound is not None:
        return "%.2fs" % bound
    return "before the window opened, not timed" if w.get("bound_before_window") else "not timed"


def _observed(w):
    """One workload as observed: absent, bound, or Pending with its failed attempts and first
    reason; deleted while watched, if it was."""
    if w.get("seen") is False:
        return "%s not found: it no longer existed when the window opened" % w["name"]
    gone = ", then deleted" if w.get("deleted") else ""
    if w["node"]:
        return "%s bound (%s)%s" % (w["name"], _bound_text(w), gone)
    reason = next((a["reason"] for a in w["attempts"] if a.get("reason")), None)
    return "%s Pending, %d failed attempts%s%s" % (
        w["name"],
        w["failed_attempts"],
        ", " + reason if reason else "",
        gone,
    )


def _case_columns(r):
    """A case on one build: what was expected, observed and judged (``r`` None: not run)."""
    if r is None:
        return {"expected": "not run", "observed": "-", "verdict": "-"}
    failed = [c for c in r["assertions"] if c["result"] != "pass"]
    observed = "; ".join(_observed(w) for w in r["observations"]) or "-"
    verdict = "**%s**" % r["verdict"].upper() if r["verdict"] != "pass" else "pass"
    if failed:
        verdict += " (" + "; ".join(c["name"] for c in failed) + ")"
    return {"expected": r["declared"]["expect"], "observed": observed, "verdict": verdict}


def _side_by_side(cases, builds):
    """One row per case key (in the order the cases came), one column group per build."""
    keys = []
    for r in cases:
        if _key(r) not in keys:
            keys.append(_key(r))
    by_key = {}
    for r in cases:
        by_key.setdefault((_key(r), r["build"]["version"]), r)
    return [
        {"case": key, "builds": [_case_columns(by_key.get((key, b["version"]))) for b in builds]}
        for key in keys
    ]


def _build_row(b):
    ident = b.get("identity") or {}
    flags = ident.get("binder_flags")
    return {
        "version": b["version"],
        "implementation": ident.get("implementation_label", "-"),
        "chart": (ident.get("helm") or {}).get("chart", "-"),
        "behaviour": b["behaviour"],
        "source": b["behaviour_source"],
        "gpu_sharing": ident.get("gpu_sharing"),
        "flags": "%d, listed below" % len(flags) if flags else "-",
    }


def _binder_flags(builds):
    """Each build's binder flags whole, one to a line (a flag is never cut); a backtick would
    end the code span, so it reads as a quote."""
    out = []
    for b in builds:
        flags = (b.get("identity") or {}).get("binder_flags") or []
        if flags:
            out.append({"version": b["version"], "flags": [f.replace("`", "'") for f in flags]})
    return out


def _latency(figure):
    return "%s / %s (%d of %d)" % (figure["p50_s"], figure["p95_s"], figure["count"], figure["of"])


def _metrics_row(r):
    m = r["metrics"]
    return {
        "version": r["build"]["version"],
        "case": _key(r),
        "submissions": "%d" % m["submissions"],
        "affected": "%d" % m["affected_submissions"],
        "failed_attempts": "%d" % m["failed_attempts"],
        "bound": _latency(m["submit_to_bound"]),
        "running": _latency(m["submit_to_running"]),
        "completed": "%d of %d" % (m["completion"]["completed"], m["completion"]["of"]),
    }


def _concurrency(cases):
    """The concurrency cases, reported apart from the minimal reproduction."""
    return [
        {
            "version": r["build"]["version"],
            "submissions": "%d" % r["metrics"]["submissions"],
            "causes": r["metrics"]["failures_by_cause"] or "none",
        }
        for r in cases
        if r["case"] == "concurrency"
    ]


def _stale(cases):
    return [
        {
            "version": r["build"]["version"],
            "case": _key(r),
            "kind": s["kind"],
            "detail": s["object"] + "; " + s["evidence"],
        }
        for r in cases
        for s in r.get("stale_state") or []
    ]


def _variants(cases):
    """How the API server stored the two ways of writing an empty ``data`` (nil_data case)."""
    nil_data = next((r for r in cases if r["case"] == "nil_data"), None)
    if not nil_data:
        return None
    identical = (nil_data.get("extra") or {}).get("variants_identical")
    return "identically" if identical else "differently"


def _step_text(step):
    when = (
        "%+.3fs" % step["s"]
        if step["s"] is not None
        else "(not timed: %s)" % step.get("note", "no time")
    )
    return "%s %s%s" % (when, step["what"], " [node clock]" if step.get("clock") else "")


def _timelines(cases):
    """The first workload of each case, its first ten steps."""
    return [
        {
            "version": r["build"]["version"],
            "case": _key(r),
            "workload": t["workload"],
            "steps": ", ".join(_step_text(s) for s in t["steps"][:10]),
        }
        for r in cases
        for t in (r.get("timeline") or [])[:1]
    ]


def _leftovers(doc):
    return [
        {
            "name": ns.get("name"),
            "run": (ns.get("labels") or {}).get("kaiops.dev/run-id"),
            "created": ns.get("creationTimestamp"),
        }
        for ns in doc.get("leftovers_removed") or []
    ]


def _provenance(doc):
    prov = doc.get("provenance") or {}
    if not prov:
        return None
    return {
        "operator": prov.get("operator"),
        "commit": prov.get("collection_commit"),
        "inventory": prov.get("inventory"),
    }


def markdown_context(doc):
    """What ``templates/reports/reproduce.md.j2`` lays out: every figure already formatted."""
    builds, cases = doc["builds"], doc["cases"]
    cost_section = doc.get("cost")
    return {
        "kai_version": doc["kai_version"],
        "verdict": doc["verdict"].upper(),
        "reasons": doc["reasons"],
        "run_id": doc["run_id"],
        "generated_at": doc["generated_at"],
        "cluster": doc["cluster"],
        "kubernetes": (
            (builds[0].get("identity") or {}).get("kubernetes_version") if builds else "-"
        ),
        "provenance": _provenance(doc),
        "override": doc.get("override"),
        "builds": [_build_row(b) for b in builds],
        "binder_flags": _binder_flags(builds),
        "versions": [b["version"] for b in builds],
        "side_by_side": _side_by_side(cases, builds),
        "metrics": [_metrics_row(r) for r in cases],
        "concurrency": _concurrency(cases),
        "stale": _stale(cases),
        "variants": _variants(cases),
        "timelines": _timelines(cases),
        "leftovers": _leftovers(doc),
        "interventions": doc.get("interventions") or [],
        # the cost module renders its own section (cost_section above)
        "cost_markdown": cost_section.get("markdown") if cost_section else None,
    }


def render_markdown(doc, template_dir=None):
    """report.md: ``doc`` rendered with ``templates/reports/reproduce.md.j2``."""
    return markdown.render("reproduce.md.j2", markdown_context(doc), template_dir)


def junit_suites(doc):
    """One suite, one case per case and build; a case with a failed assertion is a failure that
    names the first and lists each with its figure and what was expected."""
    cases = []
    for r in doc["cases"]:
        case = {
            "classname": "reproduce.%s" % r["build"]["version"].replace(".", "_"),
            "name": "%s on %s" % (_key(r), r["build"]["version"]),
            "time": r.get("duration_s") or 0,
        }
        failed = [c for c in r["assertions"] if c["result"] != "pass"]
        if failed:
            case["failure"] = {
                "message": failed[0]["name"],
                "type": "assertion",
                "text": "\n".join(
                    "%s: figure %s, expected %s" % (c["name"], c["figure"], c["expected"])
                    for c in failed
                ),
            }
        cases.append(case)
    return [{"name": "reproduce", "cases": cases}]


def render_junit(doc):
    """junit.xml, written by the one JUnit writer (render/junit.py)."""
    return junit.render("kaiops reproduce", junit_suites(doc))
