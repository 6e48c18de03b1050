"""rollout/record.py: the cluster's rollout record is the fold of its journal entries.

The fold of what the modules journal equals the record the pipeline's rules build step by step
(what the role used to keep in a fact), through the journal's JSON and redaction; a record is
read back the same from a journal that a killed run left; clusters keep apart; an unknown entry
type is refused."""

import pytest
from conftest import PATCHED, PRE, THRESHOLDS

from ansible_collections.kaiops.runbooks.plugins.module_utils.errors import KaiopsError
from ansible_collections.kaiops.runbooks.plugins.module_utils.rollout import change as C
from ansible_collections.kaiops.runbooks.plugins.module_utils.rollout import gates as G
from ansible_collections.kaiops.runbooks.plugins.module_utils.rollout import pipeline
from ansible_collections.kaiops.runbooks.plugins.module_utils.rollout import record as R
from plugins.module_utils.rollout.test_change import figures
from plugins.module_utils.rollout.test_gates import inventory

REQUEST = {
    "change_owner": "sre@example.com",
    "kai_version": PATCHED,
    "rollback_target": PRE,
    "thresholds": THRESHOLDS,
    "regression_waiver": {"reason": "unit", "approved_by": "pytest"},
}
IDENTITY = {"version": PATCHED, "all_rolled_out": True, "components": []}
UPGRADE = {
    "stage": "upgrade",
    "changed": True,
    "revision_before": 2,
    "revision": 3,
    "chart": "kai-scheduler-" + PATCHED,
    "helm_status": "deployed",
    "identity": IDENTITY,
    "expected_version": PATCHED,
    "rolled_out_s": 12.5,
    "timeout_s": 300,
    "started_at": 1000.0,
    "duration_s": 12.5,
    "attempts": 1,
    "objects": {"Config/kai-config": "41"},
}


def steps():
    """(entry type, data, the pipeline's rule for it) for a change that fails verification and
    rolls back: every entry type the change window journals."""
    started = pipeline.new_record(
        "lab", REQUEST, [G.gate("request", "kai_version", PATCHED, "-", True)]
    )
    before = {
        "version": PRE,
        "revision": 2,
        "chart": "c",
        "snapshot": "snapshots/before-change-lab",
    }
    bad = dict(figures(completed=1), version=PATCHED)
    governance = ({"bindings": []}, G.gate("preflight", "governance", "ok", "-", True), "g.json")
    return [
        ("request", {"record": started}, lambda r: started),
        (
            "policy",
            {"on_failed_gate": None, "waves": [1], "rate": 2.5, "failure_budget": 1},
            lambda r: dict(
                pipeline.add_policy(r, None, [1]),
                change={"rate": 2.5, "failure_budget": 1, **_chg(r)},
            ),
        ),
        (
            "wave",
            {"wave": 2, "position": 1, "waves": 3, "budget": 1},
            lambda r: pipeline.add_wave(r, 2, 1, 3, 1),
        ),
        ("earlier", {"earlier": {"interrupted": []}}, lambda r: pipeline.add_earlier(r, {})),
        (
            "inventory",
            {
                "inventory": inventory(),
                "namespace": "kai-scheduler",
                "reservation_namespace": "kai-resource-reservation",
                "helm_release": "kai-scheduler",
            },
            lambda r: pipeline.add_inventory(
                r, inventory(), "kai-scheduler", "kai-resource-reservation", "kai-scheduler"
            ),
        ),
        (
            "governance",
            {"summary": governance[0], "gate": governance[1], "evidence": governance[2]},
            lambda r: pipeline.add_governance(r, *governance),
        ),
        (
            "snapshot",
            {"objects": {"count": 9, "folder": "snapshots/x"}, "helm": {"revision": 2}},
            lambda r: pipeline.add_snapshot(
                r, {"count": 9, "folder": "snapshots/x"}, {"revision": 2}
            ),
        ),
        ("before", before, lambda r: pipeline.add_before(r, before)),
        (
            "figures",
            {"phase": "baseline", "figures": figures(), "thresholds": THRESHOLDS},
            lambda r: pipeline.add_figures(r, "baseline", figures(), THRESHOLDS),
        ),
        ("upgrade", UPGRADE, lambda r: pipeline.add_upgrade(r, "upgrade", UPGRADE)),
        (
            "figures",
            {"phase": "verify", "figures": bad, "thresholds": THRESHOLDS},
            lambda r: pipeline.add_figures(r, "verify", bad, THRESHOLDS),
        ),
        (
            "decision",
            {"action": "rollback", "decided_at": 1100.5},
            lambda r: _with_change(pipeline.add_decision(r, C.next_action(r)), decided_at=1100.5),
        ),
        (
            "rollback",
            {"restore": None, "timing": {"time_to_restore_s": 30.0}, "error": "helm: boom"},
            lambda r: pipeline.add_rollback(r, None, {"time_to_restore_s": 30.0}, "helm: boom"),
        ),
        (
            "finish",
            {"started_wall": 900.0, "finished_wall": 1200.0},
            lambda r: _with_change(
                pipeline.finish(r), started_wall=900.0, finished_wall=1200.0, duration_s=300.0
            ),
        ),
    ]


