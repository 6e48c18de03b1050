# Copyright: kaiops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The GPU access report: the document (gpu_access.json) and its Markdown (gpu_access.md). Pure.

``build_report`` judges (service.evaluate, summarize); ``render_markdown`` only gives
``templates/reports/gpu_access.md.j2`` what it prints. The cost section comes rendered by the
cost module and is printed as given."""

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
from ansible_collections.kaiops.runbooks.plugins.module_utils.render import markdown


def _setting(setting):
    state = {True: "on", False: "off", None: "unknown"}[(setting or {}).get("enabled")]
    sources = "; ".join((setting or {}).get("sources") or []) or "not read"
    return "%s (%s)" % (state, sources)


def _enforcement(plan):
    """What KAI enforces and where a probe can land (the plan's reads); None without them."""
    enforcement = plan.get("enforcement") or {}
    if not enforcement:
        return None
    nodes = plan.get("candidate_nodes") or []
    return {
        "gpu_sharing": _setting(enforcement.get("gpu_sharing")),
        "block_visible_devices": _setting(enforcement.get("block_nvidia_visible_devices")),
        "hami_core": _setting(enforcement.get("hami_core")),
        "nodes": ", ".join(
            "%s (%s GPUs, %s MiB each%s)"
            % (n["name"], n["gpus"], n["gpu_memory_mib"], ", fake devices" if n["fake"] else "")
            for n in nodes
        )
        or "none",
        "fake": any(n.get("fake") for n in nodes),
        "notes": [setting["note"] for setting in enforcement.values() if setting.get("note")],
    }


def _verdict(res):
    """A case's verdict as printed: a pass on a node with no GPU says so."""
    verdict = res["verdict"].replace("_", " ")
    if res["verdict"] == PASSED and any(NO_GPU in o for o in res["observations"]):
        verdict += " (%s)" % NO_GPU
    return verdict


def _workload_row(rec):
    """One probe pod's columns, in the order of the workloads table."""
    probe = rec["probe"] or {}
    kai = rec.get("kai") or {}
    return [
        rec["name"],
        rec["case"],
        rec["node"],
        rec.get("scheduler"),
        rec["gpu_fraction"] and "fraction " + rec["gpu_fraction"] or rec["gpu_request"] or "none",
        rec["submitted_at"],
        rec["scheduled_at"],
        rec["started_at"],
        rec["finished_at"],
        rec["exit_code"],
        ",".join(rec["devices"]) or "none",
        rec["visible"].get("GPU_PORTION") or "-",
        kai.get("configmap") or "-",
        (kai.get("reservation") or {}).get("device") or "-",
        "%s, %s" % (probe.get("mode"), probe.get("note") or "GPU") if probe else "no JSON",
    ]


def render_markdown(document, cost_markdown, template_dir=None):
    """gpu_access.md, rendered with ``templates/reports/gpu_access.md.j2``; ``cost_markdown`` is
    the cost section as the cost module rendered it (None when it was not computed)."""
    summary = document["summary"]
    kai = document.get("kai") or {}
    context = dict(
        document,
        reasons="; ".join(summary["reasons"]),
        counts={k: "%d" % summary[k] for k in ("cases", "passed", "failed", "not_run")},
        kai_line=(
            "installed, version %s, GPU sharing %s"
            % (kai.get("version") or "unknown", kai.get("gpu_sharing"))
            if kai.get("installed")
            else "not installed"
        ),
        namespace=document.get("namespace"),
        probe_image=document.get("probe_image"),
        enforcement=_enforcement(document.get("plan") or {}),
        no_gpu=NO_GPU,
        outsiders=" | ".join(summary.get("outsiders_with_devices") or []),
        cases=[dict(res, verdict_text=_verdict(res)) for res in document["cases"]],
        workloads=[_workload_row(rec) for rec in document["workloads"]],
        rejected=[
            {"case": case, "message": adm.get("message")}
            for case, adm in sorted((document.get("admission") or {}).items())
            if adm.get("rejected")
        ],
        cost_markdown=cost_markdown,
        cost_reason=None if cost_markdown else document["cost"].get("reason"),
    )
    return markdown.render("gpu_access.md.j2", context, template_dir)


def build_report(params, now):
    """The whole report document and its markdown, from the module's parameters (the templates'
    folder, ``template_dir``, among them)."""
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
    return document, render_markdown(document, cost_md, params.get("template_dir"))
