"""module_utils/diagnose/client.py: the client's reads (one LIST per kind, logs read only when asked
and a log that does not exist yet never a failure), over the fake client."""

import pytest
from fakeapi import FakeClient

from ansible_collections.kaiops.runbooks.plugins.module_utils.diagnose.client import DiagnoseClient
from ansible_collections.kaiops.runbooks.plugins.module_utils.errors import KaiopsError
from plugins.module_utils.scan.test_pending import BASE, LOCAL


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
