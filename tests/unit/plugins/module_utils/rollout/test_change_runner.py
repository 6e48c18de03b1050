"""rollout/change_runner.py and rollout/client.py over files: the change window's modules (each
reads the record from the run's journal and appends one entry), the evidence store's earlier runs
and rehearsals, the snapshot folder, restore against a fake client."""

import copy
import json
import tempfile

import pytest
from conftest import PATCHED, PRE, THRESHOLDS, ExitJson
from fakeapi import FakeClient

from ansible_collections.kaiops.runbooks.plugins.module_utils.evidence.manifest import (
    build_manifest,
)
from ansible_collections.kaiops.runbooks.plugins.module_utils.rollout import change as C
from ansible_collections.kaiops.runbooks.plugins.module_utils.rollout import change_runner as CR
from ansible_collections.kaiops.runbooks.plugins.module_utils.rollout.client import (
    find_rollout_runs,
    snapshot_objects,
)
from ansible_collections.kaiops.runbooks.plugins.module_utils.rollout.gates import gate
from ansible_collections.kaiops.runbooks.plugins.module_utils.rollout.record import RolloutRecord
from plugins.module_utils.recovery.test_service import CLUSTER, second_reservation_pod

# What each call of the old kai_rollout_step became: the module that does that one thing.
RUNNERS = {
    "policy": CR.run_rollout_policy,
    "earlier": CR.run_rollout_earlier,
    "start": CR.run_rollout_start,
    "decision": CR.run_rollout_decision,
    "rollback": CR.run_rollout_rollback,
    "rehearsal": CR.run_rollout_rehearsal,
    "finish": CR.run_rollout_finish,
}


def step(fake_module, record=None, cluster="lab", check_mode=False, wall=None, **given):
    """Run one module on a record: the record is journaled first (as the modules before it would
    have), the module reads it from the journal and appends to it; returns the module's result
    with the record read back (``record``)."""
    ((what, value),) = [(k, v) for k, v in given.items() if k in RUNNERS]
    bundle = given.get("evidence_dir") or tempfile.mkdtemp()
    journal = RolloutRecord(bundle, (record or {}).get("cluster") or cluster)
    if record:
        journal.add("request", {"record": record})
    params = {
        "cluster": journal.cluster,
        "evidence_dir": bundle,
        "evidence_root": given.get("evidence_root"),
    }
    params.update(value or {})
    runner = RUNNERS[what]
    module = fake_module(params, check_mode=check_mode)
    with pytest.raises(ExitJson) as done:
        runner(module, wall=wall) if wall else runner(module)
    result = dict(done.value.result)
    assert "record" not in result  # a module returns a few values, never the record
    result["record"] = journal.record()
    return result


def write(path, data):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(data if isinstance(data, str) else json.dumps(data))


def test_the_change_window_modules_return_what_the_role_branches_on(fake_module):
    rec = {
        "cluster": "lab",
        "request_well_formed": True,
        "gates": [],
        "steps": [{"step": "request", "status": "done", "reason": ""}],
    }
    out = step(fake_module, record=rec, decision={})
    assert sorted(out) == [
        "action",
        "before",
        "changed",
        "decision",
        "failed_gates",
        "passed",
        "record",
    ]
    assert (out["action"], out["passed"], out["failed_gates"]) == ("none", True, [])
    assert out["decision"] == out["record"]["decision"] == C.decide(out["record"])


def test_step_policy_then_skip_decides_proceed(fake_module):
    rec = {
        "cluster": "lab",
        "request_well_formed": True,
        "gates": [],
        "steps": [{"step": "request", "status": "done", "reason": ""}],
    }
    out = step(fake_module, record=rec, policy={"on_failed_gate": "pause", "waves": [1], "rate": 3})
    assert out["record"]["change"]["policy"]["policy"] == "pause"
    assert out["record"]["change"]["rate"] == 3 and out["well_formed"] is True
    out = step(fake_module, record=out["record"], start={}, check_mode=True)
    assert out["decision"] == "proceed" and out["action"] == "skip"
    steps = {s["step"]: s for s in out["record"]["steps"]}
    assert [
        steps[s]["status"] for s in ("baseline", "upgrade", "verify", "decision", "rollback")
    ] == ["not_run"] * 5
    assert (
        steps["upgrade"]["reason"]
        == "check mode (--check): nothing is upgraded, probed or rolled back"
    )


