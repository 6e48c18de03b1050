"""module_utils/inventory/: collect() over a faked client, analyse() over YAML cases."""

import copy
import json

import pytest
import yaml
from conftest import AFFECTED_RANGE, fixture_path
from fakeapi import FakeClient

from ansible_collections.kaiops.runbooks.plugins.module_utils.errors import KaiopsError
from ansible_collections.kaiops.runbooks.plugins.module_utils.inventory.client import (
    InventoryClient,
)
from ansible_collections.kaiops.runbooks.plugins.module_utils.inventory.service import (
    analyse,
    component,
    helm_from_secrets,
    is_kai_component,
    sharing_configmaps,
    verdict,
    verdict_flags,
)

RANGE = AFFECTED_RANGE

with open(fixture_path("inventory_cases.yml")) as _handle:
    CASES = yaml.safe_load(_handle)

# What each expectation key reads from the inventory.
EXTRACT = {
    "status": lambda inv: inv["status"],
    "verdict": lambda inv: inv["exposure"]["verdict"],
    "version": lambda inv: inv["kai"]["version"],
    "version_in_range": lambda inv: inv["exposure"]["version_in_range"],
    "gpu_sharing": lambda inv: inv["gpu_sharing"]["enabled"],
    "gpu_sharing_source": lambda inv: inv["gpu_sharing"]["source"],
    "fraction_pods": lambda inv: inv["affected_path"]["fraction_pods"],
    "configmaps": lambda inv: inv["affected_path"]["configmaps"],
    "configmaps_without_data": lambda inv: inv["affected_path"]["configmaps_without_data"],
    "trigger_ready": lambda inv: inv["affected_path"]["trigger_ready_configmaps"],
    "nil_map": lambda inv: inv["symptoms"]["bind_requests_nil_map"],
    "gpu_nodes": lambda inv: inv["gpu_nodes"]["count"],
    "gpus_total": lambda inv: inv["gpu_nodes"]["gpus_total"],
    "time_slicing": lambda inv: inv["gpu_nodes"]["hints"]["time_slicing"],
    "mig": lambda inv: inv["gpu_nodes"]["hints"]["mig_strategies"],
    "fake_gpu_nodes": lambda inv: inv["gpu_nodes"]["hints"]["fake_gpu_nodes"],
    "helm_revision": lambda inv: inv["kai"]["helm"].get("revision"),
    "restart_threshold_exceeded": lambda inv: inv["restart_threshold_exceeded"],
    "access_nodes": lambda inv: inv["access"]["nodes"],
    "access_cluster_policies": lambda inv: inv["access"]["cluster_policies"],
    "access_kai_config": lambda inv: inv["access"]["kai_config"],
}


def load_objects(name):
    with open(fixture_path("clusters", name + ".yml")) as handle:
        return yaml.safe_load(handle)


def apply_changes(data, changes):
    data = copy.deepcopy(data)
    objects = [o for o in data["objects"] if o["metadata"]["name"] not in changes.get("drop", [])]
    for obj in objects:
        if obj["kind"] == "Deployment" and "image_tag" in changes:
            for container in obj["spec"]["template"]["spec"]["containers"]:
                repo = container["image"].split(":")[0]
                tag = changes["image_tag"]
                container["image"] = repo + (tag if tag.startswith("@") else ":" + tag)
        if obj["metadata"]["name"] == "admission" and "admission_args" in changes:
            obj["spec"]["template"]["spec"]["containers"][0]["args"] = changes["admission_args"]
        if obj["kind"] == "Config" and "config_sharing" in changes:
            obj["spec"]["admission"]["gpuSharing"] = changes["config_sharing"]
    objects = [o for o in objects if o["apiVersion"] not in changes.get("unserve", [])]
    served = [s for s in data.get("served") or [] if s not in changes.get("unserve", [])]
    return FakeClient(
        objects=objects,
        served=served,
        version=data.get("version", "v1.35.4"),
        forbidden=changes.get("forbidden", []),
    )


