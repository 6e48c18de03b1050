"""module_utils/inventory/report.py: summary and Markdown, pure."""

import jinja2
import pytest
from conftest import AFFECTED_RANGE, PATCHED

from ansible_collections.kaiops.runbooks.plugins.module_utils.inventory.client import (
    InventoryClient,
)
from ansible_collections.kaiops.runbooks.plugins.module_utils.inventory.report import (
    render_markdown,
    summarize,
)
from ansible_collections.kaiops.runbooks.plugins.module_utils.inventory.service import analyse


def clusters(fake_client):
    lab = analyse(
        InventoryClient(fake_client("kai-sharing")).collect("kai-scheduler"),
        cluster="lab",
        affected_range=AFFECTED_RANGE,
        restart_threshold=5,
    )
    bare = analyse(
        InventoryClient(fake_client("no-kai")).collect("kai-scheduler"),
        cluster="bare",
        affected_range=AFFECTED_RANGE,
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
    text = render_markdown(
        data, summarize(data), AFFECTED_RANGE, "2026-11-30T00:00:00Z", fixed_version=PATCHED
    )
    assert text.startswith("# KAI Scheduler inventory\n")
    assert "Affected binder range: `%s`" % AFFECTED_RANGE in text
    assert "with nil data; fixed in %s)." % PATCHED in text
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


def test_render_markdown_fails_on_a_component_without_a_field_it_prints(fake_client):
    # the template reads the component's own fields: a missing one fails (StrictUndefined)
    # instead of printing an empty cell that would read as a recorded blank
    data = clusters(fake_client)
    del data["lab"]["kai"]["components"][0]["restarts"]
    with pytest.raises(jinja2.UndefinedError, match="restarts"):
        render_markdown(data, summarize(data), AFFECTED_RANGE)


def test_a_retracted_release_is_flagged_with_its_source(fake_client):
    from conftest import RELEASES

    raw = InventoryClient(fake_client("kai-sharing")).collect("kai-scheduler")
    version = analyse(raw, cluster="lab", affected_range=AFFECTED_RANGE)["kai"]["version"]
    rows = [{"version": version, "retracted": True, "retracted_source": "upstream PR 1"}]
    flagged = analyse(raw, cluster="lab", affected_range=AFFECTED_RANGE, releases=rows)
    assert flagged["kai"]["retracted"] == {"version": version, "source": "upstream PR 1"}
    # the collection's own rows: the lab's version is not retracted, v0.20.x are
    plain = analyse(
        raw, cluster="lab", affected_range=AFFECTED_RANGE, releases=RELEASES["releases"]
    )
    assert plain["kai"]["retracted"] is None
    assert {r["version"] for r in RELEASES["releases"] if r.get("retracted")} == {
        "v0.20.0",
        "v0.20.1",
    }
    data = {"lab": flagged, "other": plain}
    summary = summarize(data)
    assert summary["retracted"] == ["lab"]
    text = render_markdown(data, summary, AFFECTED_RANGE)
    assert "**A release upstream retracted runs on: lab**" in text
    assert "**Retracted release**: %s was withdrawn upstream (upstream PR 1)" % version in text
    assert text.count("Retracted release**") == 1
