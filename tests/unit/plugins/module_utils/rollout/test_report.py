"""module_utils/rollout/report.py: decisions, Markdown, JUnit."""

import json
import xml.etree.ElementTree as ET

from conftest import PATCHED, PRE

from ansible_collections.kaiops.runbooks.plugins.module_utils.evidence.report import run_facts
from ansible_collections.kaiops.runbooks.plugins.module_utils.rollout import (
    report as rollout_report,
)
from ansible_collections.kaiops.runbooks.plugins.module_utils.rollout.gates import gate

REQUEST = {
    "change_owner": "lab drill",
    "kai_version": PATCHED,
    "rollback_target": PRE,
    "thresholds": {"binder_restarts_max": 0},
    "regression_waiver": {},
}
PENDING = [
    {"step": "upgrade", "reason": "not built yet"},
    {"step": "verify", "reason": "not built"},
]


def passing(name):
    return gate("inputs", name, "x", "y", True)


def failing(name, message):
    return gate("cluster", name, "none", "a KAI Helm release", False, message, "install KAI")


def clusters():
    return {
        "lab": {
            "gates": [
                passing("change_owner"),
                failing("kai_release", "no KAI release on cluster lab"),
            ],
            "steps": [{"step": "inventory", "status": "done", "reason": "status not_installed"}],
            "evidence": ["inventory.md"],
        },
        "good": {
            "gates": [passing("change_owner"), passing("kai_release")],
            "steps": [{"step": "snapshot", "status": "done", "reason": "12 objects"}],
            "evidence": ["snapshots/before-change-good/index.json"],
            "current_version": PRE,
        },
    }


def build(data=None):
    return rollout_report.build(
        REQUEST, data or clusters(), "2026-11-30T00:00:00Z", "run-1", PENDING
    )


def test_build_refuses_a_cluster_with_a_failed_gate():
    report = build()
    assert report["decision"] == "refused" and report["refused_clusters"] == ["lab"]
    assert report["clusters"]["lab"]["reasons"] == [
        "no KAI release on cluster lab (fix: install KAI)"
    ]
    assert report["clusters"]["good"]["decision"] == "proceed"
    assert report["kind"] == "rollout" and report["kai_version"] == PATCHED
    assert report["summary"] == {"clusters": 2, "gates": 4, "gates_failed": 1}


def test_build_reports_pending_steps_as_not_run_with_the_reason():
    report = build()
    lab = {s["step"]: s for s in report["clusters"]["lab"]["steps"]}
    assert lab["upgrade"] == {
        "step": "upgrade",
        "status": "not_run",
        "reason": "preflight refused (failed gates: kai_release)",
    }
    good = {s["step"]: s for s in report["clusters"]["good"]["steps"]}
    assert good["upgrade"]["status"] == "not_run" and good["upgrade"]["reason"] == "not built yet"
    assert good["snapshot"]["status"] == "done"


def test_build_cluster_without_gates_is_refused():
    report = build({"c1": {"gates": [], "steps": []}})
    assert report["decision"] == "refused"
    assert report["clusters"]["c1"]["reasons"] == [
        "no preflight gate was recorded for this cluster"
    ]


def test_build_unknown_step_status_reads_failed():
    report = build({"c1": {"gates": [passing("a")], "steps": [{"step": "x", "status": "ok"}]}})
    assert report["clusters"]["c1"]["steps"][0]["status"] == "failed"


def test_render_junit_failed_gate_is_a_failure():
    root = ET.fromstring(rollout_report.render_junit(build()))
    # 4 gates, and the 2 pending steps of each cluster as skipped cases
    assert root.get("tests") == "8" and root.get("failures") == "1"
    assert root.get("skipped") == "4"
    suites = {s.get("name"): s for s in root.findall("testsuite")}
    lab = suites["rollout lab"]
    assert lab.get("failures") == "1"
    cases = {c.get("name"): c for c in lab.findall("testcase")}
    failure = cases["kai_release"].find("failure")
    assert failure is not None and failure.get("message") == "no KAI release on cluster lab"
    assert "fix: install KAI" in failure.text
    assert cases["change_owner"].find("failure") is None
    assert suites["rollout good"].get("failures") == "0"