@pytest.mark.parametrize(
    ("gates", "peers", "check_mode", "action", "reason"),
    [
        (
            [gate("cluster", "kai_release", "none", "-", False)],
            {"lab-b": "rolled_back"},
            True,
            "skip",
            "preflight refused (failed gates: kai_release)",
        ),
        (
            [],
            {"lab-b": "rolled_back", "lab-c": "paused", "lab-d": "approved"},
            True,
            "skip",
            "not started: the canary (wave 1) failed on lab-b",
        ),
        (
            [],
            {"lab-b": "approved"},
            True,
            "skip",
            "check mode (--check): nothing is upgraded, probed or rolled back",
        ),
        ([], {"lab-b": "approved"}, False, "change", None),
    ],
    ids=["preflight", "earlier-wave", "check", "change"],
)
def test_the_change_starts_unless_preflight_an_earlier_wave_or_check_mode_stops_it(
    fake_module, tmp_path, gates, peers, check_mode, action, reason
):
    """The rules the role's when: lines held: preflight first, then an earlier wave (one cluster
    each, the default waves; the peers come before lab in the play) whose change ended rolled
    back, failed or paused beyond its budget (read from the run's journal), then --check."""
    for name, decision in peers.items():
        RolloutRecord(str(tmp_path), name).add(
            "request", {"record": {"cluster": name, "decision": decision}}
        )
    rec = {"cluster": "lab", "request": {"kai_version": PATCHED}, "request_well_formed": True,
           "gates": gates, "steps": []}  # fmt: skip
    out = step(
        fake_module,
        record=rec,
        start={"peers": [*peers, "lab"]},
        check_mode=check_mode,
        evidence_dir=str(tmp_path),
    )
    assert out["action"] == action and out["kai_version"] == PATCHED
    skipped = [s["reason"] for s in out["record"]["steps"] if s["status"] == "not_run"]
    assert skipped == ([reason] * 5 if reason else [])
    # a cluster an earlier wave stopped is not started, never passed; its wave is recorded
    stopped = reason and reason.startswith("not started")
    assert (out["decision"] == "not_started") == bool(stopped)
    assert out["record"]["change"]["wave"] == len(peers) + 1


def test_the_rollback_starts_unless_check_mode_or_a_refused_bundle_stops_it(fake_module):
    rec = CR.pipeline.new_rollback_record("lab", "", None)
    out = step(fake_module, record=rec, start={})
    assert out["action"] == "skip"
    assert out["record"]["steps"][-1]["reason"].startswith("refused: no bundle given")
    out = step(fake_module, record=dict(rec, request_well_formed=True), start={}, check_mode=True)
    assert out["record"]["steps"][-1]["reason"] == "check mode (--check): nothing is rolled back"


def test_a_repeated_run_stands_on_the_earlier_approved_one(fake_module):
    prior = {
        "bundle": "20261201T100000Z-rollout-a",
        "revision": 41,
        "version": PATCHED,
        "gates": [],
    }
    rec = {"cluster": "lab", "request_well_formed": True, "gates": [], "steps": [],
           "change": {"prior": prior}}  # fmt: skip
    out = step(fake_module, record=rec, start={})
    assert out["action"] == "prior"
    assert out["record"]["change"]["after"] == {"version": PATCHED, "revision": 41}


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
        record={"cluster": "lab", "request": {"kai_version": "v0.16.14"}},
        earlier={"current": {"version": "v0.16.14", "revision": 8}},
        evidence_root=str(tmp_path),
    )
    change = out["record"]["change"]
    assert change["resume"]["before"]["revision"] == 7
    assert change["resume"]["snapshot"] == "20261201T110000Z-rollout-b/snapshots/before-change-lab"
    assert [r["bundle"] for r in change["interrupted_runs"]] == ["20261201T110000Z-rollout-b"]


# ---------------------------------------------------------------- rollback rehearsal, approval
# Fixture bundles: a rollback.yml run (kind rollout, change.operation rollback) or a rollout that
# rolled back after a failed gate, with the fields the rule reads: the version the rollback
# started on (rollback.yml: the cluster's current_version; a rollout: change.after), the version
# it returned to (change.rollback.version) and the one recorded before that change
# (change.before.version), the rollback's status and verification, the decision.


