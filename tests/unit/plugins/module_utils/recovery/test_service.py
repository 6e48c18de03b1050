"""module_utils/recovery/: collect over a fake client; find, window, plan, observe are pure.

CLUSTER is a KAI cluster after the binder panic: a fractional pod Pending with PodBound=False
and a failed BindRequest that says "assignment to entry in nil map", its capabilities ConfigMap
with no data owned by it, the reservation pod of its GPU group, a pod Pending for resources, and
a healthy bound pod with its own reservation pod. The recovery tests in test_apply.py,
playbooks/test_recovery.py and rollout/test_change_runner.py reuse it.
"""

import copy
import datetime

import pytest
from fakeapi import FakeClient

from ansible_collections.kaiops.runbooks.plugins.module_utils.errors import KaiopsError
from ansible_collections.kaiops.runbooks.plugins.module_utils.recovery.service import (
    _finding_outcome,
    derive_window,
    observe,
    plan,
    start_latencies,
)
from ansible_collections.kaiops.runbooks.plugins.module_utils.scan.client import RecoveryClient
from ansible_collections.kaiops.runbooks.plugins.module_utils.scan.findings import (
    NIL_MAP,
    NOT_SERVED,
    OTHER_BIND_ERROR,
    STALE,
    UNDETERMINED,
    UNRELATED,
    find,
)

NOW = datetime.datetime(2026, 11, 30, 12, 0, 0, tzinfo=datetime.timezone.utc)
OLD = "2026-11-30T10:00:00Z"
NIL = "failed to bind pod: panic: assignment to entry in nil map"


def pod(
    name,
    ns="team-a",
    node=None,
    phase="Pending",
    labels=None,
    annotations=None,
    conditions=None,
    started=None,
    created=OLD,
    uid=None,
):
    status = {"phase": phase, "conditions": conditions or []}
    if started:
        status["containerStatuses"] = [
            {"name": "main", "state": {"running": {"startedAt": started}}}
        ]
    spec = {"containers": [{"name": "main", "image": "busybox"}]}
    if node:
        spec["nodeName"] = node
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": ns,
            "uid": uid or "uid-" + name,
            "resourceVersion": "10",
            "creationTimestamp": created,
            "labels": labels or {},
            "annotations": annotations or {},
        },
        "spec": spec,
        "status": status,
    }


CLUSTER = [
    {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {
            "name": "kube-system",
            "uid": "uid-ks",
            "annotations": {"kaiops.dev/disposable": "true"},
        },
    },
    {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {
            "name": "binder",
            "namespace": "kai-scheduler",
            "uid": "uid-binder",
            "resourceVersion": "5",
            "labels": {"app": "binder"},
        },
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": {"app": "binder"}},
            "template": {
                "spec": {
                    "containers": [
                        {
                            "name": "binder",
                            "image": "ghcr.io/kai-scheduler/kai-scheduler/binder:v0.16.13",
                        }
                    ]
                }
            },
        },
        "status": {"replicas": 1, "readyReplicas": 1},
    },
    pod(
        "train-0",
        labels={"runai-gpu-group": "g1"},
        annotations={"gpu-fraction": "0.5", "runai/shared-gpu-configmap": "train-0-shared"},
        conditions=[
            {
                "type": "PodScheduled",
                "status": "True",
                "lastTransitionTime": "2026-11-30T11:00:00Z",
            },
            {
                "type": "PodBound",
                "status": "False",
                "reason": "BindingError",
                "message": NIL,
                "lastTransitionTime": "2026-11-30T11:00:05Z",
            },
        ],
    ),
    {
        "apiVersion": "scheduling.run.ai/v1alpha2",
        "kind": "BindRequest",
        "metadata": {
            "name": "train-0-br",
            "namespace": "team-a",
            "uid": "uid-br",
            "resourceVersion": "11",
            "creationTimestamp": "2026-11-30T11:00:01Z",
        },
        "spec": {
            "podName": "train-0",
            "selectedNode": "node-1",
            "receivedResourceType": "Fraction",
            "selectedGPUGroups": ["g1"],
        },
        "status": {"phase": "Failed", "reason": NIL, "failedAttempts": 3},
    },
    {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": "train-0-shared-0",
            "namespace": "team-a",
            "uid": "uid-cm",
            "resourceVersion": "12",
            "creationTimestamp": OLD,
            "ownerReferences": [
                {"apiVersion": "v1", "kind": "Pod", "name": "train-0", "uid": "uid-train-0"}
            ],
        },
    },
    pod(
        "gpu-reservation-g1",
        ns="kai-resource-reservation",
        node="node-1",
        phase="Running",
        labels={"runai-gpu-group": "g1"},
        annotations={"run.ai/reserve_for_gpu_index": "0"},
    ),
    pod(
        "wait-0",
        annotations={"gpu-fraction": "0.5"},
        conditions=[
            {
                "type": "PodScheduled",
                "status": "False",
                "reason": "Unschedulable",
                "message": "0/4 nodes are available: insufficient GPU",
                "lastTransitionTime": OLD,
            }
        ],
    ),
    pod(
        "ok-0",
        node="node-2",
        phase="Running",
        labels={"runai-gpu-group": "g2"},
        annotations={"gpu-fraction": "0.5"},
        created="2026-11-30T11:59:00Z",
        started="2026-11-30T11:59:04Z",
    ),
    pod(
        "gpu-reservation-g2",
        ns="kai-resource-reservation",
        node="node-2",
        phase="Running",
        labels={"runai-gpu-group": "g2"},
    ),
    pod(
        "web-1",
        ns="web",
        node="node-3",
        phase="Running",
        created="2026-11-30T11:58:00Z",
        started="2026-11-30T11:58:02Z",
    ),
]