def test_render_junit_marks_steps_not_run_as_skipped_with_their_reason():
    root = ET.fromstring(rollout_report.render_junit(build()))
    good = {s.get("name"): s for s in root.findall("testsuite")}["rollout good"]
    assert good.get("skipped") == "2"
    cases = {c.get("name"): c for c in good.findall("testcase")}
    assert cases["step:upgrade"].find("skipped").get("message") == "not built yet"
    assert cases["step:verify"].find("skipped").get("message") == "not built"
    assert cases["change_owner"].find("skipped") is None


def test_build_lists_steps_in_the_order_the_rollout_runs_them():
    data = {
        "c1": {
            "gates": [passing("a")],
            "steps": [
                {"step": "upgrade", "status": "done", "reason": ""},
                {"step": "verify", "status": "done", "reason": ""},
                {"step": "request", "status": "done", "reason": ""},
            ],
            "change": {"baseline_note": "the cluster already ran v9 when this run began"},
        }
    }
    pending = [{"step": s, "reason": "not reached"} for s in ("baseline", "rollback")]
    report = rollout_report.build(REQUEST, data, "t", "run-1", pending)
    steps = report["clusters"]["c1"]["steps"]
    assert [s["step"] for s in steps] == ["request", "baseline", "upgrade", "verify", "rollback"]
    # a baseline the run chose not to measure says why, not "not reached"
    assert steps[1]["reason"] == "not measured: the cluster already ran v9 when this run began"
    assert steps[-1]["reason"] == "not reached"


def test_a_failed_step_is_a_reason_and_a_junit_failure_even_with_every_gate_passed():
    data = {
        "c1": {
            "gates": [passing("request")],
            "steps": [
                {"step": "upgrade", "status": "failed", "reason": "UPGRADE FAILED: in progress"},
                {"step": "rollback", "status": "done", "reason": "verified"},
            ],
            "decision": "rolled_back",
        }
    }
    report = rollout_report.build(REQUEST, data, "t", "run-1", [])
    assert report["clusters"]["c1"]["reasons"] == [
        "step upgrade failed: UPGRADE FAILED: in progress"
    ]
    root = ET.fromstring(rollout_report.render_junit(report))
    assert root.get("failures") == "1"
    case = [c for c in root.iter("testcase") if c.get("name") == "step:upgrade"][0]
    assert "in progress" in case.find("failure").text


def test_the_report_names_run_operator_commit_and_inventory(tmp_path):

    (tmp_path / "run.json").write_text(
        json.dumps(
            {
                "folder": "20261201T000000Z-rollout-abcd1234",
                "user": {"name": "root", "sudo_user": "alice"},
                "git": {"commit": "0123456789abcdef0123", "dirty": True},
                "inventory": {"sources": ["/x/inventories/lab"]},
            }
        )
    )
    report = rollout_report.build(
        REQUEST, clusters(), "t", "run-1", PENDING, run=run_facts(str(tmp_path))
    )
    text = rollout_report.render_markdown(report)
    assert (
        "Run: 20261201T000000Z-rollout-abcd1234 · operator: root (sudo from alice) · "
        "collection commit: `0123456789ab` (uncommitted changes) · inventory: /x/inventories/lab"
    ) in text
    assert report["run"]["commit"] == "0123456789abcdef0123"
    # without a run record nothing is guessed
    bare = run_facts(str(tmp_path / "none"))
    assert bare["operator"] is None and bare["commit"] is None
    assert "operator: unknown" in rollout_report.render_markdown(
        rollout_report.build(REQUEST, clusters(), "t", "run-1", PENDING, run=bare)
    )


