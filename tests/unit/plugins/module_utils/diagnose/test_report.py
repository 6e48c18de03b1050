"""module_utils/diagnose/report.py: the report (Markdown, JUnit) built from the diagnosis."""

import xml.etree.ElementTree as ET

import pytest

from ansible_collections.kaiops.runbooks.plugins.module_utils.diagnose import report
from plugins.module_utils.scan.test_pending import LOCAL, cluster


def test_report_groups_by_cause_across_clusters_and_names_failed_ones():
    found, _raw = cluster(LOCAL)
    doc = report.build(
        {"a": found, "b": {"status": "unreachable", "error": "Failed to reach the API server"}},
        "2026-12-01T12:00:00Z",
    )
    assert doc["decision"] == "incomplete" and doc["summary"]["failed"] == ["b"]
    assert doc["summary"]["by_cause"]["gang_waiting"] == 2
    assert list(doc["summary"]["by_cause"])[0] == "scheduling_gated"  # the rules' order
    assert [c["id"] for c in doc["causes"]][-1] == "unknown"
    markdown = report.render_markdown(doc)
    assert "**UNREACHABLE**: Failed to reach the API server" in markdown
    assert "- **case-gang/gang-0** - `gang_waiting`, waiting 40m00s" in markdown


def test_junit_fails_only_the_unknown_pods_and_errors_the_clusters_not_read():
    found, _raw = cluster(LOCAL)
    doc = report.build({"a": found, "b": {"status": "forbidden", "error": "no"}}, "t")
    root = ET.fromstring(report.render_junit(doc))
    assert root.get("failures") == "1" and root.get("errors") == "1"
    assert root.get("tests") == str(len(found["pods"]) + 1)


def test_a_cluster_with_no_pending_pod_passes_one_case():
    found, _raw = cluster([])
    assert found["pods"] == []
    root = ET.fromstring(report.render_junit(report.build({"a": found}, "t")))
    assert root.get("tests") == "1" and root.get("failures") == "0"
    assert "No Pending pod that KAI schedules." in report.render_markdown(
        report.build({"a": found}, "t")
    )


@pytest.mark.parametrize(
    ("seconds", "text"), [(None, None), (5, "5s"), (65, "1m05s"), (3725, "1h02m05s")]
)
def test_duration(seconds, text):
    assert report.duration(seconds) == text
