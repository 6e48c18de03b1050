"""module_utils/gpu_access/plan.py and client.py: what the cluster enforces, the queues, the nodes a
probe can land on, the contention figures, the cases that cannot run and the refusals; the
reads through the in-memory fake client. Objects are shaped like the lab's (KAI stand-in
v0.16.14, 2026-12-01)."""

import json

import pytest
from fakeapi import FakeClient

from ansible_collections.kaiops.runbooks.plugins.module_utils.gpu_access import plan
from ansible_collections.kaiops.runbooks.plugins.module_utils.gpu_access.client import (
    GpuAccessClient,
)

PLUGINS = {
    "dynamicresources": {"arguments": {}, "enabled": True, "priority": 200},
    "gpusharing": {"arguments": {"cdiEnabled": "false"}, "enabled": True, "priority": 100},
    "hamicore": {"arguments": {}, "enabled": False, "priority": 50},
}
LAB_ADMISSION_ARGS = [
    "admission",
    "--scheduler-name",
    "kai-scheduler",
    "--gpu-sharing-enabled=true",
    "--gpu-fraction-runtime-class-name",
    "nvidia",
]
LAB_BINDER_ARGS = ["binder", "--plugins", json.dumps(PLUGINS), "--fake-gpu-nodes"]


def deployment(name, args):
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": "kai-scheduler"},
        "spec": {"template": {"spec": {"containers": [{"name": name, "args": args}]}}},
    }


def kai_config(block=False, sharing=True):
    return {
        "apiVersion": "kai.scheduler/v1",
        "kind": "Config",
        "metadata": {"name": "kai-config"},
        "spec": {"admission": {"blockNvidiaVisibleDevices": block, "gpuSharing": sharing}},
    }


def queue(name, limit=-1, parent=None):
    spec = {"resources": {"gpu": {"quota": 0, "limit": limit, "overQuotaWeight": 1}}}
    if parent:
        spec["parentQueue"] = parent
    return {
        "apiVersion": "scheduling.run.ai/v2",
        "kind": "Queue",
        "metadata": {"name": name},
        "spec": spec,
    }


def node(name, gpus="2", memory="16384", taints=(), labels=None, fake=True):
    meta_labels = {"nvidia.com/gpu.memory": memory} if memory else {}
    if fake:
        meta_labels["run.ai/fake.gpu"] = "true"
    meta_labels.update(labels or {})
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": meta_labels},
        "spec": {"taints": list(taints)},
        "status": {"allocatable": {"nvidia.com/gpu": gpus} if gpus else {}},
    }


KWOK_TAINT = {"key": "kwok.x-k8s.io/node", "value": "fake", "effect": "NoSchedule"}
LAB = [
    kai_config(),
    deployment("admission", LAB_ADMISSION_ARGS),
    deployment("binder", LAB_BINDER_ARGS),
    queue("default-parent-queue"),
    queue("default-queue", parent="default-parent-queue"),
    node("kaiops-node"),
    node("kwok-gpu-0", gpus="8", memory="81920", taints=[KWOK_TAINT], labels={"type": "kwok"}),
    node("cpu-only", gpus=None, memory=None, fake=False),
]
CASES = ["whole_gpu", "fractional", "policy_queue", "policy_visible_devices", "isolation"]
NEEDS = {
    "whole_gpu": [],
    "fractional": ["kai", "sharing"],
    "policy_queue": ["kai", "sharing"],
    "policy_visible_devices": ["kai"],
    "isolation": [],
}
OPTIONS = {
    "cases": CASES,
    "needs": NEEDS,
    "queue": "default-queue",
    "missing_queue": "kaiops-gpu-access-no-such-queue",
    "zero_queue": "kaiops-gpu-access-zero-limit",
    "node_selector": {},
    "tolerations": [],
    "fraction": "0.5",
    "contention_share": "0.6",
    "alloc_mib": 256,
}
KAI = {"installed": True, "gpu_sharing": True}


def lab_plan(objects=None, kai=None, check_mode=False, **options):
    objects = LAB if objects is None else objects
    kai = KAI if kai is None else kai
    client = FakeClient(objects=objects, served=["scheduling.run.ai/v2"])
    raw = GpuAccessClient(client).configuration("kai-scheduler")
    return plan.build_plan(raw, dict(OPTIONS, **options), kai, check_mode)