def rehearsal_report(
    cluster="lab",
    start=PATCHED,
    to=PRE,
    recorded=PRE,
    decision="rolled_back",
    status="done",
    verified=True,
    took=3.9,
    by="rollback.yml",
    group=None,
):
    change = {
        "before": {"version": recorded, "revision": 40},
        "after": {"version": start, "revision": 41},
        "rollback": {
            "status": status,
            "version": to,
            "verified": verified,
            "time_to_restore_s": took,
            "time_to_verified_s": took + 12,
        },
    }
    entry = {"decision": decision, "current_version": PRE, "change": change}
    if by == "rollback.yml":
        change["operation"] = "rollback"
        change["after"] = {"version": PATCHED, "revision": 41}
        entry["current_version"] = start
    if group:
        change["rehearsal_pair"] = {"group": group}
    return {
        "kind": "rollout",
        "kai_version": PATCHED,
        "generated_at": "t",
        "clusters": {cluster: entry},
    }


def sealed(root, name, report, manifest=True):
    """A complete rollout bundle whose manifest verifies (unless manifest=False)."""
    folder = bundle(root, name, report=report)
    if manifest:
        write(folder / "manifest.sha256", build_manifest(str(folder)))
    return folder


def verified_change(cluster="lab", waiver=None, **change):
    """The record of a change whose target runs and whose every verification gate passed."""
    base = {
        "before": {"version": PRE, "revision": 40, "snapshot": "snapshots/before-change-lab"},
        "after": {"version": PATCHED, "revision": 41},
        "upgrade": {"status": "done", "changed": True},
        "policy": {"policy": "rollback", "source": "default"},
    }
    base.update(change)
    return {
        "cluster": cluster,
        "request": {"kai_version": PATCHED, "rehearsal_waiver": waiver},
        "gates": [gate("verify", "bind_latency_p50", 1, "<= 2", True)],
        "steps": [{"step": "verify", "status": "done", "reason": "gates passed"}],
        "evidence": [],
        "change": base,
    }


def finish_with_rehearsal(fake_module, root, rec, group=None, peers=()):
    out = step(
        fake_module,
        record=rec,
        cluster=rec["cluster"],
        rehearsal={"group": group, "peers": list(peers)},
        evidence_root=str(root),
    )
    return step(fake_module, record=out["record"], cluster=rec["cluster"], finish={})


def approval_gate(record):
    return [g for g in record["gates"] if g["gate"] == "rollback_rehearsal"]


def test_a_passed_rehearsal_of_the_version_pair_approves_and_is_cited(fake_module, tmp_path):
    sealed(tmp_path, "20261201T100000Z-rollback-a", rehearsal_report())
    done = finish_with_rehearsal(fake_module, tmp_path, verified_change())
    record = done["record"]
    assert done["decision"] == "approved"
    cited = record["change"]["rehearsal"]
    assert cited["bundle"] == "20261201T100000Z-rollback-a"
    assert (cited["from"], cited["to"], cited["passed"]) == (PATCHED, PRE, True)
    assert cited["time_to_restore_s"] == 3.9 and cited["operation"] == "rollback.yml"
    (gate_record,) = approval_gate(record)
    assert gate_record["passed"] and gate_record["stage"] == "approval"
    assert "20261201T100000Z-rollback-a: lab %s -> %s" % (PATCHED, PRE) in gate_record["figure"]
    assert record["steps"][-1]["step"] == "approval"
    assert "../20261201T100000Z-rollback-a/report.md" in record["evidence"]


def test_no_rehearsal_on_record_is_not_approved(fake_module, tmp_path):
    done = finish_with_rehearsal(fake_module, tmp_path, verified_change())
    assert done["decision"] == "not_approved"
    (gate_record,) = approval_gate(done["record"])
    assert not gate_record["passed"]
    assert gate_record["message"].startswith("not approved: rollback not rehearsed")
    assert gate_record["figure"] == "none on record for lab %s -> %s" % (PATCHED, PRE)
    assert "playbooks/rollback.yml" in gate_record["fix"]
    assert done["failed_gates"] == ["rollback_rehearsal"]
    assert done["record"]["change"]["rehearsal"] is None


