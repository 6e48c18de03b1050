# Copyright: kaiops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The multi-cluster inventory report, pure functions: ``summarize`` judges (counts, failures),
``render_markdown`` gives ``templates/reports/inventory.md.j2`` what it prints."""

from ansible_collections.kaiops.runbooks.plugins.module_utils.render import markdown

# Per-cluster statuses that mean "this cluster could not be inventoried".
FAILED_STATUSES = ("unreachable", "unauthorized", "forbidden", "invalid_input", "error", "missing")

VERDICT_TEXT = {
    "exposed": "EXPOSED - affected binder and GPU-sharing pods present",
    "latent": "LATENT - affected binder, GPU sharing on, no GPU-sharing pods now",
    "not_exposed": "not exposed",
    "not_installed": "KAI not installed",
    "unknown": "UNKNOWN - binder version unreadable",
}


def summarize(clusters):
    """Counts by status and verdict, and the clusters that could not be inventoried."""
    by_status, by_verdict, failed = {}, {}, []
    for name, entry in sorted(clusters.items()):
        status = entry.get("status") or "missing"
        by_status[status] = by_status.get(status, 0) + 1
        verdict = (entry.get("exposure") or {}).get("verdict")
        if verdict:
            by_verdict[verdict] = by_verdict.get(verdict, 0) + 1
        if status in FAILED_STATUSES:
            failed.append({"cluster": name, "status": status, "error": entry.get("error")})
    return {
        "clusters": len(clusters),
        "by_status": by_status,
        "by_verdict": by_verdict,
        "failed": failed,
        "exposed": sorted(
            n for n, e in clusters.items() if (e.get("exposure") or {}).get("verdict") == "exposed"
        ),
        # helm and the components (or the components among themselves) name different versions
        "split": sorted(n for n, e in clusters.items() if (e.get("kai") or {}).get("findings")),
        # a release upstream withdrew runs there (meta/kai_releases.yml retracted)
        "retracted": sorted(
            n for n, e in clusters.items() if (e.get("kai") or {}).get("retracted")
        ),
    }


def _dash(value):
    """A value not read reads "-"; a value read as "" stays blank, as inventory.md always had it
    (so the template gives the ``cell`` filter "" for empty, not its default "-")."""
    return "-" if value is None else value


def _version_cell(kai):
    """The version, and "KAI stand-in" next to it where the cluster runs the lab's stand-in."""
    if kai.get("implementation") == "standin":
        return "%s (%s)" % (kai.get("version"), kai.get("implementation_label"))
    return kai.get("version")


def _counts(counts):
    return ", ".join("%s %d" % kv for kv in sorted(counts.items())) or "-"


def _row(name, entry):
    """One cluster's line of the summary table, column by column."""
    kai = entry.get("kai") or {}
    path = entry.get("affected_path") or {}
    if entry.get("error"):
        kai_text = "-"
    else:
        kai_text = _version_cell(kai) if kai.get("installed") else "not installed"
    row = {
        "name": name,
        "status": entry.get("status"),
        "kubernetes": (entry.get("server_version") or {}).get("git_version"),
        "kai": kai_text,
        "gpu_sharing": (entry.get("gpu_sharing") or {}).get("enabled"),
        "sharing_pods": path.get("fraction_pods"),
        "empty_configmaps": path.get("configmaps_without_data"),
        "gpu_nodes": (entry.get("gpu_nodes") or {}).get("count"),
        "verdict": VERDICT_TEXT.get((entry.get("exposure") or {}).get("verdict"), "-"),
    }
    return {column: _dash(value) for column, value in row.items()}


def _component(comp):
    """A KAI Deployment's line: the template reads its replicas and restarts from the component
    itself, so that a component without them fails the rendering instead of printing a blank."""
    images = ", ".join(c["image"] or "-" for c in comp["containers"])
    return dict(comp, name=_dash(comp["name"]), images=images)


def _section(name, entry):
    """One cluster's section: what the template prints, each optional value given."""
    kai = entry.get("kai") or {}
    exposure = entry.get("exposure") or {}
    nodes = entry.get("gpu_nodes") or {}
    hints = nodes.get("hints") or {}
    helm = kai.get("helm") or {}
    keys = ("release", "chart_version", "revision", "status", "source")
    return {
        "name": name,
        "error": entry.get("error"),
        "status": entry.get("status"),
        "verdict": exposure.get("verdict"),
        "reasons": exposure.get("reasons") or [],
        "installed": kai.get("installed"),
        "namespace": _dash(kai.get("namespace")),
        "helm": {k: _dash(helm.get(k)) for k in keys},
        "findings": [_dash(f) for f in kai.get("findings") or []],
        "retracted": kai.get("retracted"),
        "components": [_component(c) for c in kai.get("components") or []],
        "gpu_nodes": {
            "count": nodes.get("count"),
            "gpus_total": nodes.get("gpus_total"),
            "mig_strategies": ", ".join(hints.get("mig_strategies") or []) or "-",
            "time_slicing": hints.get("time_slicing"),
            "mps": hints.get("mps"),
            "fake_gpu_nodes": hints.get("fake_gpu_nodes"),
        },
        "denied": ", ".join(k for k, v in (entry.get("access") or {}).items() if v == "forbidden"),
        "restart_threshold": entry.get("restart_threshold"),
        "restarts_over": ", ".join(entry.get("restart_threshold_exceeded") or []),
    }


def render_markdown(
    clusters, summary, affected_range, generated_at=None, fixed_version=None, template_dir=None
):
    """inventory.md (``templates/reports/inventory.md.j2``); ``fixed_version``: the release that
    fixes the panic (meta/kai_releases.yml)."""
    context = {
        "generated_at": generated_at,
        "affected_range": affected_range,
        "fixed_version": fixed_version,
        "clusters": "%d" % summary["clusters"],
        "by_status": _counts(summary["by_status"]),
        "by_verdict": _counts(summary["by_verdict"]),
        "split": ", ".join(summary.get("split") or []),
        "retracted": ", ".join(summary.get("retracted") or []),
        "rows": [_row(name, entry) for name, entry in sorted(clusters.items())],
        "sections": [_section(name, entry) for name, entry in sorted(clusters.items())],
    }
    return markdown.render("inventory.md.j2", context, template_dir)