SERVED = ("scheduling.run.ai/v1alpha2",)


def cluster_client(objects=None, **kw):
    return FakeClient(objects=copy.deepcopy(objects if objects is not None else CLUSTER), **kw)


def found(objects=None, served=SERVED, namespaces=(), min_age_s=300):
    client = cluster_client(objects, served=served)
    if "scheduling.run.ai/v1alpha2" not in served:
        client.served.discard("scheduling.run.ai/v1alpha2")
    raw = RecoveryClient(client).collect()
    return raw, find(raw, NOW, namespaces=namespaces, min_age_s=min_age_s), client


def by_id(result):
    return {f["id"]: f for f in result["findings"]}


# ---------------------------------------------------------------- collect


def test_collect_one_list_per_kind():
    _raw, _res, client = found()
    lists = [entry[1:3] for entry in client.log if entry[0] == "list"]
    assert lists == [
        ("v1", "Pod"),
        ("v1", "ConfigMap"),
        ("scheduling.run.ai/v1alpha2", "BindRequest"),
    ]
    assert all(entry[3] is None and entry[4] is None for entry in client.log if entry[0] == "list")


def test_collect_records_an_api_not_served_and_carries_on():
    objects = [o for o in CLUSTER if o["kind"] != "BindRequest"]
    raw, result, _client = found(objects, served=[])
    assert raw["access"]["bind_requests"] == "not_served"
    assert NOT_SERVED["bind_requests"] in result["notes"]
    assert "BindRequest API not served on this cluster: cannot find failed binds" in result["notes"]


def test_collect_fails_when_pods_cannot_be_listed():
    client = cluster_client(forbidden=[("v1", "Pod")])
    with pytest.raises(KaiopsError, match="Failed to list pods") as err:
        RecoveryClient(client).collect()
    assert err.value.status == "forbidden"


def test_collect_reads_the_disposable_mark_and_the_binder():
    raw, _res, _client = found()
    assert raw["disposable"] is True
    assert raw["binder"]["metadata"]["name"] == "binder"


# ---------------------------------------------------------------- find


def test_find_classifies_the_nil_map_failure_and_its_leftovers():
    _raw, result, _client = found()
    got = by_id(result)
    assert got["failed_bind:team-a/train-0"]["classification"] == NIL_MAP
    assert any(
        "PodBound=False reason BindingError" in e
        for e in got["failed_bind:team-a/train-0"]["evidence"]
    )
    assert got["failed_bindrequest:team-a/train-0-br"]["classification"] == NIL_MAP
    assert got["failed_bindrequest:team-a/train-0-br"]["step"] == "delete_failed_bindrequests"
    cm = got["orphan_configmap:team-a/train-0-shared-0"]
    assert cm["classification"] == NIL_MAP and cm["trigger_ready"] and not cm["has_data"]
    res = got["stale_reservation_pod:kai-resource-reservation/gpu-reservation-g1"]
    assert res["classification"] == STALE
    # the healthy group's reservation pod and the bound pods are not findings
    assert not [i for i in got if "g2" in i or "ok-0" in i or "web-1" in i]