def test_render_junit_escapes_markup():
    data = {"c<1>": {"gates": [failing("g&1", 'bad "quote" <x>')]}}
    root = ET.fromstring(rollout_report.render_junit(build(data)))
    case = root.find("testsuite/testcase")
    assert case.get("name") == "g&1" and case.find("failure").get("message") == 'bad "quote" <x>'


def test_render_markdown_has_request_gate_table_steps_and_links():
    text = rollout_report.render_markdown(build())
    assert "**Decision: REFUSED**" in text
    assert "Steps not run (reason per cluster below): upgrade, verify." in text
    assert "| Change owner | lab drill |" in text
    assert "## Cluster lab: REFUSED" in text
    assert "| cluster | kai_release | none | a KAI Helm release | **FAIL** |" in text
    assert "| upgrade | not run | preflight refused (failed gates: kai_release) |" in text
    assert "- [inventory.md](inventory.md)" in text
    assert "- `binder_restarts_max`: 0" in text


def test_report_shows_the_waiver_reason_and_approver():
    request = dict(REQUEST, regression_waiver={"reason": "vendor build", "approved_by": "cab"})
    report = rollout_report.build(request, clusters(), "2026-11-30T00:00:00Z", "run-1", PENDING)
    text = rollout_report.render_markdown(report)
    assert "| Regression waiver | vendor build (approved by cab) |" in text


def test_report_of_a_cluster_without_a_record_says_it_failed_before_preflight():
    report = build({"c1": {}})
    steps = {s["step"]: s for s in report["clusters"]["c1"]["steps"]}
    assert steps["preflight"]["status"] == "failed"
    assert steps["preflight"]["reason"].startswith("no preflight recorded")


def test_report_default_pending_steps_come_from_the_pipeline():
    report = rollout_report.build(REQUEST, clusters(), "2026-11-30T00:00:00Z", "run-1")
    good = {s["step"]: s for s in report["clusters"]["good"]["steps"]}
    change_steps = ("baseline", "upgrade", "verify", "decision", "rollback")
    assert [good[s]["status"] for s in change_steps] == ["not_run"] * 5
    assert good["upgrade"]["reason"].startswith("not reached: the run stopped before this step")


def test_a_latency_gate_shows_its_figure_with_the_unit():
    from ansible_collections.kaiops.runbooks.plugins.module_utils.rollout.acceptance import (
        verify_gates,
    )

    figures = {"submit_to_bound": {"p50_s": 0.934, "p95_s": 1.09, "count": 9, "of": 9}}
    gates = {g["gate"]: g for g in verify_gates("verify", figures, {"bind_latency_p50_s": 2})}
    assert gates["bind_latency_p50"]["figure"] == 0.934 and gates["bind_latency_p50"]["unit"] == "s"
    data = {"c1": {"gates": [gates["bind_latency_p50"], gates["completion_rate"]], "steps": []}}
    text = rollout_report.render_markdown(rollout_report.build(REQUEST, data, "t", "run-1", []))
    assert "| verify | bind_latency_p50 | 0.934 s | <= 2 s (bind_latency_p50_s) | pass |" in text


# ---------------------------------------------------------------- approval: a rehearsed rollback


def verified_change(waiver=None):
    """The record of a change whose target runs and every verification gate passed, after the
    rehearsal step found none on record (rollout/change.py add_rehearsal)."""
    from ansible_collections.kaiops.runbooks.plugins.module_utils.rollout import change

    record = {
        "cluster": "lab",
        "request": dict(REQUEST, rehearsal_waiver=waiver),
        "gates": [passing("change_owner"), gate("verify", "completion_rate", 1.0, ">= 1", True)],
        "steps": [
            {"step": "verify", "status": "done", "reason": "8 gates passed"},
            {"step": "rollback", "status": "not_run", "reason": "not needed"},
        ],
        "change": {
            "before": {"version": PRE, "revision": 40},
            "after": {"version": PATCHED, "revision": 41},
            "upgrade": {"status": "done", "changed": True},
        },
    }
    record = change.add_rehearsal(record, None)
    record["decision"] = change.decide(record)
    return record


