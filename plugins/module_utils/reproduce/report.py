# -*- coding: utf-8 -*-
# Copyright: kaiops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Report layer of reproduce: report.json (kind reproduce), report.md, junit.xml. No I/O.

The verdict, for the release the run is about (the last build that is not exposed):
- `pass`: every case passed on every build - the exposed build reproduced the edge case
  and the patched build bound it, case by case;
- `fail`: a case failed; if it is the exposed build that did not reproduce the edge case,
  the report says to investigate the fixture before declaring the patch validated;
- `inconclusive`: the edge case could not be set up (a case did not run).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from decimal import Decimal
from xml.sax.saxutils import escape, quoteattr

from ansible_collections.kaiops.runbooks.plugins.module_utils import cost

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


def cost_section(results, gpus, rate):
    """Utilisation and cost over the run's case windows, laid end to end on one axis (hours).

    Each workload holds its portion of one GPU (its group) from bind to the end of its case
    (from the case's start when it was bound before its window opened). Only work that could
    not start when submitted counts towards the failure loss, from its submission: work that
    never bound or whose bind failed first. Work that bound at its first attempt only waited
    in the queue: that is queue age, not loss. Reservation pods of failed binds hold a whole
    GPU each: that idle capacity is reported apart.
    """
    offset = Decimal(0)
    workloads, held = [], Decimal(0)
    completed, waits = 0, []
    for r in results:
        length = Decimal(str(max(r.get("duration_s") or 0, 0.001))) / 3600
        for w in r["observations"]:
            bound = w.get("submit_to_bound_s")
            if bound is not None:
                start = offset + Decimal(str(bound)) / 3600
            elif w.get("node"):
                start = offset  # bound before its window opened: held from the case's start
            else:
                start = None
            held_back = start is None or bool(w.get("failed_attempts"))
            workloads.append(
                cost.Workload(
                    name="%s/%s/%s" % (r["build"]["version"], _key(r), w["name"]),
                    gpus=w.get("gpu_group") or "%s/%s" % (_key(r), w["name"]),
                    portion=Decimal("0.5"),
                    start=start,
                    end=offset + length,
                    submitted=offset if held_back else None,
                )
            )
            completed += 1 if w.get("completed") else 0
            if bound is not None:
                waits.append(bound)
            elif start is None:
                waits.append(float(length * 3600))  # never bound: its whole window
        held += Decimal(str(r.get("reservation_held_s") or 0)) / 3600
        offset += length
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
    waits.sort()
    queue_age = (
        {"p50_s": waits[len(waits) // 2], "max_s": waits[-1], "count": len(waits)}
        if waits
        else None
    )
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
        "markdown": md,
    }


def _cell(r):
    if r is None:
        return "not run", "-", "-"
    failed = [c for c in r["assertions"] if c["result"] != "pass"]
    obs = []
    for w in r["observations"]:
        if w["node"]:
            bound = w.get("submit_to_bound_s")
            obs.append(
                "%s bound (%s)"
                % (
                    w["name"],
                    "%.2fs" % bound
                    if bound is not None
                    else "before the window opened, not timed"
                    if w.get("bound_before_window")
                    else "not timed",
                )
            )
        else:
            reason = next((a["reason"] for a in w["attempts"] if a.get("reason")), None)
            obs.append(
                "%s Pending, %d failed attempts%s"
                % (w["name"], w["failed_attempts"], ", " + reason if reason else "")
            )
    verdict = "**%s**" % r["verdict"].upper() if r["verdict"] != "pass" else "pass"
    if failed:
        verdict += " (" + "; ".join(c["name"] for c in failed) + ")"
    return r["declared"]["expect"], "; ".join(obs) or "-", verdict


def _binder_flag_lines(builds):
    """Each build's binder flags whole, one to a line (a flag is never cut)."""
    lines = []
    for b in builds:
        flags = (b.get("identity") or {}).get("binder_flags") or []
        if flags:
            lines += ["", "Binder flags of %s:" % b["version"], ""]
            lines += ["- `%s`" % f.replace("`", "'") for f in flags]
    return lines


def render_markdown(doc):
    builds = doc["builds"]
    lines = [
        "# Reproduce: the nil-data GPU-sharing ConfigMap panic",
        "",
        "**Verdict for %s: %s**" % (doc["kai_version"], doc["verdict"].upper()),
        "",
    ]
    lines += ["- %s" % r for r in doc["reasons"]] + ([""] if doc["reasons"] else [])
    lines += [
        "Run `%s`, %s; cluster `%s` (Kubernetes %s)."
        % (
            doc["run_id"],
            doc["generated_at"],
            doc["cluster"],
            (builds[0].get("identity") or {}).get("kubernetes_version") if builds else "-",
        ),
        "",
    ]
    prov = doc.get("provenance") or {}
    if prov:
        lines += [
            "Operator `%s`, collection commit `%s`, inventory `%s`."
            % (prov.get("operator"), prov.get("collection_commit"), prov.get("inventory")),
            "",
        ]
    if doc.get("override"):
        lines += [
            "Cluster not marked disposable; fixtures planted under an override: %s"
            % doc["override"],
            "",
        ]
    lines += [
        "## Builds",
        "",
        "| build | implementation | chart | behaviour (source) | GPU sharing | binder flags |",
        "|---|---|---|---|---|---|",
    ]
    for b in builds:
        ident = b.get("identity") or {}
        helm = ident.get("helm") or {}
        lines.append(
            "| %s | %s | %s | %s (%s) | %s | %s |"
            % (
                b["version"],
                ident.get("implementation_label", "-"),
                helm.get("chart", "-"),
                b["behaviour"],
                b["behaviour_source"],
                ident.get("gpu_sharing"),
                "%d, listed below" % len(ident.get("binder_flags") or [])
                if ident.get("binder_flags")
                else "-",
            )
        )
    lines += _binder_flag_lines(builds)
    lines += ["", "## Cases, side by side", ""]
    header = "| case |" + "".join(
        " %s expected | %s observed | %s verdict |" % ((b["version"],) * 3) for b in builds
    )
    lines += [header, "|---|" + "---|---|---|" * len(builds)]
    keys = []
    for r in doc["cases"]:
        if _key(r) not in keys:
            keys.append(_key(r))
    for key in keys:
        row = "| %s |" % key
        for b in builds:
            r = next(
                (
                    x
                    for x in doc["cases"]
                    if _key(x) == key and x["build"]["version"] == b["version"]
                ),
                None,
            )
            row += " %s | %s | %s |" % _cell(r)
        lines.append(row)
    lines += [
        "",
        "## Metrics (failed and timed-out attempts stay in every denominator)",
        "",
        "| build | case | submissions | affected | failed attempts "
        "| submit-to-bound p50 / p95 (n of N) | submit-to-Running p50 / p95 (n of N) | completed |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in doc["cases"]:
        m = r["metrics"]
        b, run = m["submit_to_bound"], m["submit_to_running"]
        lines.append(
            "| %s | %s | %d | %d | %d | %s / %s (%d of %d) | %s / %s (%d of %d) | %d of %d |"
            % (
                r["build"]["version"],
                _key(r),
                m["submissions"],
                m["affected_submissions"],
                m["failed_attempts"],
                b["p50_s"],
                b["p95_s"],
                b["count"],
                b["of"],
                run["p50_s"],
                run["p95_s"],
                run["count"],
                run["of"],
                m["completion"]["completed"],
                m["completion"]["of"],
            )
        )
    conc = [r for r in doc["cases"] if r["case"] == "concurrency"]
    if conc:
        lines += ["", "## Concurrency (reported apart from the minimal reproduction)", ""]
        for r in conc:
            lines.append(
                "- %s: %d submissions, failures by cause %s"
                % (
                    r["build"]["version"],
                    r["metrics"]["submissions"],
                    r["metrics"]["failures_by_cause"] or "none",
                )
            )
    stale = [(r, s) for r in doc["cases"] for s in r.get("stale_state") or []]
    lines += ["", "## Stale state found (listed with evidence; nothing removed)", ""]
    lines += [
        "- %s %s: %s - %s"
        % (r["build"]["version"], _key(r), s["kind"], s["object"] + "; " + s["evidence"])
        for r, s in stale
    ] or ["- none"]
    variants = next((r for r in doc["cases"] if r["case"] == "nil_data"), None)
    if variants:
        ident = (variants.get("extra") or {}).get("variants_identical")
        lines += [
            "",
            "`data` omitted and `data: {}` were stored %s by the API server."
            % ("identically" if ident else "differently"),
        ]
    lines += [
        "",
        "## Timelines (one workload per case; seconds from the gate lift, controller clock; log",
        "lines, marked, at the node's clock; the whole of each in the case's timeline.json)",
        "",
    ]
    for r in doc["cases"]:
        for t in (r.get("timeline") or [])[:1]:
            steps = ", ".join(
                "%s %s%s"
                % (
                    "%+.3fs" % s["s"]
                    if s["s"] is not None
                    else "(not timed: %s)" % s.get("note", "no time"),
                    s["what"],
                    " [node clock]" if s.get("clock") else "",
                )
                for s in t["steps"][:10]
            )
            lines.append(
                "- %s %s `%s`: %s" % (r["build"]["version"], _key(r), t["workload"], steps)
            )
    for ns in doc.get("leftovers_removed") or []:
        lines.append(
            "Removed before planting: namespace `%s` left by run %s (created %s)."
            % (
                ns.get("name"),
                (ns.get("labels") or {}).get("kaiops.dev/run-id"),
                ns.get("creationTimestamp"),
            )
        )
    if doc.get("interventions"):
        lines += ["", "## Interventions", ""] + ["- %s" % i for i in doc["interventions"]]
    else:
        lines += ["", "Interventions: none (none is applied unless enabled)."]
    if doc.get("cost") and doc["cost"].get("markdown"):
        lines += ["", doc["cost"]["markdown"]]
    lines += [
        "",
        "## Evidence",
        "",
        "Per case and build under `cases/<build>/<case>/`: expectation.json "
        "(written before the case ran), "
        "watch-*.jsonl (every version of every pod, BindRequest, ConfigMap and event), "
        "binder logs (current and previous), "
        "configmaps and reservation pods after, observations.json, assertions.json, timeline.json.",
        "",
    ]
    return "\n".join(lines)


def render_junit(doc):
    cases = []
    failures = 0
    for r in doc["cases"]:
        name = "%s on %s" % (_key(r), r["build"]["version"])
        failed = [c for c in r["assertions"] if c["result"] != "pass"]
        body = ""
        if failed:
            failures += 1
            text = "\n".join(
                "%s: figure %s, expected %s" % (c["name"], c["figure"], c["expected"])
                for c in failed
            )
            body = "<failure message=%s>%s</failure>" % (quoteattr(failed[0]["name"]), escape(text))
        cases.append(
            '<testcase classname="reproduce.%s" name=%s time="%.3f">%s</testcase>'
            % (
                r["build"]["version"].replace(".", "_"),
                quoteattr(name),
                r.get("duration_s") or 0,
                body,
            )
        )
    return (
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        '<testsuites><testsuite name="reproduce" tests="%d" failures="%d">%s'
        "</testsuite></testsuites>\n" % (len(cases), failures, "".join(cases))
    )