def test_find_pending_for_resources_is_not_this_bug():
    _raw, result, _client = found()
    wait = by_id(result)["pending_unschedulable:team-a/wait-0"]
    assert wait["classification"] == UNRELATED
    assert any("not the binder panic" in e for e in wait["evidence"])


def test_find_other_bind_error_is_not_called_the_panic():
    objects = copy.deepcopy(CLUSTER)
    for obj in objects:
        if obj["kind"] == "BindRequest":
            obj["status"]["reason"] = "node node-1 not found"
        if obj["metadata"]["name"] == "train-0":
            obj["status"]["conditions"][1]["message"] = "node node-1 not found"
    _raw, result, _client = found(objects)
    got = by_id(result)
    assert got["failed_bind:team-a/train-0"]["classification"] == OTHER_BIND_ERROR
    assert got["orphan_configmap:team-a/train-0-shared-0"]["classification"] == STALE


def test_find_without_bindrequests_says_undetermined_never_the_bug():
    # a copy: the objects are changed below, and CLUSTER is every other test's fixture (make
    # flake's random order found two tests failing after this one)
    objects = [o for o in copy.deepcopy(CLUSTER) if o["kind"] != "BindRequest"]
    for obj in objects:
        if obj["metadata"]["name"] == "train-0":
            obj["status"]["conditions"] = []
    _raw, result, _client = found(objects, served=[])
    got = by_id(result)
    assert "failed_bind:team-a/train-0" not in got
    unbound = got["unbound_group_pod:team-a/train-0"]
    assert unbound["classification"] == UNDETERMINED
    assert any("BindRequest API not served" in e for e in unbound["evidence"])
    assert (
        got["stale_reservation_pod:kai-resource-reservation/gpu-reservation-g1"]["classification"]
        == UNDETERMINED
    )


def test_find_min_age_spares_a_bind_in_progress():
    objects = copy.deepcopy(CLUSTER)
    for obj in objects:
        if obj["metadata"]["name"] in ("gpu-reservation-g1", "train-0-shared-0"):
            obj["metadata"]["creationTimestamp"] = "2026-11-30T11:59:50Z"
    _raw, result, _client = found(objects)
    kinds = {f["kind"] for f in result["findings"]}
    assert "stale_reservation_pod" not in kinds and "orphan_configmap" not in kinds


def stale_label_cluster():
    """ok-0 bound in g2 by its successful BindRequest, but labelled g3: the label of a failed
    attempt that KAI's binder left (real KAI, 2026-12-07); g3's reservation pod is unused."""
    objects = copy.deepcopy(CLUSTER)
    for obj in objects:
        if obj["metadata"]["name"] == "ok-0":
            obj["metadata"]["labels"] = {"runai-gpu-group": "g3"}
    objects += [
        {
            "apiVersion": "scheduling.run.ai/v1alpha2",
            "kind": "BindRequest",
            "metadata": {"name": "ok-0-br", "namespace": "team-a", "uid": "uid-ok-br"},
            "spec": {"podName": "ok-0", "selectedGPUGroups": ["g2"]},
            "status": {"phase": "Succeeded"},
        },
        pod(
            "gpu-reservation-g4",
            ns="kai-resource-reservation",
            node="node-2",
            phase="Running",
            labels={"runai-gpu-group": "g4"},
        ),
    ]
    return objects


def test_a_reservation_held_by_its_pod_s_bindrequest_is_not_stale_whatever_the_label():
    _raw, result, _client = found(stale_label_cluster())
    stale = sorted(f["id"] for f in result["findings"] if f["kind"] == "stale_reservation_pod")
    # g2 is held (the successful BindRequest), g3 is excused by the label it may still hold;
    # g4's reservation pod is stale, and g1's (the failed bind's) as before
    assert stale == [
        "stale_reservation_pod:kai-resource-reservation/gpu-reservation-g1",
        "stale_reservation_pod:kai-resource-reservation/gpu-reservation-g4",
    ]


def test_observe_counts_a_group_used_again_by_a_pod_s_bindrequest():
    raw, result, _client = found(stale_label_cluster())
    after = copy.deepcopy(raw)
    for p in after["pods"]:
        if p["metadata"]["name"] == "ok-0":
            p["metadata"]["labels"] = {"runai-gpu-group": "g3"}
    after["bind_requests"].append(
        {
            "metadata": {"name": "ok-0-br2", "namespace": "team-a", "uid": "uid-ok-br2"},
            "spec": {"podName": "ok-0", "selectedGPUGroups": ["g4"]},
            "status": {"phase": "Succeeded"},
        }
    )
    obs = observe(result["findings"], after, [], now=NOW)
    verdicts = {o["finding"]: o["verdict"] for o in obs["outcomes"]}
    assert verdicts["stale_reservation_pod:kai-resource-reservation/gpu-reservation-g4"] == (
        "recovered"
    )


