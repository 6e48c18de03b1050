"""module_utils/recovery_apply.py and the apply/facts/report runners; the client is faked.

The client below checks, at the moment of every write, that interventions.jsonl already
holds a 'recorded' line for that object's UID: nothing is changed without a prior record.
"""

import json
import os

import pytest
from conftest import ExitJson

from ansible_collections.kaiops.runbooks.plugins.module_utils.bundle.policy import DEFAULT_POLICY
from ansible_collections.kaiops.runbooks.plugins.module_utils.errors import KaiopsError
from ansible_collections.kaiops.runbooks.plugins.module_utils.evidence.writer import (
    EvidenceWriter,
)
from ansible_collections.kaiops.runbooks.plugins.module_utils.k8s.objects import ref
from ansible_collections.kaiops.runbooks.plugins.module_utils.recovery.apply import (
    JOURNAL,
    InterventionJournal,
    RecoveryApplier,
)
from ansible_collections.kaiops.runbooks.plugins.module_utils.recovery.runner import (
    run_recovery_apply,
    run_recovery_info,
    run_recovery_report,
)
from ansible_collections.kaiops.runbooks.plugins.module_utils.recovery.service import plan
from ansible_collections.kaiops.runbooks.plugins.module_utils.scan.client import RecoveryClient
from ansible_collections.kaiops.runbooks.plugins.module_utils.scan.findings import find
from plugins.module_utils.recovery.test_service import CLUSTER, NOW, SERVED, cluster_client


class WritingClient:
    """A FakeClient that also deletes and patches, and checks the journal at each write."""

    def __init__(self, journal_dir, conflict=()):
        self.inner = cluster_client(served=SERVED)
        self.journal_dir = journal_dir
        self.conflict = set(conflict)
        self.writes = []

    @property
    def calls(self):
        return self.inner.calls

    def list(self, *args, **kwargs):
        return self.inner.list(*args, **kwargs)

    def read(self, api_version, kind, name, namespace=None):
        return _read(self.inner, api_version, kind, name, namespace)

    def _recorded_uids(self):
        path = os.path.join(self.journal_dir, JOURNAL)
        if not os.path.exists(path):
            return set()
        with open(path) as handle:
            lines = [json.loads(line) for line in handle]
        return {line["target"]["uid"] for line in lines if line["event"] == "recorded"}

    def delete(self, api_version, kind, name, namespace, uid, resource_version):
        recorded_first = uid in self._recorded_uids()
        self.writes.append(("delete", kind, namespace, name, uid, resource_version, recorded_first))
        if name in self.conflict:
            raise KaiopsError("Failed to delete: HTTP 409 Conflict", http_status=409)
        self.inner.objects = [o for o in self.inner.objects if o["metadata"].get("uid") != uid]
        return {"metadata": {"deletionTimestamp": "2026-11-30T12:00:01Z"}}

    def patch(self, api_version, kind, name, namespace, patch, resource_version):
        uid = next(
            o["metadata"]["uid"] for o in self.inner.objects if o["metadata"]["name"] == name
        )
        self.writes.append(
            ("patch", kind, namespace, name, uid, resource_version, uid in self._recorded_uids())
        )
        return {}


def _read(inner, api_version, kind, name, namespace=None):
    inner.calls += 1
    for obj in inner.objects:
        meta = obj["metadata"]
        if (obj["apiVersion"], obj["kind"], meta["name"], meta.get("namespace")) == (
            api_version,
            kind,
            name,
            namespace,
        ):
            return json.loads(json.dumps(obj))
    return None


def findings_and_binder():
    raw = RecoveryClient(cluster_client(served=SERVED)).collect()
    return find(raw, NOW)["findings"], ref(raw["binder"])


ALL_STEPS = [
    "delete_failed_bindrequests",
    "delete_stale_reservation_pods",
    "delete_orphan_configmaps",
    "restart_binder",
]


def journal_lines(folder):
    with open(os.path.join(folder, JOURNAL)) as handle:
        return [json.loads(line) for line in handle]