@pytest.mark.parametrize(
    "report",
    [
        rehearsal_report(to="v0.16.12", recorded="v0.16.12"),  # back to another version
        rehearsal_report(start="v0.16.15"),  # from another target
        rehearsal_report(start=PRE, by="rollout"),  # the upgrade never ran the target
        rehearsal_report(cluster="other"),  # another cluster, no group
        dict(rehearsal_report(), kind="reproduce"),
    ],
    ids=["other-to", "other-from", "upgrade-not-run", "other-cluster", "not-a-rollout"],
)
def test_a_rehearsal_of_another_pair_or_cluster_does_not_approve(fake_module, tmp_path, report):
    sealed(tmp_path, "20261201T100000Z-rollback-a", report)
    done = finish_with_rehearsal(fake_module, tmp_path, verified_change())
    assert done["decision"] == "not_approved"
    assert done["record"]["change"]["rehearsal"] is None


@pytest.mark.parametrize(
    ("report", "manifest", "problem"),
    [
        (rehearsal_report(verified=False, decision="rollback_failed"), True, "verification"),
        (rehearsal_report(status="failed", decision="rollback_failed"), True, "rollback failed"),
        (rehearsal_report(to="v0.16.12"), True, None),  # other pair: not even considered
        (rehearsal_report(decision="approved", by="rollout"), True, "decision approved"),
        (rehearsal_report(), False, "manifest does not verify"),
    ],
    ids=["not-verified", "rollback-failed", "other-pair", "not-rolled-back", "no-manifest"],
)
def test_a_failed_rehearsal_does_not_approve(fake_module, tmp_path, report, manifest, problem):
    sealed(tmp_path, "20261201T100000Z-rollback-a", report, manifest=manifest)
    done = finish_with_rehearsal(fake_module, tmp_path, verified_change())
    assert done["decision"] == "not_approved"
    rejected = done["record"]["change"]["rehearsals_rejected"]
    if problem:
        assert rejected[0]["bundle"] == "20261201T100000Z-rollback-a"
        assert problem in rejected[0]["problem"]
    else:
        assert rejected == []


def test_the_newest_passed_rehearsal_of_the_pair_is_cited(fake_module, tmp_path):
    sealed(tmp_path, "20261201T100000Z-rollback-a", rehearsal_report(took=9.0))
    sealed(tmp_path, "20261201T110000Z-rollout-b", rehearsal_report(took=4.0, by="rollout"))
    sealed(tmp_path, "20261201T120000Z-rollback-c", rehearsal_report(verified=False))
    sealed(tmp_path, "20261201T130000Z-rollback-d", rehearsal_report(to="v0.16.12"))
    done = finish_with_rehearsal(fake_module, tmp_path, verified_change())
    cited = done["record"]["change"]["rehearsal"]
    assert done["decision"] == "approved"
    assert cited["bundle"] == "20261201T110000Z-rollout-b" and cited["time_to_restore_s"] == 4.0
    assert cited["operation"] == "rollout rolled back after a failed gate"


def test_the_run_itself_is_no_rehearsal(fake_module, tmp_path):
    own = sealed(tmp_path, "20261201T100000Z-rollout-a", rehearsal_report(by="rollout"))
    out = step(
        fake_module,
        record=verified_change(),
        rehearsal={},
        evidence_root=str(tmp_path),
        evidence_dir=str(own),
    )
    assert out["record"]["change"]["rehearsal"] is None
    # the run ends: the callback seals its bundle, its journal included
    write(own / "manifest.sha256", build_manifest(str(own)))
    elsewhere = step(
        fake_module, record=verified_change(), rehearsal={}, evidence_root=str(tmp_path)
    )
    assert elsewhere["record"]["change"]["rehearsal"]["bundle"] == "20261201T100000Z-rollout-a"


def test_a_rehearsal_on_a_cluster_of_the_same_group_counts_and_says_so(fake_module, tmp_path):
    sealed(tmp_path, "20261201T100000Z-rollback-a", rehearsal_report(cluster="lab-b"))
    alone = finish_with_rehearsal(fake_module, tmp_path, verified_change())
    assert alone["decision"] == "not_approved"
    done = finish_with_rehearsal(
        fake_module, tmp_path, verified_change(), group="eu", peers=["lab-b", "lab"]
    )
    cited = done["record"]["change"]["rehearsal"]
    assert done["decision"] == "approved"
    assert (cited["cluster"], cited["group"]) == ("lab-b", "eu")
    assert "(group eu)" in approval_gate(done["record"])[0]["figure"]
    assert done["record"]["change"]["rehearsal_pair"]["peers"] == ["lab-b"]