def _chg(record):
    return dict(record.get("change") or {}, **pipeline.add_policy(record, None, [1])["change"])


def _with_change(record, **values):
    record["change"].update(values)
    return record


def test_the_record_is_the_fold_of_the_journal(tmp_path):
    journal = R.RolloutRecord(str(tmp_path), "lab")
    expected = {}
    for kind, data, rule in steps():
        expected = rule(expected)
        assert journal.add(kind, data) == expected, kind
    assert journal.record()["decision"] == "rollback_failed"
    assert R.RolloutRecord(str(tmp_path), "lab").record() == expected


def test_an_interrupted_runs_journal_gives_the_record_it_had(tmp_path):
    journal = R.RolloutRecord(str(tmp_path), "lab")
    for kind, data, _rule in steps()[:8]:
        journal.add(kind, data)
    recorded = journal.record()
    with open(journal.journal.path, "a") as handle:
        handle.write('{"seq": 9, "subject": "lab", "type": "upgr')  # the run was killed here
    again = R.RolloutRecord(str(tmp_path), "lab").record()
    assert again == recorded and again["change"]["before"]["revision"] == 2


def test_clusters_keep_apart_and_the_report_reads_each(tmp_path):
    R.RolloutRecord(str(tmp_path), "lab-a").add(
        "refusal", {"problems": [{"field": "kaiops_x", "message": "unknown"}], "request": {}}
    )
    b = R.RolloutRecord(str(tmp_path), "lab-b")
    b.add("failure", {"stage": "request", "task": "Judge", "msg": "boom"})
    found = R.records(str(tmp_path), ["lab-a", "lab-b", "lab-c"])
    assert found["lab-a"]["gates"][0]["gate"] == "request:kaiops_x"
    assert found["lab-b"]["cluster"] == "lab-b" and found["lab-b"]["steps"][0]["status"] == "failed"
    assert found["lab-c"] == {}
    assert list(b.others()) == ["lab-a"]


def test_the_rollback_operation_starts_from_the_bundle_and_records_what_runs(tmp_path):
    journal = R.RolloutRecord(str(tmp_path), "lab")
    start = pipeline.new_rollback_record("lab", "", None)
    journal.add("bundle", {"record": start})
    out = journal.add(
        "running",
        {"current_version": PATCHED, "implementation_label": None, "inventory_status": "ok"},
    )
    assert out == dict(
        start, current_version=PATCHED, implementation_label=None, inventory_status="ok"
    )


def test_a_baseline_note_and_a_change_error_are_recorded(tmp_path):
    journal = R.RolloutRecord(str(tmp_path), "lab")
    journal.add("request", {"record": pipeline.new_record("lab", REQUEST, [])})
    out = journal.add("baseline_note", {"note": "the cluster already ran " + PATCHED})
    assert out["change"] == {"baseline_note": "the cluster already ran " + PATCHED}
    out = journal.add("change_error", {"step": "upgrade", "task": "Upgrade", "msg": "timeout"})
    assert out["steps"][-1] == {"step": "upgrade", "status": "failed", "reason": "Upgrade: timeout"}
    assert out["decision"] == C.decide(out)


def test_an_unknown_entry_type_is_refused(tmp_path):
    journal = R.RolloutRecord(str(tmp_path), "lab")
    with pytest.raises(KaiopsError, match="unknown entry type 'keep'"):
        journal.add("keep", {})
    journal.journal.append("lab", "keep", {})
    with pytest.raises(KaiopsError, match="entry 1 has unknown type 'keep'"):
        journal.record()


def test_a_record_needs_its_cluster(tmp_path):
    with pytest.raises(KaiopsError, match="no cluster given"):
        R.RolloutRecord(str(tmp_path), None)