def test_applier_records_every_object_before_it_is_changed(tmp_path):
    findings, binder = findings_and_binder()
    client = WritingClient(str(tmp_path))
    planned, _idle = plan(findings, ALL_STEPS, binder=binder)
    journal = InterventionJournal(EvidenceWriter(str(tmp_path), DEFAULT_POLICY))
    done = RecoveryApplier(client, journal, "c1", "task X").apply(planned)
    assert [w[:4] for w in client.writes] == [
        ("delete", "BindRequest", "team-a", "train-0-br"),
        ("delete", "Pod", "kai-resource-reservation", "gpu-reservation-g1"),
        ("delete", "ConfigMap", "team-a", "train-0-shared-0"),
        ("patch", "Deployment", "kai-scheduler", "binder"),
    ]
    assert all(w[-1] for w in client.writes), "a write happened before its record"
    assert [d["outcome"] for d in done] == ["deleted", "deleted", "deleted", "restarted"]
    lines = journal_lines(str(tmp_path))
    assert [line["event"] for line in lines] == ["recorded", "applied"] * 4
    for recorded, applied in zip(lines[::2], lines[1::2], strict=True):
        assert recorded["id"] == applied["id"] and recorded["seq"] < applied["seq"]
        assert recorded["recorded_at"] <= applied["applied_at"]
        assert recorded["task"] == "task X" and recorded["why"]
        snapshot = json.load(open(os.path.join(str(tmp_path), recorded["snapshot"])))
        assert snapshot["metadata"]["uid"] == recorded["target"]["uid"]
    # preconditions: the resourceVersion recorded is the one the delete carried
    assert client.writes[0][5] == lines[0]["resource_version"] == "11"


def test_applier_refuses_a_write_that_was_not_recorded(tmp_path):
    findings, _binder = findings_and_binder()
    client = WritingClient(str(tmp_path))
    planned, _idle = plan(findings, ["delete_orphan_configmaps"])
    applier = RecoveryApplier(
        client, InterventionJournal(EvidenceWriter(str(tmp_path), DEFAULT_POLICY)), "c1", "t"
    )
    with pytest.raises(KaiopsError, match="was not recorded in interventions.jsonl first"):
        applier._write("c1:001", planned[0], {}, "12")
    assert client.writes == []


def test_applier_without_evidence_folder_changes_nothing(tmp_path):
    client = WritingClient(str(tmp_path))
    with pytest.raises(KaiopsError, match="no evidence folder to record the interventions in"):
        RecoveryApplier(client, None, "c1", "t")
    assert client.writes == []


def test_applier_conflict_is_recorded_not_retried(tmp_path):
    findings, _binder = findings_and_binder()
    client = WritingClient(str(tmp_path), conflict={"train-0-shared-0"})
    planned, _idle = plan(findings, ["delete_orphan_configmaps"])
    done = RecoveryApplier(
        client, InterventionJournal(EvidenceWriter(str(tmp_path), DEFAULT_POLICY)), "c1", "t"
    ).apply(planned)
    assert done[0]["outcome"] == "conflict"
    assert [line["event"] for line in journal_lines(str(tmp_path))] == ["recorded", "conflict"]


def test_applier_skips_an_object_gone_or_replaced(tmp_path):
    findings, _binder = findings_and_binder()
    client = WritingClient(str(tmp_path))
    for obj in client.inner.objects:
        if obj["metadata"]["name"] == "train-0-shared-0":
            obj["metadata"]["uid"] = "uid-new"
    planned, _idle = plan(findings, ["delete_orphan_configmaps"])
    done = RecoveryApplier(
        client, InterventionJournal(EvidenceWriter(str(tmp_path), DEFAULT_POLICY)), "c1", "t"
    ).apply(planned)
    assert done[0]["outcome"] == "skipped" and "new UID" in done[0]["reason"]
    assert client.writes == []


# ---------------------------------------------------------------- runners


def apply_params(findings, steps, **extra):
    params = {
        "kubeconfig": None,
        "context": None,
        "request_timeout": 5,
        "evidence_dir": None,
        "cluster": "c1",
        "findings": findings,
        "steps": steps,
        "namespaces": [],
        "kai_namespace": "kai-scheduler",
        "binder": None,
        "task": "t",
    }
    params.update(extra)
    return params