def inventory_for(client, **kwargs):
    raw = InventoryClient(client).collect("kai-scheduler", "kai-scheduler")
    return analyse(
        raw,
        cluster="c1",
        affected_range=kwargs.pop("affected_range", RANGE),
        restart_threshold=kwargs.pop("restart_threshold", 5),
        **kwargs,
    )


@pytest.mark.parametrize("case", CASES, ids=[c["id"] for c in CASES])
def test_analyse_matches_case(case):
    client = apply_changes(load_objects(case["fixture"]), case.get("changes", {}))
    inventory = inventory_for(client)
    got = {key: EXTRACT[key](inventory) for key in case["expect"]}
    assert got == case["expect"]
    json.dumps(inventory)  # the module returns it as JSON


def test_collect_request_count_does_not_grow_with_pods():
    data = load_objects("kai-sharing")
    base = apply_changes(data, {})
    inventory_for(base)
    more = copy.deepcopy(data)
    more["objects"] += [
        {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p%d" % i, "namespace": "team-b"}}
        for i in range(500)
    ]
    bigger = apply_changes(more, {})
    inventory_for(bigger)
    assert bigger.calls == base.calls <= 12


def test_collect_reads_secrets_and_cluster_pods_as_metadata_only():
    client = apply_changes(load_objects("kai-sharing"), {})
    raw = InventoryClient(client).collect("kai-scheduler", "kai-scheduler")
    lists = {(e[2], e[3]): e for e in client.log if e[0] == "list"}
    assert lists[("Secret", "kai-scheduler")][-1] is True
    assert lists[("Secret", "kai-scheduler")][4] == "owner=helm,name=kai-scheduler"
    assert lists[("Pod", None)][-1] is True
    assert "SECRET-RELEASE-PAYLOAD" not in json.dumps(raw)
    # ConfigMaps are listed only where GPU-sharing pods run.
    assert [k for k in lists if k[0] == "ConfigMap"] == [
        ("ConfigMap", None),
        ("ConfigMap", "team-a"),
    ]


def test_collect_unreachable_raises():
    with pytest.raises(KaiopsError) as info:
        InventoryClient(FakeClient(unreachable=True)).collect("kai-scheduler")
    assert info.value.status == "unreachable"


def test_analyse_rejects_bad_range_before_anything():
    with pytest.raises(KaiopsError, match="Failed to parse version range"):
        analyse({}, cluster="c", affected_range="0.16")


@pytest.mark.parametrize(
    ("facts", "expected"),
    [
        (
            {
                "installed": False,
                "version_in_range": None,
                "path_in_use": True,
                "gpu_sharing_enabled": True,
            },
            "not_installed",
        ),
        (
            {
                "installed": True,
                "version_in_range": None,
                "path_in_use": True,
                "gpu_sharing_enabled": True,
            },
            "unknown",
        ),
        (
            {
                "installed": True,
                "version_in_range": False,
                "path_in_use": True,
                "gpu_sharing_enabled": True,
            },
            "not_exposed",
        ),
        (
            {
                "installed": True,
                "version_in_range": True,
                "path_in_use": True,
                "gpu_sharing_enabled": False,
            },
            "exposed",
        ),
        (
            {
                "installed": True,
                "version_in_range": True,
                "path_in_use": False,
                "gpu_sharing_enabled": True,
            },
            "latent",
        ),
        (
            {
                "installed": True,
                "version_in_range": True,
                "path_in_use": False,
                "gpu_sharing_enabled": False,
            },
            "not_exposed",
        ),
    ],
)
def test_verdict_rules_in_order(facts, expected):
    assert verdict(facts)[0] == expected


def test_sharing_configmaps_trigger_needs_single_pod_owner_and_no_data():
    pod = {
        "metadata": {
            "name": "p",
            "namespace": "n",
            "uid": "u1",
            "annotations": {"runai/shared-gpu-configmap": "p-shared"},
        }
    }
    owner = {"apiVersion": "v1", "kind": "Pod", "name": "p", "uid": "u1"}
    cms = {
        "n": [
            {"metadata": {"name": "p-shared-0", "ownerReferences": [owner]}},
            {"metadata": {"name": "p-shared-1", "ownerReferences": [owner, dict(owner, uid="u2")]}},
            {"metadata": {"name": "p-shared-i0", "ownerReferences": [owner]}, "data": {"a": "b"}},
            {"metadata": {"name": "p-shared-0-evar", "ownerReferences": [owner]}},
            {"metadata": {"name": "p-shared-x"}},
        ]
    }
    found = {c["name"]: c for c in sharing_configmaps([pod], cms)}
    assert set(found) == {"p-shared-0", "p-shared-1", "p-shared-i0", "p-shared-0-evar"}
    assert [n for n, c in sorted(found.items()) if c["trigger_ready"]] == ["p-shared-0"]
    assert found["p-shared-0-evar"]["role"] == "env"


def test_component_sums_restarts_of_matching_pods_only():
    dep = {
        "metadata": {"name": "binder"},
        "spec": {
            "replicas": 2,
            "selector": {"matchLabels": {"app": "binder"}},
            "template": {"spec": {"containers": [{"name": "binder", "image": "b:v1"}]}},
        },
        "status": {"readyReplicas": 1},
    }
    pods = [
        {
            "metadata": {"labels": {"app": "binder"}},
            "status": {"containerStatuses": [{"name": "binder", "restartCount": 2}]},
        },
        {
            "metadata": {"labels": {"app": "binder"}},
            "status": {"containerStatuses": [{"name": "binder", "restartCount": 3}]},
        },
        {
            "metadata": {"labels": {"app": "other"}},
            "status": {"containerStatuses": [{"name": "binder", "restartCount": 50}]},
        },
    ]
    comp = component(dep, pods)
    assert (comp["restarts"], comp["pods"], comp["ready_replicas"], comp["replicas"]) == (
        5,
        2,
        1,
        2,
    )
    assert comp["containers"][0]["tag"] == "v1"


def test_helm_from_secrets_keeps_latest_revision():
    secrets = [
        {"metadata": {"labels": {"name": "r", "version": "9", "status": "superseded"}}},
        {"metadata": {"labels": {"name": "r", "version": "10", "status": "deployed"}}},
        {"metadata": {"labels": {"name": "r", "version": "x"}}},
    ]
    assert helm_from_secrets(secrets) == {
        "r": {"release": "r", "revision": 10, "status": "deployed"}
    }


def _deployment(name, args=None, annotations=None, image="ghcr.io/x/app:v1"):
    return {
        "metadata": {"name": name, "annotations": annotations or {}},
        "spec": {
            "template": {
                "spec": {"containers": [{"name": "c", "image": image, "args": args or []}]}
            }
        },
    }


@pytest.mark.parametrize(
    "name, annotations, release, expected",
    [
        ("binder", {}, None, True),
        ("admission", {}, None, True),
        ("kai-operator", {}, None, True),
        ("pod-grouper", {}, None, True),
        ("podgroup-controller", {}, None, True),
        ("queue-controller", {}, None, True),
        ("node-scale-adjuster", {}, None, True),
        ("kai-scheduler-default", {}, None, True),
        ("kai-scheduler-shard-b", {}, None, True),
        ("renamed", {"meta.helm.sh/release-name": "kai-scheduler"}, "kai-scheduler", True),
        ("renamed", {"meta.helm.sh/release-name": "other"}, "kai-scheduler", False),
        ("unrelated-app", {}, "kai-scheduler", False),
        ("binder-sidecar-of-someone", {}, None, False),
    ],
)
def test_is_kai_component(name, annotations, release, expected):
    assert is_kai_component(_deployment(name, annotations=annotations), release) is expected


def test_verdict_flags_keeps_only_the_flags_that_decide_a_verdict():
    args = [
        "binder",
        "--api-token=s3cr3t",
        "--password",
        "hunter2",
        "--scheduler-name",
        "kai-scheduler",
        "--resource-reservation-namespace",
        "kai-resource-reservation",
        "--resource-reservation-allocation-timeout=40",
        "--plugins",
        '{"gpusharing":{"enabled":true}}',
        "--fake-gpu-nodes",
        "--qps",
        "50",
        "--standin-configmap-write=race-fix-guarded",
        "--gpu-sharing-enabled",
        "true",
    ]
    assert verdict_flags(args) == [
        "--scheduler-name=kai-scheduler",
        "--resource-reservation-namespace=kai-resource-reservation",
        "--resource-reservation-allocation-timeout=40",
        '--plugins={"gpusharing":{"enabled":true}}',
        "--fake-gpu-nodes",
        "--standin-configmap-write=race-fix-guarded",
        "--gpu-sharing-enabled=true",
    ]


def test_inventory_lists_only_kai_components_and_records_no_args():
    """Issue 15: an unrelated Deployment in the KAI namespace is no component, and no container
    records its args (a --api-token there reached inventory.json and tasks.jsonl)."""
    data = load_objects("kai-sharing")
    planted = copy.deepcopy(data)
    planted["objects"].append(
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": "unrelated-app", "namespace": "kai-scheduler"},
            "spec": {
                "selector": {"matchLabels": {"app": "u"}},
                "template": {
                    "spec": {
                        "containers": [
                            {
                                "name": "u",
                                "image": "busybox:1.36",
                                "args": ["--api-token=CANARY-IN-ARGS"],
                                "env": [
                                    {"name": "DATABASE_URL", "value": "postgres://a:CANARY@db"}
                                ],
                            }
                        ]
                    }
                },
            },
        }
    )
    inventory = inventory_for(apply_changes(planted, {}))
    names = [c["name"] for c in inventory["kai"]["components"]]
    assert names == ["admission", "binder", "kai-operator", "kai-scheduler-default"]
    assert "CANARY" not in json.dumps(inventory)
    for comp in inventory["kai"]["components"]:
        for container in comp["containers"]:
            assert set(container) == {
                "name",
                "image",
                "repository",
                "tag",
                "digest",
                "flags",
                "restarts",
            }
    binder = inventory["kai"]["binder"]["containers"][0]
    assert binder["flags"] == ["--fake-gpu-nodes"] and binder["tag"] == "v0.16.13"
    assert inventory["kai"]["binder"]["containers"][0]["image"].endswith("binder:v0.16.13")
    assert inventory["gpu_sharing"]["admission_arg"] is True


