# -*- coding: utf-8 -*-
# Copyright: kaiops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The GPU access report: the document (gpu_access.json) and its Markdown (gpu_access.md). Pure."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.kaiops.runbooks.plugins.module_utils import cost
from ansible_collections.kaiops.runbooks.plugins.module_utils.gpu_access.records import (
    attach,
    pod_record,
)
from ansible_collections.kaiops.runbooks.plugins.module_utils.gpu_access.service import (
    NO_GPU,
    PASSED,
    admission_outcome,
    cost_section,
    evaluate,
    summarize,
)


def _cell(text):
    return str(text).replace("|", "\\|").replace("\n", " ")


def _setting(setting):
    state = {True: "on", False: "off", None: "unknown"}[(setting or {}).get("enabled")]
    sources = "; ".join((setting or {}).get("sources") or []) or "not read"
    return "%s (%s)" % (state, sources)


def _enforcement_lines(document):
    plan = document.get("plan") or {}
    enforcement = plan.get("enforcement") or {}
    if not enforcement:
        return []
    nodes = plan.get("candidate_nodes") or []
    lines = [
        "- KAI enforces (read before the run): GPU sharing %s; blockNvidiaVisibleDevices %s; "
        "HAMi-core memory limit %s"
        % (
            _setting(enforcement.get("gpu_sharing")),
            _setting(enforcement.get("block_nvidia_visible_devices")),
            _setting(enforcement.get("hami_core")),
        ),
        "- GPU nodes a probe can land on: %s"
        % (
            ", ".join(
                "%s (%s GPUs, %s MiB each%s)"
                % (n["name"], n["gpus"], n["gpu_memory_mib"], ", fake devices" if n["fake"] else "")
                for n in nodes
            )
            or "none"
        ),
    ]
    if any(n.get("fake") for n in nodes):
        lines.append(
            "- **Fake GPUs**: these nodes advertise devices with no driver behind them; every "
            'probe result on them reads "%s" (the check ran on the CPU), never GPU access' % NO_GPU
        )
    for setting in enforcement.values():
        if setting.get("note"):
            lines.append("- note: " + setting["note"])
    return lines


def render_markdown(document, cost_markdown):
    summary = document["summary"]
    kai = document.get("kai") or {}
    lines = [
        "# GPU access: %s" % document["cluster"],
        "",
        "- outcome: **%s**%s"
        % (
            summary["outcome"].upper(),
            " - " + "; ".join(summary["reasons"]) if summary["reasons"] else "",
        ),
        "- cases: %(cases)d (passed %(passed)d, failed %(failed)d, not run %(not_run)d)" % summary,
        "- expectations declared at %s, before any workload was submitted"
        % document["declared_at"],
        "- KAI Scheduler: %s"
        % (
            "installed, version %s, GPU sharing %s"
            % (kai.get("version") or "unknown", kai.get("gpu_sharing"))
            if kai.get("installed")
            else "not installed"
        ),
        "- namespace: %s; probe image %s"
        % (document.get("namespace"), document.get("probe_image")),
    ]
    lines += _enforcement_lines(document)
    if summary.get("outsiders_with_devices"):
        lines.append(
            "- **outsiders that obtained a device**: %s"
            % " | ".join(summary["outsiders_with_devices"])
        )
    lines += [
        "",
        'Verdicts judge the declared expectation (an assertion). Lines marked "observation" '
        'record what was seen and judge nothing. "not run" is never a pass.',
        "",
        "| case | expectation (declared before the run) | observed | verdict |",
        "| --- | --- | --- | --- |",
    ]
    for res in document["cases"]:
        verdict = res["verdict"].replace("_", " ")
        if res["verdict"] == PASSED and any(NO_GPU in o for o in res["observations"]):
            verdict += " (%s)" % NO_GPU
        lines.append(
            "| %s | %s | %s | **%s** |"
            % (_cell(res["title"]), _cell(res["expectation"]), _cell(res["observed"]), verdict)
        )
    lines += ["", "## Observations", ""]
    for res in document["cases"]:
        for obs in res["observations"]:
            lines.append("- %s: %s" % (res["id"], obs))
    lines += ["", "## Workloads", ""]
    lines += [
        "| pod | case | node | scheduler | GPU request | submitted | scheduled | started "
        "| finished | exit | devices | GPU_PORTION | ConfigMap (pod spec) "
        "| reservation pod device | probe |",
        "|" + " --- |" * 15,
    ]
    for rec in document["workloads"]:
        probe = rec["probe"] or {}
        kai = rec.get("kai") or {}
        lines.append(
            "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |"
            % tuple(
                _cell(x)
                for x in (
                    rec["name"],
                    rec["case"],
                    rec["node"],
                    rec.get("scheduler"),
                    rec["gpu_fraction"]
                    and "fraction " + rec["gpu_fraction"]
                    or rec["gpu_request"]
                    or "none",
                    rec["submitted_at"],
                    rec["scheduled_at"],
                    rec["started_at"],
                    rec["finished_at"],
                    rec["exit_code"],
                    ",".join(rec["devices"]) or "none",
                    rec["visible"].get("GPU_PORTION") or "-",
                    kai.get("configmap") or "-",
                    (kai.get("reservation") or {}).get("device") or "-",
                    "%s, %s" % (probe.get("mode"), probe.get("note") or "GPU")
                    if probe
                    else "no JSON",
                )
            )
        )
    lines += [
        "",
        "Times: submitted = creationTimestamp, scheduled = PodScheduled, started/finished = "
        "the container's terminated state (the probe's own times are in gpu_access.json). "
        "ConfigMap and reservation pod: what KAI made for the pod, seen while it ran "
        "(gpu_access.json `workloads[].kai`, `watches`).",
        "",
    ]
    rejected = [
        (case, adm)
        for case, adm in sorted((document.get("admission") or {}).items())
        if adm.get("rejected")
    ]
    if rejected:
        lines += ["Rejected at submission (no pod was created):", ""]
        lines += ["- %s: %s" % (case, _cell(adm.get("message"))) for case, adm in rejected]
        lines.append("")
    if cost_markdown:
        lines += [cost_markdown]
    else:
        lines += [
            "## Utilisation and cost of this run's window",
            "",
            "Not computed: %s." % document["cost"].get("reason"),
            "",
        ]
    return "\n".join(lines)