def test_a_change_without_a_rehearsed_rollback_is_not_approved_everywhere():
    report = rollout_report.build(REQUEST, {"lab": verified_change()}, "t", "run-1", [])
    lab = report["clusters"]["lab"]
    assert report["decision"] == "not_approved" and lab["decision"] == "not_approved"
    assert lab["reasons"] == [
        "not approved: rollback not rehearsed (none on record for lab %s -> %s) (fix: rehearse "
        "the rollback: ansible-playbook playbooks/rollback.yml -e kaiops_rollout_rollback_bundle="
        "<this run's bundle> (%s back to %s, verified), then run the rollout again; or set "
        "kaiops_rollout_rehearsal_waiver: {reason: <why>, approved_by: <who>})"
        % (PATCHED, PRE, PATCHED, PRE)
    ]
    assert [s["step"] for s in lab["steps"]] == ["verify", "rollback", "approval"]
    assert lab["steps"][-1]["reason"].startswith("not approved: rollback not rehearsed")
    md = rollout_report.render_markdown(report)
    assert "**Decision: NOT_APPROVED**" in md
    assert "Not approved because:" in md
    assert (
        "Rollback rehearsal for lab: none on record for lab %s -> %s: not approved" % (PATCHED, PRE)
        in md
    )
    assert "| lab | approval | rollback_rehearsal | none on record for lab" in md
    root = ET.fromstring(rollout_report.render_junit(report))
    failed = [c.get("name") for c in root.iter("testcase") if c.find("failure") is not None]
    assert failed == ["rollback_rehearsal"]
    # the run takes the worst cluster's decision
    assert rollout_report.run_decision(["approved", "not_approved"]) == "not_approved"
    assert rollout_report.run_decision(["not_approved", "rolled_back"]) == "rolled_back"


def test_the_rehearsal_waiver_is_shown_with_its_reason_and_approver():
    waiver = {"reason": "drill: the interruption is under test", "approved_by": "cab"}
    request = dict(REQUEST, rehearsal_waiver=waiver)
    report = rollout_report.build(request, {"lab": verified_change(waiver)}, "t", "run-1", [])
    lab = report["clusters"]["lab"]
    assert report["decision"] == "approved" and lab["reasons"] == []
    assert lab["change"]["rehearsal_waiver"] == waiver
    md = rollout_report.render_markdown(report)
    assert "| Rehearsal waiver | drill: the interruption is under test (approved by cab) |" in md
    assert (
        "Rollback rehearsal for lab: none on record for lab %s -> %s; waived: drill: the "
        "interruption is under test (approved by cab)." % (PATCHED, PRE) in md
    )


def test_the_hook_jobs_a_downgrade_deleted_are_interventions():
    from ansible_collections.kaiops.runbooks.plugins.module_utils.rollout import report as RP

    hook = {"job": "post-delete-cleanup", "hook": "post-delete", "reason": "ErrImagePull",
            "image": "ghcr.io/kai/post-delete:v0.16.14", "outcome": "deleted",
            "what": "post-delete hook Job post-delete-cleanup (its pod waited on "
                    "ghcr.io/kai/post-delete:v0.16.14: ErrImagePull)"}  # fmt: skip
    change = {"rollback": {"status": "done", "hooks_deleted": [hook]}}
    got = RP._board_cluster("lab", {"change": change, "decision": "rolled_back"})
    assert got["interventions"] == [{
        "outcome": "deleted",
        "object": "post-delete hook Job post-delete-cleanup (its pod waited on "
        "ghcr.io/kai/post-delete:v0.16.14: ErrImagePull)",
    }]  # fmt: skip