def test_a_standin_is_named_next_to_its_version():
    from ansible_collections.kaiops.runbooks.plugins.module_utils.inventory import report, service

    def binder(args, labels=None):
        container = {"name": "binder", "image": "r/binder:v0.16.13", "args": args}
        return {
            "metadata": {"name": "binder", "labels": labels or {}},
            "spec": {"template": {"spec": {"containers": [container]}}},
        }

    # what runs decides: the stand-in's own flag on its container
    assert (
        service.component(binder(["binder", "--standin-release=v0.16.13"]), [])["implementation"]
        == "standin"
    )
    assert service.component({"metadata": {"name": "binder"}}, [])["implementation"] == "kai"
    # KAI's operator keeps labels it does not own: the real KAI installed over the stand-in kept
    # the stand-in's label on a Deployment running KAI's binder (seen on the lab) - still KAI
    kept = binder(
        ["--scheduler-name", "kai-scheduler"], {"kaiops.dev/kai-implementation": "standin"}
    )
    assert service.component(kept, [])["implementation"] == "kai"
    cell = report._version_cell({"version": "v0.16.13", "implementation": "standin",
                                 "implementation_label": "KAI stand-in"})  # fmt: skip
    assert cell == "v0.16.13 (KAI stand-in)"
    assert report._version_cell({"version": "v0.16.13", "implementation": "kai"}) == "v0.16.13"
