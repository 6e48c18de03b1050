"""scan/pending.py, the shared Pending-pod classifier, over fixtures in the API server's shapes
(tests/unit/fixtures/diagnose): one case per cause and unknown, the mixed set with its confusion
table (100 % expected), the order of the rules, and sections that could not be read.

Every case is read through the diagnose client (FakeClient), so the snapshot the rules see is
the one a cluster gives.
"""

import datetime
import os

import pytest
import yaml
from conftest import FIXTURES
from fakeapi import FakeClient

from ansible_collections.kaiops.runbooks.plugins.module_utils.diagnose.client import DiagnoseClient
from ansible_collections.kaiops.runbooks.plugins.module_utils.diagnose.service import (
    diagnose,
    snapshot,
)
from ansible_collections.kaiops.runbooks.plugins.module_utils.recovery.service import STEPS
from ansible_collections.kaiops.runbooks.plugins.module_utils.scan import pending

HERE = os.path.join(FIXTURES, "diagnose")


def load(name):
    with open(os.path.join(HERE, name)) as handle:
        return yaml.safe_load(handle)


BASE = load("base.yml")
CASES = {c["id"]: c for c in load("cases.yml")["cases"]}
NOW = datetime.datetime.fromisoformat(BASE["now"].replace("Z", "+00:00"))
LOCAL = [c for c in CASES.values() if not c.get("cluster_wide")]


def cluster(cases, forbidden=(), logs=True):
    """A FakeClient holding base.yml and the cases' objects, and its diagnosis."""
    objects = list(BASE["cluster"])
    if not any("components" in (c.get("without") or []) for c in cases):
        objects += BASE["components"]
    found_logs = dict(BASE["logs"])
    for case in cases:
        objects += case["objects"]
        found_logs.update(case.get("logs") or {})
    client = FakeClient(objects, served=BASE["served"], forbidden=forbidden, logs=found_logs)
    raw = DiagnoseClient(client).collect(
        "kai-scheduler",
        "kai-resource-reservation",
        "kai-scheduler",
        logs={"tail_lines": 200, "since_s": 600} if logs else None,
    )
    return diagnose(raw, NOW, "fake"), raw


def causes_of(result):
    return {"%s/%s" % (p["pod"]["namespace"], p["pod"]["name"]): p["cause"] for p in result["pods"]}


def confusion(expected, got):
    """{expected cause: {got cause: n}} and the share of pods given their expected cause."""
    table = {}
    for pod, want in expected.items():
        row = table.setdefault(want, {})
        row[got.get(pod, "(not diagnosed)")] = row.get(got.get(pod, "(not diagnosed)"), 0) + 1
    right = sum(1 for pod, want in expected.items() if got.get(pod) == want)
    return table, right / float(len(expected) or 1)


def print_confusion(table, share):
    print("\nexpected cause              -> got (count)")
    for want in pending.CAUSE_IDS:
        if want in table:
            cells = ", ".join("%s %d" % kv for kv in sorted(table[want].items()))
            print("%-27s -> %s" % (want, cells))
    print("expected: %.0f %%" % (100 * share))


@pytest.mark.parametrize("case_id", sorted(CASES))
def test_each_case_gets_its_cause_with_proof(case_id):
    case = CASES[case_id]
    result, _raw = cluster([case])
    assert causes_of(result) == case["expected"]
    for pod in result["pods"]:
        assert pod["evidence"], pod
        for item in pod["evidence"]:
            assert set(item) == {"kind", "namespace", "name", "field", "value"}, item
            assert item["kind"] and item["field"], item
        assert pod["step"] or pod["owner"]


def test_every_cause_has_a_case():
    expected = {cause for case in CASES.values() for cause in case["expected"].values()}
    assert expected == set(pending.CAUSE_IDS)


def test_the_mixed_set_is_diagnosed_as_planted(capsys):
    expected = {pod: cause for case in LOCAL for pod, cause in case["expected"].items()}
    result, _raw = cluster(LOCAL)
    table, share = confusion(expected, causes_of(result))
    with capsys.disabled():
        print_confusion(table, share)
    assert share == 1.0, table
    assert set(causes_of(result)) == set(expected)  # bound and other schedulers' pods left out
    counts = {row["cause"]: row["count"] for row in result["by_cause"]}
    assert counts["queue_over_limit"] == 2 and counts["gang_waiting"] == 2
    over = next(r for r in result["by_cause"] if r["cause"] == "queue_over_limit")
    assert over["oldest_pod"] == "case-limit/limited-0" and over["oldest_wait_s"] == 3600.0


def test_the_rules_are_tried_in_the_documented_order():
    ids = [c["id"] for c in pending.CAUSES]
    assert ids == [
        "scheduling_gated",
        "kai_component_down",
        "not_seen_by_kai",
        "gpu_sharing_rejected",
        "gang_waiting",
        "queue_missing",
        "queue_over_limit",
        "no_gpu_fits",
        "duplicate_reservation",
        "reservation_pod_failing",
        "bind_nil_map",
        "bind_failed_other",
    ]
    doc = pending.__doc__.split("Why this order")[1]
    texts = (
        "scheduling gate",
        "component",
        "no PodGroup",
        "did not mutate",
        "gang",
        "queue missing",
    )
    positions = [doc.index(text) for text in texts]
    assert positions == sorted(positions)


