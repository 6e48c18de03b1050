"""The documented step delete_dataless_configmaps and the window from a measured submit-to-Running.

On CLUSTER (test_recovery.py: a pod Pending after the nil-map panic, its capabilities ConfigMap
with no data owned by it), the step plans exactly that ConfigMap, once even with
delete_orphan_configmaps enabled too; its finding recovers only when the pod is bound (deleting
the ConfigMap is the means, the bind is the end); with no such ConfigMap it says why it is idle.
"""

import copy

from plugins.module_utils.recovery.test_service import NOW, found

from ansible_collections.kaiops.runbooks.plugins.module_utils.recovery.service import (
    derive_window,
    observe,
    plan,
)

CM = "orphan_configmap:team-a/train-0-shared-0"


def test_the_dataless_configmap_of_a_pending_pod_is_found_as_such():
    _raw, result, _client = found()
    cm = next(f for f in result["findings"] if f["id"] == CM)
    assert cm["trigger_ready"] and cm["owner_pending"]
    assert cm["owner_pod"] == "train-0"


def test_plan_dataless_step_acts_on_that_configmap_once():
    _raw, result, _client = found()
    planned, idle = plan(
        result["findings"], ["delete_orphan_configmaps", "delete_dataless_configmaps"]
    )
    targets = [(p["step"], p["target"]["name"]) for p in planned]
    assert targets == [("delete_dataless_configmaps", "train-0-shared-0")]
    assert idle == [
        {
            "step": "delete_orphan_configmaps",
            "reason": "what it would act on is acted on by an earlier step (%s)" % CM,
        }
    ]
    assert "no data and owned by exactly its pod" in planned[0]["why"]


def test_plan_dataless_step_idle_without_a_pending_owner():
    _raw, result, _client = found()
    findings = copy.deepcopy(result["findings"])
    for f in findings:
        f["owner_pending"] = False
    planned, idle = plan(findings, ["delete_dataless_configmaps"])
    assert planned == []
    assert idle == [
        {
            "step": "delete_dataless_configmaps",
            "reason": "no data-less capabilities ConfigMap of a pod still Pending found",
        }
    ]


def _deleted_by_the_step():
    return [
        {
            "id": "c1:001",
            "step": "delete_dataless_configmaps",
            "outcome": "deleted",
            "target": {"uid": "uid-cm"},
            "deletion_timestamp": "2026-11-30T12:00:20Z",
        }
    ]


def test_observe_dataless_configmap_recovers_when_its_pod_is_bound():
    raw, result, _client = found()
    after = copy.deepcopy(raw)
    after["configmaps"] = []
    obs = observe(result["findings"], after, _deleted_by_the_step(), now=NOW)
    verdicts = {o["finding"]: o for o in obs["outcomes"]}
    assert verdicts[CM]["verdict"] == "not_recovered"
    assert verdicts[CM]["why"] == "deleted; its pod train-0 is not bound yet"
    for p in after["pods"]:
        if p["metadata"]["name"] == "train-0":
            p["spec"]["nodeName"] = "node-1"
            p["status"]["conditions"] = [
                {
                    "type": "PodScheduled",
                    "status": "True",
                    "lastTransitionTime": "2026-11-30T12:00:25Z",
                }
            ]
    obs = observe(result["findings"], after, _deleted_by_the_step(), now=NOW)
    verdicts = {o["finding"]: o for o in obs["outcomes"]}
    assert (verdicts[CM]["verdict"], verdicts[CM]["at"]) == ("recovered", "2026-11-30T12:00:25Z")
    assert verdicts[CM]["why"].startswith("its pod train-0 is bound now")


def test_window_from_a_measured_submit_to_running():
    rule = {"multiplier": 10, "floor_s": 30, "cap_s": 600, "baseline_s": 4.2}
    window = derive_window([], dict(rule, baseline_source="rollout verification p95"))
    assert window["window_s"] == 42
    assert window["source"] == (
        "measured: 10 x submit-to-Running 4.200s (rollout verification p95), floor 30s, cap 600s"
    )
    assert derive_window([], dict(rule, baseline_s=0.5))["window_s"] == 30  # the floor
    assert derive_window([], dict(rule, baseline_s=0))["source"].startswith("fallback")
