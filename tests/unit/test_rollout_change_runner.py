"""rollout/change_runner.py and rollout/client.py over files: kai_rollout_step's additions, the
evidence store's earlier runs and rehearsals, the snapshot folder, restore against a fake client."""

import json

import pytest
from conftest import ExitJson

from ansible_collections.kaiops.runbooks.plugins.module_utils.errors import KaiopsError
from ansible_collections.kaiops.runbooks.plugins.module_utils.rollout import change_runner as CR
from ansible_collections.kaiops.runbooks.plugins.module_utils.rollout.client import (
    find_rollout_runs,
    snapshot_objects,
)


def step(fake_module, **params):
    base = {name: None for name in CR.ADDITIONS}
    base.update({"record": {}, "cluster": "lab", "evidence_root": None, "evidence_dir": None})
    base.update(params)
    with pytest.raises(ExitJson) as done:
        CR.run_rollout_step(fake_module(base))
    return done.value.result


def write(path, data):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(data if isinstance(data, str) else json.dumps(data))


def test_step_needs_exactly_one_addition(fake_module):
    with pytest.raises(KaiopsError, match="give exactly one of"):
        step(fake_module, skip="x", prior=True)


def test_step_policy_then_skip_decides_proceed(fake_module):
    rec = {
        "cluster": "lab",
        "gates": [],
        "steps": [{"step": "request", "status": "done", "reason": ""}],
    }
    out = step(fake_module, record=rec, policy={"on_failed_gate": "pause", "waves": [1], "rate": 3})
    assert out["record"]["change"]["policy"]["policy"] == "pause"
    assert out["record"]["change"]["rate"] == 3
    out = step(fake_module, record=out["record"], skip="check mode (--check): nothing is upgraded")
    assert out["decision"] == "proceed"
    steps = {s["step"]: s["status"] for s in out["record"]["steps"]}
    assert [steps[s] for s in ("baseline", "upgrade", "verify", "decision", "rollback")] == [
        "not_run"
    ] * 5


def bundle(root, name, status="complete", report=None, release=None, tasks=None):
    folder = root / name
    write(folder / "status", status + "\n")
    write(folder / "run.json", {"playbooks": [{"path": "/x/rollout.yml"}]})
    if report is not None:
        write(folder / "report.json", report)
    if release is not None:
        write(folder / "snapshots" / "before-change-lab-helm" / "release.json", release)
        write(folder / "snapshots" / "before-change-lab" / "index.json", {"selections": []})
    write(folder / "tasks.jsonl", "\n".join(json.dumps(t) for t in tasks or []) + "\n")
    return folder


def test_find_rollout_runs_reads_status_snapshot_and_last_task(tmp_path):
    bundle(tmp_path, "20261201T100000Z-rollout-a", report={"kind": "rollout", "clusters": {}})
    bundle(
        tmp_path,
        "20261201T110000Z-rollout-b",
        status="interrupted",
        release={"revision": 7, "app_version": "v0.16.13+standin"},
        tasks=[{"host": "lab", "task": "Snapshot"}, {"host": "lab", "task": "Upgrade"}],
    )
    bundle(tmp_path, "20261201T120000Z-reproduce-c", report={"kind": "reproduce"})
    (tmp_path / "latest").symlink_to(tmp_path / "20261201T110000Z-rollout-b")
    runs = find_rollout_runs(str(tmp_path), "lab")
    assert [r["bundle"] for r in runs] == [
        "20261201T100000Z-rollout-a",
        "20261201T110000Z-rollout-b",
    ]
    assert runs[0]["verified"] is False  # no manifest
    assert runs[1]["snapshot"]["revision"] == 7 and runs[1]["last_task"] == "Upgrade"
    assert runs[1]["snapshot_folder"] == "snapshots/before-change-lab"
    assert find_rollout_runs(str(tmp_path), "lab", exclude=str(runs[1]["path"]))[-1][
        "bundle"
    ].endswith("-a")


def test_step_earlier_resumes_from_an_interrupted_run(fake_module, tmp_path):
    bundle(
        tmp_path,
        "20261201T110000Z-rollout-b",
        status="interrupted",
        release={"revision": 7, "chart": "kai-scheduler-v0.16.13", "app_version": "v0.16.13"},
    )
    out = step(
        fake_module,
        record={"cluster": "lab"},
        earlier={"version": "v0.16.14", "current": {"version": "v0.16.14", "revision": 8}},
        evidence_root=str(tmp_path),
    )
    change = out["record"]["change"]
    assert change["resume"]["before"]["revision"] == 7
    assert change["resume"]["snapshot"] == "20261201T110000Z-rollout-b/snapshots/before-change-lab"
    assert [r["bundle"] for r in change["interrupted_runs"]] == ["20261201T110000Z-rollout-b"]


def test_newest_rehearsal_is_the_newest_rollback_bundle(tmp_path):
    for name, took in (("20261201T100000Z-rollback-a", 9.0), ("20261201T110000Z-rollback-b", 4.0)):
        report = {
            "kind": "rollout",
            "generated_at": "t",
            "clusters": {
                "lab": {
                    "decision": "rolled_back",
                    "change": {"rollback": {"time_to_restore_s": took, "verified": True}},
                }
            },
        }
        bundle(tmp_path, name, report=report)
    found = CR.newest_rehearsal(str(tmp_path), "lab")
    assert found["bundle"] == "20261201T110000Z-rollback-b" and found["time_to_restore_s"] == 4.0
    assert CR.newest_rehearsal(str(tmp_path), "other") is None