def test_plan_of_the_lab_reads_what_kai_enforces_and_from_where():
    result = lab_plan()
    assert result["problems"] == [] and result["skipped"] == {}
    block = result["enforcement"]["block_nvidia_visible_devices"]
    assert block == {
        "enabled": False,
        "sources": [
            "kai-config spec.admission.blockNvidiaVisibleDevices=false",
            "admission argument --block-nvidia-visible-devices: absent",
        ],
        "note": None,
    }
    assert result["enforcement"]["gpu_sharing"]["enabled"] is True
    assert result["enforcement"]["hami_core"]["enabled"] is False
    assert result["zero_queue_parent"] == "default-parent-queue"
    assert result["queues"]["kaiops-gpu-access-no-such-queue"]["exists"] is False
    assert result["access"] == {
        "kai_config": "ok",
        "deployments": "ok",
        "queues": "ok",
        "nodes": "ok",
    }


def test_candidate_nodes_leave_out_tainted_cordoned_and_gpu_less_nodes():
    result = lab_plan()
    assert result["candidate_nodes"] == [
        {"name": "kaiops-node", "gpus": 2, "gpu_memory_mib": 16384, "fake": True}
    ]
    tolerate = [{"key": "kwok.x-k8s.io/node", "operator": "Exists", "effect": "NoSchedule"}]
    names = [n["name"] for n in lab_plan(tolerations=tolerate)["candidate_nodes"]]
    assert names == ["kaiops-node", "kwok-gpu-0"]
    names = [
        n["name"]
        for n in lab_plan(tolerations=tolerate, node_selector={"type": "kwok"})["candidate_nodes"]
    ]
    assert names == ["kwok-gpu-0"]
    cordoned = [node("kaiops-node")]
    cordoned[0]["spec"]["unschedulable"] = True
    assert plan.candidate_nodes(cordoned, {}, []) == []


def test_contention_figures_exceed_the_portion_and_the_device():
    figures = lab_plan()["contention"]
    assert figures == {
        "share": "0.6",
        "device_memory_mib": 16384,
        "alloc_mib": 9831,
        "portion_mib": 8192,
        "basis": "0.6 x 16384 MiB (label nvidia.com/gpu.memory of kaiops-node, the largest device "
        "a probe can land on)",
    }
    assert figures["alloc_mib"] > figures["portion_mib"]
    assert 2 * figures["alloc_mib"] > figures["device_memory_mib"]


def test_contention_without_a_memory_label_falls_back_to_the_declared_mib():
    figures = plan.contention([{"name": "n", "gpus": 1, "gpu_memory_mib": None}], "0.6", "0.5", 256)
    assert figures["alloc_mib"] == 256 and figures["device_memory_mib"] is None
    assert "kai_gpu_access_alloc_mib = 256 MiB" in figures["basis"]


@pytest.mark.parametrize(
    ("args", "config", "enabled", "note"),
    [
        (["--block-nvidia-visible-devices=true"], False, True, True),
        (["--block-nvidia-visible-devices", "true"], True, True, False),
        ([], True, False, True),
    ],
)
def test_the_running_admissions_arguments_win_over_kai_config(args, config, enabled, note):
    objects = [kai_config(block=config), deployment("admission", LAB_ADMISSION_ARGS + args)]
    raw = GpuAccessClient(FakeClient(objects=objects)).configuration("kai-scheduler")
    setting = plan.enforcement(raw)["block_nvidia_visible_devices"]
    assert setting["enabled"] is enabled and bool(setting["note"]) is note


def test_without_the_admission_deployment_kai_config_decides():
    raw = GpuAccessClient(FakeClient(objects=[kai_config(block=True)])).configuration(
        "kai-scheduler"
    )
    setting = plan.enforcement(raw)["block_nvidia_visible_devices"]
    assert setting == {
        "enabled": True,
        "sources": ["kai-config spec.admission.blockNvidiaVisibleDevices=true"],
        "note": None,
    }


def test_hami_core_is_read_from_the_binder_plugins():
    plugins = dict(PLUGINS, hamicore={"enabled": True, "priority": 50})
    objects = [deployment("binder", ["binder", "--plugins", json.dumps(plugins)])]
    raw = GpuAccessClient(FakeClient(objects=objects)).configuration("kai-scheduler")
    assert plan.enforcement(raw)["hami_core"]["enabled"] is True


KAI_NEEDS = ("fractional", "policy_queue", "policy_visible_devices")