def test_a_rehearsal_recorded_with_the_group_counts_without_the_inventory_naming_it(
    fake_module, tmp_path
):
    sealed(tmp_path, "20261201T100000Z-rollback-a", rehearsal_report(cluster="gone", group="eu"))
    done = finish_with_rehearsal(fake_module, tmp_path, verified_change(), group="eu")
    assert done["decision"] == "approved"
    other = finish_with_rehearsal(fake_module, tmp_path, verified_change(), group="us")
    assert other["decision"] == "not_approved"


def test_the_clusters_own_rehearsal_is_cited_before_a_newer_one_of_its_group(fake_module, tmp_path):
    sealed(tmp_path, "20261201T100000Z-rollback-a", rehearsal_report())
    sealed(tmp_path, "20261201T110000Z-rollback-b", rehearsal_report(cluster="lab-b"))
    done = finish_with_rehearsal(
        fake_module, tmp_path, verified_change(), group="eu", peers=["lab-b"]
    )
    assert done["record"]["change"]["rehearsal"]["bundle"] == "20261201T100000Z-rollback-a"
    assert "group" not in done["record"]["change"]["rehearsal"]


def test_a_rehearsal_waiver_approves_and_is_recorded(fake_module, tmp_path):
    waiver = {"reason": "drill: the interruption is under test", "approved_by": "cab"}
    done = finish_with_rehearsal(fake_module, tmp_path, verified_change(waiver=waiver))
    assert done["decision"] == "approved"
    assert done["record"]["change"]["rehearsal_waiver"] == waiver
    (gate_record,) = approval_gate(done["record"])
    assert gate_record["passed"]
    assert (
        gate_record["figure"] == "waived: drill: the interruption is under test (approved by cab)"
    )
    assert "approved without a rehearsal on record" in done["record"]["steps"][-1]["reason"]


def test_a_repeated_run_on_a_prior_approved_run_stays_approved(fake_module, tmp_path):
    rec = verified_change(prior={"bundle": "b1", "revision": 41, "version": PATCHED})
    done = finish_with_rehearsal(fake_module, tmp_path, rec)
    assert done["decision"] == "approved"
    assert approval_gate(done["record"]) == []


@pytest.mark.parametrize(
    ("change", "decision"),
    [
        (
            {"rollback": {"status": "done", "verified": True}, "action": "rollback"},
            "rolled_back",
        ),
        ({"upgrade": None}, "proceed"),
    ],
    ids=["rolled-back", "check-mode"],
)
def test_other_decisions_get_no_approval_gate(fake_module, tmp_path, change, decision):
    rec = verified_change(**change)
    if decision == "rolled_back":
        rec["gates"] = [gate("verify", "bind_latency_p50", 9, "<= 2", False, "too slow")]
    else:
        rec["gates"] = []
    done = finish_with_rehearsal(fake_module, tmp_path, rec)
    assert done["decision"] == decision
    assert approval_gate(done["record"]) == []
    assert done["record"]["change"]["rehearsal_pair"]["to"] == PRE


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
    clock = iter([1000.0, 1042.5])
    decided = step(fake_module, record=rec, decision={}, wall=lambda: next(clock))
    assert decided["action"] == "rollback" and decided["before"]["revision"] == 3
    assert decided["record"]["change"]["decided_at"] == 1000.0
    out = step(
        fake_module,
        record=decided["record"],
        rollback={"time_to_restore_s": 20.0, "time_to_verified_s": 40.0, "restore": None},
        wall=lambda: next(clock),
    )
    assert out["record"]["change"]["rollback"]["decision_to_verified_s"] == 42.5


# ---------------------------------------------------------------- rules that left the role's YAML