def second_reservation_pod(created=OLD, uid=None):
    """KAI-Scheduler #1673's state: a second live reservation pod for group g2 (pre-v0.16.0
    name), beside CLUSTER's gpu-reservation-g2."""
    return pod(
        "gpu-reservation-node-2-x7k2q",
        ns="kai-resource-reservation",
        node="node-2",
        phase="Running",
        labels={"runai-gpu-group": "g2"},
        created=created,
        uid=uid,
    )


def test_find_a_second_reservation_pod_of_one_gpu_group_whatever_its_age():
    # KAI-Scheduler #1673: two reservation pods for group g2, the second made a moment ago. The
    # healthy cluster (one per group) has no such finding.
    assert not [f for f in found()[1]["findings"] if f["kind"] == "duplicate_reservation_pod"]
    second = second_reservation_pod(created="2026-11-30T11:59:58Z")
    _raw, result, _client = found(CLUSTER + [second])
    dup = by_id(result)[
        "duplicate_reservation_pod:kai-resource-reservation/gpu-reservation-node-2-x7k2q"
    ]
    assert dup["gpu_group"] == "g2" and dup["step"] is None
    assert dup["first"] == "kai-resource-reservation/gpu-reservation-g2"
    assert "2 live reservation pods hold this group" in dup["evidence"][0]
    kinds = [f["kind"] for f in result["findings"]]
    assert kinds.count("duplicate_reservation_pod") == 1  # the older one is not a duplicate


def devices_cluster(first_device, second_device, second_created=OLD):
    """Group g2 with two reservation pods, each on its own device, and its bound pod ok-0
    reading GPU-b through its capabilities ConfigMap (and GPU-b's env one, which is no proof)."""
    objects = copy.deepcopy(CLUSTER)
    for obj in objects:
        name = obj["metadata"]["name"]
        if name == "ok-0":
            obj["metadata"]["annotations"]["runai/shared-gpu-configmap"] = "ok-0-shared"
        if name == "gpu-reservation-g2":
            obj["metadata"]["annotations"]["run.ai/reserve_for_gpu_index"] = first_device
    second = second_reservation_pod(created=second_created, uid="dup-1")
    second["metadata"]["annotations"]["run.ai/reserve_for_gpu_index"] = second_device
    capabilities = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "ok-0-shared-0", "namespace": "team-a", "uid": "uid-ok-cm"},
        "data": {"NVIDIA_VISIBLE_DEVICES": "GPU-b", "GPU_PORTION": "0.50"},
    }
    env = dict(capabilities, metadata={"name": "ok-0-shared-0-evar", "namespace": "team-a"})
    env["data"] = {"NVIDIA_VISIBLE_DEVICES": "GPU-c"}
    return objects + [second, capabilities, env]


def test_a_duplicate_whose_device_no_bound_pod_of_its_group_reads_is_deleted_by_its_step():
    _raw, result, _client = found(devices_cluster("GPU-b", "GPU-c"))
    (dup,) = [f for f in result["findings"] if f["kind"] == "duplicate_reservation_pod"]
    assert dup["object"]["name"] == "gpu-reservation-node-2-x7k2q"
    assert dup["deletable"] is True and dup["step"] == "delete_duplicate_reservation_pods"
    assert dup["device"] == "GPU-c" and dup["devices_read"] == ["GPU-b"]
    planned, idle = plan(result["findings"], ["delete_duplicate_reservation_pods"])
    assert [(p["action"], p["target"]["name"]) for p in planned] == [
        ("delete", "gpu-reservation-node-2-x7k2q")
    ]
    assert idle == []


def test_the_oldest_reservation_pod_is_the_duplicate_when_the_work_reads_the_other():
    _raw, result, _client = found(devices_cluster("GPU-c", "GPU-b"))
    (dup,) = [f for f in result["findings"] if f["kind"] == "duplicate_reservation_pod"]
    assert dup["object"]["name"] == "gpu-reservation-g2" and dup["deletable"] is True