def test_snapshot_folder_resolves_run_relative_then_store_relative(tmp_path):
    run = tmp_path / "run"
    write(run / "snapshots" / "s" / "index.json", {})
    write(tmp_path / "other" / "snapshots" / "s" / "index.json", {})
    assert CR.snapshot_folder("snapshots/s", str(run), str(tmp_path)) == str(
        run / "snapshots" / "s"
    )
    assert CR.snapshot_folder("other/snapshots/s", str(run), str(tmp_path)) == str(
        tmp_path / "other" / "snapshots" / "s"
    )
    assert CR.snapshot_folder("/abs", str(run), None) == "/abs"
    assert CR.snapshot_folder("", str(run), None) is None


def test_snapshot_objects_reads_the_kinds_asked(tmp_path):
    folder = tmp_path / "b" / "snapshots" / "before-change-lab"
    write(
        folder / "index.json",
        {
            "selections": [
                {
                    "selection": {"kind": "Config"},
                    "folder": "snapshots/before-change-lab/01-config",
                },
                {"selection": {"kind": "Pod"}, "folder": "snapshots/before-change-lab/04-pod"},
            ]
        },
    )
    write(
        folder / "01-config" / "_cluster" / "kai-config.json",
        {"kind": "Config", "metadata": {"name": "kai-config"}},
    )
    write(folder / "04-pod" / "ns" / "p.json", {"kind": "Pod", "metadata": {"name": "p"}})
    assert [o["metadata"]["name"] for o in snapshot_objects(str(folder), ["Config"])] == [
        "kai-config"
    ]


class RestoreClient:
    def __init__(self, now):
        self.now = now
        self.patched, self.created = [], []

    def list(self, api_version, kind):
        return [o for o in self.now if o["kind"] == kind]

    def patch(self, api_version, kind, name, namespace, patch, resource_version):
        self.patched.append((kind, name, patch, resource_version))

    def create(self, obj):
        self.created.append(obj)


def test_restore_puts_back_the_recorded_spec_and_reports_the_rest(fake_module, tmp_path):
    folder = tmp_path / "b" / "snapshots" / "before-change-lab"
    write(
        folder / "index.json",
        {
            "selections": [
                {"selection": {"kind": "Config"}, "folder": "snapshots/before-change-lab/01-config"}
            ]
        },
    )
    recorded = {
        "apiVersion": "kai.scheduler/v1",
        "kind": "Config",
        "metadata": {"name": "kai-config", "resourceVersion": "1", "uid": "u"},
        "spec": {"a": 1},
    }
    write(folder / "01-config" / "_cluster" / "kai-config.json", recorded)
    current = dict(
        recorded, metadata=dict(recorded["metadata"], resourceVersion="5"), spec={"a": 2, "b": 3}
    )
    client = RestoreClient([current])
    params = {
        "operation": "restore",
        "snapshot_dir": str(folder),
        "before_rollback": {"Config//kai-config": "5"},
        "after_upgrade": {"Config//kai-config": "5"},
        "evidence_dir": None,
        "evidence_root": None,
        "kubeconfig": None,
        "context": None,
        "request_timeout": 5,
    }
    with pytest.raises(ExitJson) as done:
        CR.run_rollout_restore(fake_module(params), client_factory=lambda *a: client)
    result = done.value.result
    assert result["changed"] and result["restore"]["summary"]["restored"] == 1
    assert client.patched == [("Config", "kai-config", {"spec": {"a": 1, "b": None}}, "5")]


def test_time_to_restore_is_counted_from_the_failed_gates_decision(fake_module):
    """Issue 19: the restore benchmark's figure runs from the decision to a passing verification."""
    rec = {
        "cluster": "lab",
        "gates": [{"stage": "verify", "gate": "bind_latency_p50", "passed": False}],
        "steps": [],
        "change": {"upgrade": {"status": "done"}, "before": {"version": "v1", "revision": 3}},
    }
    base = {name: None for name in CR.ADDITIONS}
    base.update({"record": rec, "cluster": "lab", "evidence_root": None, "evidence_dir": None})
    clock = iter([1000.0, 1042.5])
    with pytest.raises(ExitJson) as done:
        CR.run_rollout_step(fake_module(dict(base, decision=True)), wall=lambda: next(clock))
    decided = done.value.result["record"]
    assert decided["change"]["action"] == "rollback" and decided["change"]["decided_at"] == 1000.0
    with pytest.raises(ExitJson) as done:
        CR.run_rollout_step(
            fake_module(
                dict(
                    base,
                    record=decided,
                    rollback={"time_to_restore_s": 20.0, "time_to_verified_s": 40.0},
                )  # fmt: skip
            ),
            wall=lambda: next(clock),
        )
    assert done.value.result["record"]["change"]["rollback"]["decision_to_verified_s"] == 42.5