def test_the_baseline_is_not_measured_on_a_cluster_that_runs_the_target(fake_module, tmp_path):
    journal = RolloutRecord(str(tmp_path), "lab")
    journal.add(
        "request",
        {"record": {"cluster": "lab", "request": {"kai_version": PATCHED},
                    "current_version": PATCHED, "change": {"resume": {"bundle": "b-1"}}}},
    )  # fmt: skip
    params = {"cluster": "lab", "evidence_dir": str(tmp_path), "phase": "baseline"}

    def never(*_args):
        raise AssertionError("no probe runs")

    with pytest.raises(ExitJson) as done:
        CR.run_rollout_verify(fake_module(params), client_factory=never)
    assert done.value.result["skipped"] is True and "record" not in done.value.result
    note = "the cluster already ran %s when this run began, as recorded by run b-1" % PATCHED
    assert journal.record()["change"]["baseline_note"] == note


def test_verify_is_not_run_under_check_and_adds_nothing(fake_module, tmp_path):
    journal = RolloutRecord(str(tmp_path), "lab")
    journal.add("request", {"record": {"cluster": "lab", "request": {"kai_version": PATCHED}}})
    params = {"cluster": "lab", "evidence_dir": str(tmp_path), "phase": "verify"}
    with pytest.raises(ExitJson) as done:
        CR.run_rollout_verify(fake_module(params, check_mode=True), client_factory=None)
    assert done.value.result["skipped"] is True
    assert len(journal.journal.entries()) == 1


@pytest.mark.parametrize(
    ("phase", "version"), [("baseline", PRE), ("verify", PATCHED), ("rollback", PRE)]
)
def test_each_verification_is_held_to_the_records_version_thresholds_and_window(phase, version):
    thresholds = dict(THRESHOLDS, observation_window_s=120)
    record = {
        "request": {"kai_version": PATCHED, "thresholds": thresholds},
        "change": {
            "before": {"version": PRE},
            "resume": {"baseline": {"stale_objects": {"before_change": ["u-1"]}}},
        },
    }
    assert CR.verify_inputs(record, phase) == {
        "version": version,
        "thresholds": thresholds,
        "window_s": 120,
        "stale_baseline": ["u-1"],
    }


def test_governance_reads_no_rbac_when_the_inventory_read_nothing(fake_module, tmp_path):
    journal = RolloutRecord(str(tmp_path), "lab")
    journal.add("request", {"record": {"cluster": "lab", "inventory_status": "unreachable"}})
    params = {"cluster": "lab", "evidence_dir": str(tmp_path), "namespaces": [], "rule": {}}

    def never(*_args):
        raise AssertionError("no RBAC read")

    with pytest.raises(ExitJson) as done:
        CR.run_rollout_governance(fake_module(params), client_factory=never)
    assert done.value.result["skipped"] is True and len(journal.journal.entries()) == 1


@pytest.mark.parametrize(("upgraded", "step_failed"), [(False, "upgrade"), (True, "verify")])
def test_a_failed_change_task_fails_the_step_it_was_in(
    fake_module, tmp_path, upgraded, step_failed
):
    from ansible_collections.kaiops.runbooks.plugins.module_utils.rollout.runner import (
        run_rollout_failure,
    )

    change = {"upgrade": {"status": "done"}} if upgraded else {}
    RolloutRecord(str(tmp_path), "lab").add(
        "request", {"record": {"cluster": "lab", "gates": [], "steps": [], "change": change}}
    )
    params = {"cluster": "lab", "evidence_dir": str(tmp_path), "stage": "change",
              "task": "Verify after the change", "msg": "boom", "restore": None}  # fmt: skip
    with pytest.raises(ExitJson) as done:
        run_rollout_failure(fake_module(params))
    record = RolloutRecord(str(tmp_path), "lab").record()
    assert record["steps"][-1] == {
        "step": step_failed,
        "status": "failed",
        "reason": "Verify after the change: boom",
    }
    assert done.value.result["decision"] == record["decision"]