def test_a_young_or_unattributed_duplicate_is_found_and_not_deleted():
    young = devices_cluster("GPU-b", "GPU-c", second_created="2026-11-30T11:59:58Z")
    _raw, result, _client = found(young)
    (dup,) = [f for f in result["findings"] if f["kind"] == "duplicate_reservation_pod"]
    assert dup["deletable"] is False and dup["step"] is None
    assert any("kai_recovery_min_age_s" in e for e in dup["evidence"])
    planned, idle = plan(result["findings"], ["delete_duplicate_reservation_pods"])
    assert planned == [] and "whose device no bound pod of its group reads" in idle[0]["reason"]
    # no device written yet (its allocation may still run): found, never deleted
    _raw, result, _client = found(devices_cluster("GPU-b", ""))
    (dup,) = [f for f in result["findings"] if f["kind"] == "duplicate_reservation_pod"]
    assert dup["deletable"] is False and any(
        "may still be allocating" in e for e in dup["evidence"]
    )
    # both devices read by the group (it spans two): a person decides, nothing is planned
    _raw, result, _client = found(devices_cluster("GPU-b", "GPU-b"))
    (dup,) = [f for f in result["findings"] if f["kind"] == "duplicate_reservation_pod"]
    assert dup["object"]["name"] == "gpu-reservation-node-2-x7k2q" and dup["deletable"] is False
    assert plan(result["findings"], ["delete_duplicate_reservation_pods"])[0] == []


def test_find_scope_limits_namespaces():
    _raw, result, _client = found(namespaces=["kai-resource-reservation"])
    assert [f["kind"] for f in result["findings"]] == ["stale_reservation_pod"]


def test_find_orphan_configmap_of_a_gone_pod():
    objects = [o for o in CLUSTER if o["metadata"]["name"] != "train-0"]
    _raw, result, _client = found(objects)
    cm = by_id(result)["orphan_configmap:team-a/train-0-shared-0"]
    assert any("is gone" in e for e in cm["evidence"])
    assert not cm["trigger_ready"]


def test_find_ignores_pod_owned_configmaps_of_pods_off_the_sharing_path():
    objects = copy.deepcopy(CLUSTER) + [
        pod("app-0", ns="web", labels={}, annotations={}),
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {
                "name": "app-0-1",
                "namespace": "web",
                "uid": "uid-app-cm",
                "creationTimestamp": OLD,
                "ownerReferences": [{"kind": "Pod", "name": "app-0", "uid": "uid-app-0"}],
            },
        },
    ]
    _raw, result, _client = found(objects)
    assert "orphan_configmap:web/app-0-1" not in by_id(result)


# ---------------------------------------------------------------- window


@pytest.mark.parametrize(
    "latencies, explicit, expected, source",
    [
        ([4.0, 2.0], 0, 60, "measured"),  # 3 x 3s = 9s, below the floor
        ([20.0, 40.0, 60.0], 0, 120, "measured"),  # 3 x 40s
        ([900.0], 0, 900, "measured"),  # capped
        ([], 0, 120, "fallback"),
        ([4.0], 45, 45, "kai_recovery_window_s"),
    ],
)
def test_derive_window(latencies, explicit, expected, source):
    samples = [{"latency_s": v, "created": str(i)} for i, v in enumerate(latencies)]
    window = derive_window(samples, explicit_s=explicit)
    assert window["window_s"] == expected
    assert window["source"].startswith(source)


def test_start_latencies_from_pod_times_within_the_lookback():
    samples = start_latencies(
        [pod(**{"name": "x", "created": "2026-11-29T00:00:00Z", "started": "2026-11-29T00:00:09Z"})]
        + CLUSTER[-3:],
        NOW,
        3600,
        10,
    )
    assert [(s["name"], s["latency_s"]) for s in samples] == [("ok-0", 4.0), ("web-1", 2.0)]


# ---------------------------------------------------------------- plan


def test_plan_a_disabled_step_plans_nothing():
    _raw, result, _client = found()
    planned, idle = plan(result["findings"], [])
    assert planned == [] and idle == []
    planned, _idle = plan(result["findings"], ["delete_stale_reservation_pods"])
    assert [p["target"]["name"] for p in planned] == ["gpu-reservation-g1"]
    assert all(p["action"] == "delete" for p in planned)


