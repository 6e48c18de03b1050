# -*- coding: utf-8 -*-
# Copyright: kaiops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The multi-cluster inventory report: summary and Markdown rendering, pure functions."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

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
    }


def _cell(value):
    if value is None:
        return "-"
    return str(value).replace("|", "\\|").replace("\n", " ")


def _version_cell(kai):
    """The version, and "KAI stand-in" next to it where the cluster runs the lab's stand-in."""
    if kai.get("implementation") == "standin":
        return "%s (%s)" % (kai.get("version"), kai.get("implementation_label"))
    return kai.get("version")


def render_markdown(clusters, summary, affected_range, generated_at=None, fixed_version=None):
    """inventory.md; ``fixed_version``: the release that fixes the panic (meta/kai_releases.yml)."""
    lines = ["# KAI Scheduler inventory", ""]
    if generated_at:
        lines += ["Generated: %s" % generated_at, ""]
    lines += [
        "Affected binder range: `%s` (KAI binder panic on an existing GPU-sharing ConfigMap "
        "with nil data%s)."
        % (affected_range, "; fixed in %s" % fixed_version if fixed_version else ""),
        "",
        "Clusters: %d; by status: %s; by verdict: %s."
        % (
            summary["clusters"],
            ", ".join("%s %d" % kv for kv in sorted(summary["by_status"].items())) or "-",
            ", ".join("%s %d" % kv for kv in sorted(summary["by_verdict"].items())) or "-",
        ),
    ]
    if summary.get("split"):
        lines += [
            "",
            "**What runs disagrees with helm or within KAI on: %s** (see each cluster's findings)."
            % ", ".join(summary["split"]),
        ]
    lines += [
        "",
        "| Cluster | Status | Kubernetes | KAI | GPU sharing | Sharing pods | Empty CMs "
        "| GPU nodes | Verdict |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for name, entry in sorted(clusters.items()):
        kai = entry.get("kai") or {}
        path = entry.get("affected_path") or {}
        lines.append(
            "| %s |"
            % " | ".join(
                _cell(v)
                for v in (
                    name,
                    entry.get("status"),
                    (entry.get("server_version") or {}).get("git_version"),
                    "-"
                    if entry.get("error")
                    else _version_cell(kai)
                    if kai.get("installed")
                    else "not installed",
                    (entry.get("gpu_sharing") or {}).get("enabled"),
                    path.get("fraction_pods"),
                    path.get("configmaps_without_data"),
                    (entry.get("gpu_nodes") or {}).get("count"),
                    VERDICT_TEXT.get((entry.get("exposure") or {}).get("verdict"), "-"),
                )
            )
        )
    for name, entry in sorted(clusters.items()):
        lines += ["", "## %s" % name, ""]
        if entry.get("error"):
            lines += ["**%s**: %s" % (entry.get("status"), entry["error"]), ""]
            continue
        exposure = entry.get("exposure") or {}
        lines += ["Verdict: **%s**" % exposure.get("verdict")]
        lines += ["- %s" % r for r in exposure.get("reasons") or []]
        kai = entry.get("kai") or {}
        helm = kai.get("helm") or {}
        if not kai.get("installed"):
            lines += [
                "",
                "No KAI Deployments (binder, kai-operator) in namespace %s."
                % _cell(kai.get("namespace")),
            ]
        else:
            lines += [
                "",
                "Helm release: %s, chart %s, revision %s, status %s (source: %s)"
                % tuple(
                    _cell(helm.get(k))
                    for k in ("release", "chart_version", "revision", "status", "source")
                ),
            ]
        if kai.get("findings"):
            lines += ["", "Findings (what runs disagrees):"]
            lines += ["- **%s**" % _cell(f) for f in kai["findings"]]
        if kai.get("components"):
            lines += ["", "| Deployment | Image | Ready | Restarts |", "|---|---|---|---|"]
            for comp in kai["components"]:
                images = ", ".join(c["image"] or "-" for c in comp["containers"])
                lines.append(
                    "| %s | %s | %s/%s | %s |"
                    % (
                        _cell(comp["name"]),
                        _cell(images),
                        comp["ready_replicas"],
                        comp["replicas"],
                        comp["restarts"],
                    )
                )
        nodes = entry.get("gpu_nodes") or {}
        hints = nodes.get("hints") or {}
        lines += [
            "",
            "GPU nodes: %s with %s GPUs; MIG strategies: %s; time-slicing: %s; "
            "MPS: %s; fake GPU nodes: %s"
            % (
                nodes.get("count"),
                nodes.get("gpus_total"),
                ", ".join(hints.get("mig_strategies") or []) or "-",
                hints.get("time_slicing"),
                hints.get("mps"),
                hints.get("fake_gpu_nodes"),
            ),
        ]
        denied = [k for k, v in (entry.get("access") or {}).items() if v == "forbidden"]
        if denied:
            lines += ["", "Not permitted to read: %s" % ", ".join(denied)]
        if entry.get("restart_threshold_exceeded"):
            lines += [
                "",
                "Restarts above %s: %s"
                % (entry.get("restart_threshold"), ", ".join(entry["restart_threshold_exceeded"])),
            ]
    return "\n".join(lines) + "\n"