def test_the_upgrade_is_recorded_with_what_the_record_knows(fake_module, tmp_path):
    before = {"version": PRE, "revision": 2, "snapshot": "snapshots/before-change-lab"}
    RolloutRecord(str(tmp_path), "lab").add(
        "request",
        {"record": {"cluster": "lab", "request": {"kai_version": PATCHED}, "gates": [],
                    "steps": [], "change": {"before": before}}},
    )  # fmt: skip
    identity = {"version": PATCHED, "all_rolled_out": True, "components": []}
    result = {"changed": True, "revision": 3, "helm_status": "deployed", "identity": identity,
              "rolled_out_s": 5.0, "timeout_s": 300,
              "values_repointed": ["global.tag"]}  # fmt: skip
    params = {"cluster": "lab", "evidence_dir": str(tmp_path), "stage": "upgrade", "result": result}
    with pytest.raises(ExitJson) as done:
        CR.run_rollout_upgrade(fake_module(params))
    record = RolloutRecord(str(tmp_path), "lab").record()
    assert record["change"]["upgrade"]["revision_before"] == 2
    assert record["change"]["upgrade"]["values_repointed"] == ["global.tag"]
    assert record["change"]["upgrade"]["status"] == "done" and done.value.result["passed"] is True
    assert record["steps"][-1]["reason"].startswith("upgraded to %s (revision 2 -> 3)" % PATCHED)
    params = dict(
        params, stage="rollback", result=dict(result, identity=dict(identity, version=PRE))
    )
    with pytest.raises(ExitJson):
        CR.run_rollout_upgrade(fake_module(params))
    rollback = RolloutRecord(str(tmp_path), "lab").record()["change"]["rollback"]
    assert rollback["revision_target"] == 2 and rollback["version"] == PRE


def test_admit_reads_no_cluster_for_a_malformed_request(fake_module, tmp_path):
    from ansible_collections.kaiops.runbooks.plugins.module_utils.rollout import runner as RR

    for name, well_formed in (("good", True), ("bad", False)):
        RolloutRecord(str(tmp_path), name).add(
            "request", {"record": {"cluster": name, "request_well_formed": well_formed,
                                   "gates": [], "steps": []}},
        )  # fmt: skip
        with pytest.raises(ExitJson) as done:
            RR.run_rollout_admit(fake_module({"cluster": name, "evidence_dir": str(tmp_path)}))
        assert done.value.result["well_formed"] is well_formed
        steps = RolloutRecord(str(tmp_path), name).record()["steps"]
        assert [s["status"] for s in steps] == ([] if well_formed else ["not_run", "not_run"])


def test_a_new_second_reservation_pod_of_a_group_counts_in_stale_objects():
    # KAI-Scheduler #1673 after a change: the recovery scan's duplicate reservation pod is one
    # of the stale objects the change left, whatever its age.
    second = second_reservation_pod(created="2099-01-01T00:00:00Z", uid="dup-1")
    params = {
        "cluster": "lab",
        "phase": "verify",
        "run_id": "r1",
        "kai_namespace": "kai-scheduler",
        "reservation_namespace": "kai-resource-reservation",
        "stale_min_age_s": 300,
        "stale_baseline": [],
    }
    run = CR.ProbeRun(FakeClient(objects=copy.deepcopy(CLUSTER)), params)
    before, _raw = run.scan()
    run = CR.ProbeRun(FakeClient(objects=copy.deepcopy(CLUSTER + [second])), params)
    after, _raw = run.scan()
    stale = run._stale_objects(before, after, [], [])
    assert stale["new_since_change"] == [
        "duplicate_reservation_pod:kai-resource-reservation/gpu-reservation-node-2-x7k2q"
    ]
    assert stale["count"] == 1
    # the same duplicates seen only during the window (they went with their group before the
    # scan at its end): the extra pod of each group counts
    seen = [{"group": "g1", "pods": ["r1", "r2"]}, {"group": "g2", "pods": ["r3", "r4", "r5"]}]
    stale = run._stale_objects(before, before, [], seen)
    assert stale["count"] == 3 and stale["duplicate_reservation_pods_seen"] == seen


# ---------------------------------------------------------------- hook Jobs left by an uninstall
# The real KAI on the lab (CONTRACT.md, "An image missing on a cluster"): the new release's images
# never reached the cluster; its uninstall ran the post-delete hook on the missing image and helm
# gave up with the release gone and the Jobs left.


def _job(name, hook, uid, succeeded=0):
    meta = {"name": name, "namespace": "kai-scheduler", "uid": uid, "resourceVersion": "7"}
    if hook:
        meta["annotations"] = {"helm.sh/hook": hook}
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": meta,
            "status": {"succeeded": succeeded}}  # fmt: skip


def _job_pod(name, job_uid, reason, image="ghcr.io/kai/post-delete:v0.16.14"):
    waiting = {"reason": reason, "message": "failed to pull"} if reason else None
    state = {"waiting": waiting} if waiting else {"running": {}}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "kai-scheduler",
                     "ownerReferences": [{"kind": "Job", "uid": job_uid}]},
        "status": {"containerStatuses": [{"image": image, "state": state}]},
    }  # fmt: skip