def test_run_apply_disabled_steps_delete_nothing(tmp_path, fake_module):
    findings, _binder = findings_and_binder()
    client = WritingClient(str(tmp_path))
    with pytest.raises(ExitJson) as done:
        run_recovery_apply(
            fake_module(apply_params(findings, [], evidence_dir=str(tmp_path))),
            client_factory=lambda *a: client,
        )
    assert done.value.result["changed"] is False and done.value.result["interventions"] == []
    assert client.writes == [] and client.calls == 0
    assert not os.path.exists(os.path.join(str(tmp_path), JOURNAL))


def test_run_apply_check_mode_writes_nothing_to_the_cluster(tmp_path, fake_module):
    findings, _binder = findings_and_binder()
    client = WritingClient(str(tmp_path))
    with pytest.raises(ExitJson) as done:
        run_recovery_apply(
            fake_module(
                apply_params(findings, ALL_STEPS[:3], evidence_dir=str(tmp_path)), check_mode=True
            ),
            client_factory=lambda *a: client,
        )
    assert client.writes == []
    assert {d["outcome"] for d in done.value.result["interventions"]} == {"not_applied"}
    assert {line["event"] for line in journal_lines(str(tmp_path))} == {"not_applied"}


def test_run_apply_scope_keeps_other_namespaces(tmp_path, fake_module):
    findings, _binder = findings_and_binder()
    client = WritingClient(str(tmp_path))
    with pytest.raises(ExitJson):
        run_recovery_apply(
            fake_module(
                apply_params(
                    findings,
                    ALL_STEPS[:3],
                    namespaces=["kai-resource-reservation"],
                    evidence_dir=str(tmp_path),
                )
            ),
            client_factory=lambda *a: client,
        )
    assert [w[2] for w in client.writes] == ["kai-resource-reservation"]


def test_run_facts_with_baseline_observes(fake_module):
    params = {
        "kubeconfig": None,
        "context": None,
        "request_timeout": 5,
        "cluster": "c1",
        "kai_namespace": "kai-scheduler",
        "binder_deployment": "binder",
        "namespaces": [],
        "reservation_namespace": "kai-resource-reservation",
        "min_age_s": 300,
        "window_s": 0,
        "window_rule": {},
        "baseline": None,
        "interventions": [],
        "observe_started_at": None,
    }
    client = cluster_client(served=SERVED)
    with pytest.raises(ExitJson) as first:
        run_recovery_info(fake_module(params), client_factory=lambda *a: client, now=lambda: NOW)
    result = first.value.result
    assert result["changed"] is False and result["disposable"] is True
    assert result["binder"]["name"] == "binder"
    assert result["window"]["samples"] == 2 and result["window"]["window_s"] == 60  # the floor
    params.update(baseline=result["findings"], observe_started_at=100.0)
    with pytest.raises(ExitJson) as second:
        run_recovery_info(
            fake_module(params),
            client_factory=lambda *a: client,
            now=lambda: NOW,
            clock=lambda: 112.5,
        )
    assert second.value.result["observation"]["elapsed_s"] == 12.5
    assert second.value.result["observation"]["pending"] == 4


def test_run_report_writes_json_and_markdown(tmp_path, fake_module):
    findings, _binder = findings_and_binder()
    clusters = {
        "c1": {
            "status": "ok",
            "findings": findings,
            "notes": [],
            "interventions": [],
            "observation": {"outcomes": []},
            "inventory": {},
        }
    }
    with pytest.raises(ExitJson) as done:
        run_recovery_report(fake_module({"evidence_dir": str(tmp_path), "clusters": clusters}))
    assert sorted(done.value.result["files"]) == ["recovery.json", "recovery.md"]
    report = json.load(open(os.path.join(str(tmp_path), "recovery.json")))
    assert report["kind"] == "recovery" and report["summary"]["findings"] == len(findings)
    assert "inventory" not in report["clusters"]["c1"]


def test_cluster_fixture_is_unchanged_by_the_tests():
    assert [o["metadata"]["name"] for o in CLUSTER][:3] == ["kube-system", "binder", "train-0"]