@pytest.mark.parametrize(
    ("kai", "check_mode", "expected"),
    [
        ({"installed": False}, False, dict.fromkeys(KAI_NEEDS, plan.NEED_REASONS["kai"])),
        (
            {"installed": True, "gpu_sharing": False},
            False,
            dict.fromkeys(KAI_NEEDS[:2], plan.NEED_REASONS["sharing"]),
        ),
        (KAI, True, dict.fromkeys(NEEDS, plan.CHECK_MODE_REASON)),
    ],
)  # fmt: skip
def test_skipped_names_why_a_case_cannot_run(kai, check_mode, expected):
    assert plan.skipped(NEEDS, kai, check_mode) == expected


@pytest.mark.parametrize(
    ("objects", "options", "problem"),
    [
        (
            LAB + [queue("kaiops-gpu-access-no-such-queue")],
            {},
            "kai_gpu_access_missing_queue 'kaiops-gpu-access-no-such-queue' exists",
        ),
        (
            LAB + [queue("kaiops-gpu-access-zero-limit", 0)],
            {},
            "Queue kaiops-gpu-access-zero-limit already exists and does not carry this role's",
        ),
        (LAB, {"queue": "team-a"}, "kai_gpu_access_queue 'team-a' does not exist on the cluster"),
        (LAB, {"zero_queue": "default-queue"}, "kai_gpu_access_zero_queue must differ"),
        (LAB[:5], {}, "no GPU node can take the probes"),
    ],
)  # fmt: skip
def test_plan_refuses_before_anything_is_created(objects, options, problem):
    problems = lab_plan(objects=objects, **options)["problems"]
    assert any(p.startswith(problem) for p in problems), problems


OWNED = {"app.kubernetes.io/managed-by": "kaiops", "app.kubernetes.io/part-of": "kaiops-gpu-access"}


def test_a_zero_queue_a_killed_run_left_is_a_leftover_to_remove_not_a_refusal():
    ours = queue("kaiops-gpu-access-zero-limit", 0)
    ours["metadata"]["labels"] = dict(OWNED)
    result = lab_plan(objects=LAB + [ours], owned_labels=OWNED)
    assert result["problems"] == []
    assert result["leftovers"] == [
        {"kind": "Queue", "name": "kaiops-gpu-access-zero-limit", "labels": OWNED}
    ]
    # one label short is not ours: refused, never deleted
    partly = queue("kaiops-gpu-access-zero-limit", 0)
    partly["metadata"]["labels"] = {"app.kubernetes.io/managed-by": "kaiops"}
    result = lab_plan(objects=LAB + [partly], owned_labels=OWNED)
    assert result["leftovers"] == [] and any("not ours" in p for p in result["problems"])


def test_plan_under_check_mode_refuses_nothing_and_runs_nothing():
    result = lab_plan(objects=LAB + [queue("kaiops-gpu-access-zero-limit", 0)], check_mode=True)
    assert result["problems"] == [] and set(result["skipped"]) == set(NEEDS)


def test_unreadable_sections_are_recorded_not_fatal():
    client = FakeClient(objects=LAB, served=["scheduling.run.ai/v2"], forbidden=[("v1", "Node")])
    raw = GpuAccessClient(client).configuration("kai-scheduler")
    assert raw["access"]["nodes"] == "forbidden" and raw["nodes"] is None
    result = plan.build_plan(raw, OPTIONS, KAI, False)
    # nodes unknown: no refusal for want of a GPU node
    assert result["candidate_nodes"] == [] and result["problems"] == []
    raw = GpuAccessClient(FakeClient(objects=LAB[:3])).configuration("kai-scheduler")
    assert raw["access"]["queues"] == "absent"
    assert plan.queues(raw, ["default-queue"]) == {
        "default-queue": {"exists": None, "gpu_limit": None, "parent": None}
    }


def test_case_state_reads_the_case_its_kai_objects_and_the_reservation_pods():
    client = FakeClient(objects=[])
    raw = GpuAccessClient(client).case_state("kaiops-gpu-access", "fractional")
    assert raw["pods"] == [] and raw["access"] == {
        "pod_groups": "absent",
        "bind_requests": "absent",
        "configmaps": "ok",
        "reservation_pods": "ok",
    }
    reads = [entry[1:5] for entry in client.log]
    assert reads[0] == ("v1", "Pod", "kaiops-gpu-access", "kaiops.dev/gpu-access-case=fractional")
    assert ("v1", "Pod", "kai-resource-reservation", "app=kai-resource-reservation") in reads