def build_report(params, now):
    """The whole report document and its markdown, from the module's parameters."""
    logs = params.get("logs") or {}
    watches = params.get("watches") or {}
    pods = [
        pod_record(pod, logs.get((pod.get("metadata") or {}).get("name"))) for pod in params["pods"]
    ]
    pods.sort(key=lambda r: (r["submitted_at"] or "", r["name"] or ""))
    attach(pods, watches)
    skipped = dict(params.get("skipped") or {})
    context = {
        "skipped": skipped,
        "not_selected": params.get("not_selected") or [],
        "nodes": params.get("nodes") or [],
        "expected_isolation": params["expected_isolation"],
        "fraction": params.get("fraction", "0.5"),
        "plan": params.get("plan") or {},
        "admission": params.get("admission") or {},
        "expected_reasons": params.get("expected_reasons") or {},
        "outsider_queues": params.get("outsider_queues") or {},
        "require_block_visible_devices": bool(params.get("require_block_visible_devices")),
        "kai_scheduler": params.get("kai_scheduler") or "kai-scheduler",
    }
    results = evaluate(params["cases"], pods, context)
    summary = summarize(results, params["require_sharing"])
    window_start = params.get("window_start") or params.get("declared_at") or now
    try:
        figures, cost_md = cost_section(pods, context["nodes"], window_start, now, params["rate"])
    except cost.CostError as exc:
        figures, cost_md = {"computed": False, "reason": str(exc)}, None
    document = {
        "schema": "kaiops.gpu_access/v1",
        "cluster": params["cluster"],
        "generated_at": now,
        "declared_at": params.get("declared_at"),
        "namespace": params.get("namespace"),
        "probe_image": params.get("probe_image"),
        "kai": params.get("kai") or {},
        "expected_isolation": params["expected_isolation"],
        "require_sharing": params["require_sharing"],
        "summary": summary,
        "cases": results,
        "workloads": pods,
        "plan": params.get("plan") or {},
        "admission": {
            case: admission_outcome(outcome)
            for case, outcome in (params.get("admission") or {}).items()
        },
        "watches": watches,
        "cost": figures,
    }
    return document, render_markdown(document, cost_md)