def _deployment(name, uid, labels):
    meta = {"name": name, "namespace": "kai-scheduler", "uid": uid, "resourceVersion": "3"}
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": dict(meta, labels=labels)}


class HooksClient(RestoreClient):
    def __init__(self, now):
        super().__init__(now)
        self.deleted = []

    def list(self, api_version, kind, namespace=None, label_selector=None):
        found = [o for o in self.now if o["kind"] == kind]
        if label_selector:
            key, value = label_selector.split("=")
            found = [o for o in found if (o["metadata"].get("labels") or {}).get(key) == value]
        return found

    def delete(self, api_version, kind, name, namespace, uid, resource_version):
        self.deleted.append((kind, name, namespace, uid, resource_version))


HOOK_CLUSTER = [
    _job("post-delete-cleanup", "post-delete", "j1"),
    _job_pod("post-delete-cleanup-w9qz4", "j1", "ErrImagePull"),
    _job("crd-upgrader", "pre-install,pre-upgrade", "j2"),
    _job_pod("crd-upgrader-czkwh", "j2", "ImagePullBackOff"),
    # a hook that runs, one that finished, a Job that is no hook: none of KAI's downgrade's business
    _job("config-deployer", "post-install", "j3"),
    _job_pod("config-deployer-abc", "j3", None),
    _job("old-hook", "post-upgrade", "j4", succeeded=1),
    _job_pod("old-hook-x", "j4", "ErrImagePull"),
    _job("team-batch", None, "j5"),
    _job_pod("team-batch-y", "j5", "ErrImagePull"),
    # what KAI's post-delete hook would have deleted, and a Deployment that is not the operator's
    _deployment("binder", "d1", {"app.kubernetes.io/managed-by": "kai-operator"}),
    _deployment("team-app", "d2", {}),
    {"apiVersion": "kai.scheduler/v1", "kind": "Config",
     "metadata": {"name": "kai-config", "uid": "c1", "resourceVersion": "9"}},
]  # fmt: skip


def test_the_hook_jobs_waiting_on_an_image_never_pulled_are_deleted(fake_module):
    client = HooksClient(HOOK_CLUSTER)
    params = {"operation": "hooks", "kai_namespace": "kai-scheduler", "kubeconfig": None,
              "context": None, "request_timeout": 5}  # fmt: skip
    with pytest.raises(ExitJson) as done:
        CR.run_rollout_restore(fake_module(params), client_factory=lambda *a: client)
    result = done.value.result
    assert [(h["hook"], h["what"], h["outcome"]) for h in result["hooks"]] == [
        ("post-delete", "post-delete hook Job post-delete-cleanup (its pod waited on "
         "ghcr.io/kai/post-delete:v0.16.14: ErrImagePull)", "deleted"),
        ("pre-install,pre-upgrade", "pre-install,pre-upgrade hook Job crd-upgrader (its pod "
         "waited on ghcr.io/kai/post-delete:v0.16.14: ImagePullBackOff)", "deleted"),
        # the post-delete hook's own work, done since it could not run
        ("post-delete (its work)", "Deployment binder (the post-delete hook's work, done since "
         "the hook could not run)", "deleted"),
        ("post-delete (its work)", "Config kai-config (the post-delete hook's work, done since "
         "the hook could not run)", "deleted"),
    ]  # fmt: skip
    assert result["changed"]
    assert client.deleted == [
        ("Job", "post-delete-cleanup", "kai-scheduler", "j1", "7"),
        ("Job", "crd-upgrader", "kai-scheduler", "j2", "7"),
        ("Deployment", "binder", "kai-scheduler", "d1", "3"),
        ("Config", "kai-config", None, "c1", "9"),
    ]
    # under --check: named, nothing deleted
    client = HooksClient(HOOK_CLUSTER)
    with pytest.raises(ExitJson) as done:
        CR.run_rollout_restore(
            fake_module(params, check_mode=True), client_factory=lambda *a: client
        )
    assert [h["outcome"] for h in done.value.result["hooks"]] == ["would delete"] * 4
    assert not done.value.result["changed"] and client.deleted == []