def test_plan_every_step_one_object_each_and_why():
    raw, result, _client = found()
    from ansible_collections.kaiops.runbooks.plugins.module_utils.k8s.objects import ref

    planned, idle = plan(
        result["findings"],
        ["delete_failed_bindrequests", "delete_orphan_configmaps", "restart_binder"],
        binder=ref(raw["binder"]),
    )
    assert [(p["step"], p["target"]["kind"], p["target"]["name"]) for p in planned] == [
        ("delete_failed_bindrequests", "BindRequest", "train-0-br"),
        ("delete_orphan_configmaps", "ConfigMap", "train-0-shared-0"),
        ("restart_binder", "Deployment", "binder"),
    ]
    assert all(p["target"]["uid"] and p["why"] for p in planned)
    assert idle == []


def test_plan_restart_binder_without_a_binder_says_why():
    _raw, result, _client = found()
    planned, idle = plan(result["findings"], ["restart_binder"], binder=None)
    assert planned == []
    assert idle == [
        {
            "step": "restart_binder",
            "reason": "no binder Deployment in namespace kai-scheduler on this cluster",
        }
    ]


def test_plan_rejects_an_unknown_step():
    with pytest.raises(KaiopsError, match="unknown step"):
        plan([], ["delete_everything"])


# ---------------------------------------------------------------- observe


def test_observe_recovered_not_recovered_not_applicable():
    raw, result, _client = found()
    after = copy.deepcopy(raw)
    after["configmaps"] = []
    after["bind_requests"] = []
    for p in after["pods"]:
        if p["metadata"]["name"] == "train-0":
            p["spec"]["nodeName"] = "node-1"
            p["status"]["conditions"] = [
                {
                    "type": "PodScheduled",
                    "status": "True",
                    "lastTransitionTime": "2026-11-30T12:00:30Z",
                }
            ]
    interventions = [
        {
            "id": "c1:001",
            "step": "delete_orphan_configmaps",
            "outcome": "deleted",
            "target": {"uid": "uid-cm"},
            "deletion_timestamp": "2026-11-30T12:00:20Z",
        }
    ]
    obs = observe(result["findings"], after, interventions, now=NOW)
    verdicts = {o["finding"]: (o["verdict"], o["at"]) for o in obs["outcomes"]}
    assert verdicts["failed_bind:team-a/train-0"] == ("recovered", "2026-11-30T12:00:30Z")
    assert verdicts["orphan_configmap:team-a/train-0-shared-0"] == (
        "recovered",
        "2026-11-30T12:00:20Z",
    )
    assert verdicts["failed_bindrequest:team-a/train-0-br"][0] == "recovered"
    assert verdicts["pending_unschedulable:team-a/wait-0"] == ("not_applicable", None)
    # the reservation pod's group is used again by the bound pod
    assert (
        verdicts["stale_reservation_pod:kai-resource-reservation/gpu-reservation-g1"][0]
        == "recovered"
    )
    assert obs["pending"] == 0


def test_observe_nothing_changed_is_not_recovered():
    raw, result, _client = found()
    obs = observe(result["findings"], raw, [], now=NOW)
    verdicts = {o["finding"]: o["verdict"] for o in obs["outcomes"]}
    assert verdicts["failed_bind:team-a/train-0"] == "not_recovered"
    assert verdicts["orphan_configmap:team-a/train-0-shared-0"] == "not_recovered"
    assert obs["pending"] == 4


def test_a_duplicate_reservation_pod_recovers_only_when_it_is_gone():
    second = second_reservation_pod(uid="dup-1")
    _raw, result, _client = found(CLUSTER + [second])
    (dup,) = [f for f in result["findings"] if f["kind"] == "duplicate_reservation_pod"]
    seen_still = {"by_uid": {"dup-1": second}, "deleted": {}, "read_at": NOW, "groups_in_use": {}}
    seen_gone = {"by_uid": {}, "deleted": {}, "read_at": NOW, "groups_in_use": {}}
    assert _finding_outcome(dup, seen_still)[0] == "not_recovered"
    assert _finding_outcome(dup, seen_gone)[0] != "not_recovered"


# -------------------------------------------------------------------------------------------------
# The documented step delete_dataless_configmaps and the window from a measured submit-to-Running.
#
# On CLUSTER (at the top: a pod Pending after the nil-map panic, its capabilities ConfigMap
# with no data owned by it), the step plans exactly that ConfigMap, once even with
# delete_orphan_configmaps enabled too; its finding recovers only when the pod is bound (deleting
# the ConfigMap is the means, the bind is the end); with no such ConfigMap it says why it is idle.


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
