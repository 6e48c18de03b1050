"""module_utils/report.py: summary and Markdown, pure."""

from ansible_collections.kaiops.runbooks.plugins.module_utils.inventory import (
    InventoryService,
    analyse,
)
from ansible_collections.kaiops.runbooks.plugins.module_utils.report import (
    render_markdown,
    summarize,
)


def clusters(fake_client):
    lab = analyse(
        InventoryService(fake_client("kai-sharing")).collect("kai-scheduler"),
        cluster="lab",
        affected_range=">=0.16.9,<0.16.14",
        restart_threshold=5,
    )
    bare = analyse(
        InventoryService(fake_client("no-kai")).collect("kai-scheduler"),
        cluster="bare",
        affected_range=">=0.16.9,<0.16.14",
    )
    return {
        "lab": lab,
        "bare": bare,
        "dead": {
            "cluster": "dead",
            "status": "unreachable",
            "error": "Failed to reach the API server at https://10.0.0.1:6443: refused",
        },
        "typo": {"status": "missing", "error": "not inventoried"},
    }


def test_summarize_counts_and_lists_failures(fake_client):
    summary = summarize(clusters(fake_client))
    assert summary["clusters"] == 4
    assert summary["by_status"] == {"ok": 1, "not_installed": 1, "unreachable": 1, "missing": 1}
    assert summary["by_verdict"] == {"exposed": 1, "not_installed": 1}
    assert [f["cluster"] for f in summary["failed"]] == ["dead", "typo"]
    assert summary["exposed"] == ["lab"]


def test_render_markdown_has_a_row_and_section_per_cluster(fake_client):
    data = clusters(fake_client)
    text = render_markdown(data, summarize(data), ">=0.16.9,<0.16.14", "2026-11-30T00:00:00Z")
    assert text.startswith("# KAI Scheduler inventory\n")
    assert "| lab | ok | v1.35.4 | v0.16.13 | True | 1 | 1 | 1 | EXPOSED" in text
    assert "| bare | not_installed | v1.34.2 | not installed |" in text
    assert "**unreachable**: Failed to reach the API server" in text
    assert "No KAI Deployments (binder, kai-operator) in namespace kai-scheduler." in text
    assert text.count("Helm release:") == 1
    assert "Restarts above 5: kai-scheduler-default" in text
    for name in data:
        assert "\n## %s\n" % name in text


def test_render_markdown_escapes_pipes():
    data = {"a|b": {"status": "error", "error": "x|y"}}
    text = render_markdown(data, summarize(data), ">=1.0.0")
    assert "| a\\|b | error |" in text