def test_a_gate_wins_over_a_queue_that_does_not_exist():
    case = yaml.safe_load(yaml.safe_dump(CASES["queue_missing"]))
    case["objects"][0]["spec"]["schedulingGates"] = [{"name": "kaiops.dev/hold"}]
    result, _raw = cluster([case])
    (pod,) = result["pods"]
    assert pod["cause"] == "scheduling_gated"


def test_the_nil_map_proof_names_the_bindrequest_and_the_dataless_configmap():
    result, _raw = cluster([CASES["bind_nil_map"]])
    pod = next(p for p in result["pods"] if p["pod"]["name"] == "nil-0")
    assert {
        "kind": "BindRequest",
        "namespace": "case-nilmap",
        "name": "nil-0",
        "field": "status.reason",
        "value": "Internal Error: assignment to entry in nil map",
    } in pod["evidence"]
    assert ("ConfigMap", "nil-0-dh8gw9t-shared-gpu-0", "data") in [
        (e["kind"], e["name"], e["field"]) for e in pod["evidence"]
    ]
    assert pod["step"] == "delete_dataless_configmaps"


def test_the_queue_reason_is_read_from_reasons_or_the_message_never_the_condition_reason():
    result, _raw = cluster([CASES["queue_over_limit"]])
    fields = {p["pod"]["name"]: [e["field"] for e in p["evidence"]] for p in result["pods"]}
    assert any(f.endswith(".reasons[].reason") for f in fields["limited-0"])
    assert not any(f.endswith(".reasons[].reason") for f in fields["limited-1"])
    limit = [e for p in result["pods"] for e in p["evidence"] if e["kind"] == "Queue"]
    assert limit and all(e["value"] == 0 for e in limit)


def test_the_unauthorized_binder_is_named_from_its_log():
    result, raw = cluster([CASES["kai_component_down"]])
    (pod,) = result["pods"]
    assert [e["field"] for e in pod["evidence"]] == ["status.phase", "log (recent)"]
    assert "Unauthorized" in pod["evidence"][1]["value"]
    assert raw["access"]["logs"] == "ok"


def test_without_logs_the_unauthorized_binder_is_unknown_never_a_guess():
    result, raw = cluster([CASES["kai_component_down"]], logs=False)
    (pod,) = result["pods"]
    assert pod["cause"] == "unknown"
    assert "BindRequest" in [e["kind"] for e in pod["evidence"]]
    assert any("log" in note for note in result["notes"])


def test_podgroups_that_cannot_be_read_prove_nothing():
    result, raw = cluster(
        [CASES["not_seen_by_kai"], CASES["queue_missing"]],
        forbidden=[("scheduling.run.ai/v2alpha2", "PodGroup")],
    )
    assert raw["access"]["podgroups"] == "forbidden"
    assert set(causes_of(result).values()) == {"unknown"}
    assert any(note.startswith("PodGroups") for note in result["notes"])
    assert result["status"] == "partial"


def test_every_recovery_step_named_is_one_recovery_knows():
    for cause in pending.CAUSES:
        assert cause["step"] is None or cause["step"] in STEPS, cause["id"]
        assert cause["owner"], cause["id"]


def test_a_snapshot_without_access_counts_what_it_holds_as_read():
    _result, raw = cluster([CASES["queue_missing"]])
    snap = snapshot(raw)
    snap.pop("access")
    found = pending.classify(snap, NOW)
    assert [p["cause"] for p in found["pods"]] == ["queue_missing"]


def test_a_scheduler_with_no_ready_replica_holds_the_pods_waiting_for_it():
    case = yaml.safe_load(yaml.safe_dump(CASES["unknown"]))
    components = yaml.safe_load(yaml.safe_dump(BASE["components"]))
    for obj in components:
        if obj["metadata"]["name"] == "kai-scheduler-default" and obj["kind"] == "Deployment":
            obj["status"]["readyReplicas"] = 0
    case["without"] = ["components"]
    case["objects"] = case["objects"] + components
    result, _raw = cluster([case])
    (pod,) = result["pods"]
    assert pod["cause"] == "kai_component_down" and pod["stage"] == "scheduling"
    assert ("Deployment", "kai-scheduler-default", "status.readyReplicas", 0) in [
        (e["kind"], e["name"], e["field"], e["value"]) for e in pod["evidence"]
    ]
    assert pod["step"] is None  # restart_binder is for the binder only


def test_without_kai_config_no_component_exists_and_the_pod_grouper_is_named():
    result, _raw = cluster([CASES["kai_component_down_no_kai_config"]])
    (pod,) = result["pods"]
    assert pod["stage"] == "grouping" and pod["step"] is None
    assert "no Deployment of the pod-grouper" in pod["evidence"][1]["value"]


def test_the_unauthorized_binder_names_recoverys_restart_binder():
    result, _raw = cluster([CASES["kai_component_down"]])
    assert result["pods"][0]["step"] == "restart_binder"


def test_case_ids_are_unique():
    # CASES is keyed by id: a repeated id in cases.yml would drop a case without a word.
    ids = [c["id"] for c in load("cases.yml")["cases"]]
    assert sorted(i for i in set(ids) if ids.count(i) > 1) == []
