"""module_utils/diagnose: the client's reads (one LIST per kind, logs read only when asked and a
log that does not exist yet never a failure), the runner's result, and the report (Markdown,
JUnit) built from the diagnosis."""

import xml.etree.ElementTree as ET

import pytest
from conftest import ExitJson
from fakeapi import FakeClient

from ansible_collections.kaiops.runbooks.plugins.module_utils.diagnose import report, runner
from ansible_collections.kaiops.runbooks.plugins.module_utils.diagnose.client import DiagnoseClient
from ansible_collections.kaiops.runbooks.plugins.module_utils.errors import KaiopsError
from plugins.module_utils.scan.test_pending import BASE, CASES, LOCAL, NOW, cluster

PARAMS = {
    "cluster": "fake",
    "kai_namespace": "kai-scheduler",
    "reservation_namespace": "kai-resource-reservation",
    "scheduler_name": "kai-scheduler",
    "namespaces": [],
    "read_logs": True,
    "log_lines": 300,
    "log_since_s": 600,
    "kubeconfig": None,
    "context": None,
    "request_timeout": 5,
}


def objects(cases):
    found = list(BASE["cluster"]) + list(BASE["components"])
    for case in cases:
        found += case["objects"]
    return found


def test_client_lists_each_kind_once_and_events_per_namespace_with_pending_pods():
    client = FakeClient(objects(LOCAL), served=BASE["served"], logs=BASE["logs"])
    raw = DiagnoseClient(client).collect(
        "kai-scheduler", "kai-resource-reservation", "kai-scheduler", logs=None
    )
    lists = [entry for entry in client.log if entry[0] == "list"]
    kinds = [entry[2] for entry in lists if entry[3] is None]
    assert sorted(kinds) == ["BindRequest", "Node", "Pod", "PodGroup", "Queue"]
    event_namespaces = sorted(entry[3] for entry in lists if entry[2] == "Event")
    assert "kai-scheduler" in event_namespaces and "kai-resource-reservation" in event_namespaces
    assert "team-a" not in event_namespaces  # only a bound pod and another scheduler's there
    assert not [entry for entry in client.log if entry[0] == "text"]
    assert raw["access"]["logs"] == "not_asked"


def test_client_reads_only_the_logs_of_the_scheduler_binder_and_pod_grouper():
    client = FakeClient(objects([]), served=BASE["served"], logs=BASE["logs"])
    raw = DiagnoseClient(client).collect(
        "kai-scheduler",
        "kai-resource-reservation",
        "kai-scheduler",
        logs={"tail_lines": 5, "since_s": 60},
    )
    read = sorted(entry[1].split("/")[6] for entry in client.log if entry[0] == "text")
    assert read == [
        "binder-6f7c9d8b5-x2k4p",
        "kai-scheduler-default-5d8f6c7b9-q7w2e",
        "pod-grouper-7b6d5c4f3-m9n8b",
    ]
    assert {entry[2]["tailLines"] for entry in client.log if entry[0] == "text"} == {5}
    assert raw["access"]["logs"] == "ok"


def test_client_fails_only_when_pods_cannot_be_listed():
    client = FakeClient(objects([]), served=BASE["served"], forbidden=[("v1", "Pod")])
    with pytest.raises(KaiopsError, match="Failed to list pods") as err:
        DiagnoseClient(client).collect("kai-scheduler", "kai-resource-reservation", "kai-scheduler")
    assert err.value.status == "forbidden"


def test_runner_returns_the_diagnosis_unchanged(fake_module):
    module = fake_module(dict(PARAMS))

    def factory(_kubeconfig, _context, _timeout):
        return FakeClient(objects(LOCAL), served=BASE["served"], logs=BASE["logs"])

    with pytest.raises(ExitJson) as done:
        runner.run_diagnose_info(module, client_factory=factory, now=lambda: NOW)
    result = done.value.result
    assert result["changed"] is False
    assert result["diagnosis"]["pending"] == sum(len(c["expected"]) for c in LOCAL)
    assert result["diagnosis"]["status"] == "ok"


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


def test_case_ids_are_unique():
    assert len(CASES) == len(set(CASES))
