"""kai/facts.py: the one reading of a running component's boolean flags, which the inventory,
the Pending-pod diagnosis and gpu_access's plan share (issue 20: what runs is read in one place),
and the one reading of a GPU node's sharing labels, which the inventory and gpu_access share."""

import pytest

from ansible_collections.kaiops.runbooks.plugins.module_utils.gpu_access import plan
from ansible_collections.kaiops.runbooks.plugins.module_utils.gpu_access import (
    service as gpu_access,
)
from ansible_collections.kaiops.runbooks.plugins.module_utils.inventory import service as inventory
from ansible_collections.kaiops.runbooks.plugins.module_utils.kai import facts
from ansible_collections.kaiops.runbooks.plugins.module_utils.scan import pending

FLAG = facts.SHARING_ARG


@pytest.mark.parametrize(
    ("args", "value"),
    [
        ([], None),
        (["--other=true"], None),
        ([FLAG], True),
        ([FLAG + "=true"], True),
        ([FLAG + "=1"], True),
        ([FLAG + "=T"], True),
        ([FLAG + "=false"], False),
        ([FLAG + "=0"], False),
        ([FLAG + "=yes"], None),  # Go's ParseBool refuses it: the program would not start
        ([FLAG + "=false", FLAG], True),  # the last one wins, as in Go's flag parsing
        ([FLAG, FLAG + "=false"], False),
        ([FLAG + "-x=true"], None),  # another flag with the same start
    ],
)
def test_a_boolean_flag_reads_as_go_reads_it(args, value):
    assert facts.bool_flag(args, FLAG) is value


def _admission(args):
    return {
        "metadata": {"name": facts.ADMISSION, "namespace": "kai-scheduler"},
        "spec": {"template": {"spec": {"containers": [{"name": "admission", "args": args}]}}},
    }


CONFIG_ON = {"spec": {"admission": {"gpuSharing": True}}}


@pytest.mark.parametrize(
    ("args", "enabled"),
    [([FLAG], True), ([FLAG + "=1"], True), ([FLAG + "=false"], False), (["--port=9443"], False)],
)
def test_the_inventory_the_diagnosis_and_gpu_access_agree_on_the_running_admission(args, enabled):
    """kai-config says on in every case: the running admission's flag decides, and one without the
    flag has sharing off (the operator renders it only when sharing is on). Before, the inventory
    read only `=true`, the diagnosis fell back to kai-config, gpu_access read `=1` as off."""
    deployment = _admission(args)
    read = {
        "inventory": inventory._gpu_sharing(
            CONFIG_ON, {"containers": [{"flags": inventory.verdict_flags(args)}]}
        )["enabled"],
        "diagnosis": pending.sharing([deployment], CONFIG_ON, "kai-scheduler")["enabled"],
        "gpu_access": plan.enforcement({"kai_config": CONFIG_ON, "deployments": [deployment]})[
            "gpu_sharing"
        ]["enabled"],
    }
    assert read == dict.fromkeys(read, enabled)


def test_with_no_admission_running_kai_config_says():
    assert pending.sharing([], CONFIG_ON, "kai-scheduler")["enabled"] is True
    assert inventory._gpu_sharing(CONFIG_ON, None)["enabled"] is True


L = facts.NODE_LABELS


@pytest.mark.parametrize(
    ("labels", "mechanisms"),
    [
        ({}, set()),
        ({L["mig_strategy"]: "none"}, set()),  # GPU feature discovery's "no MIG"
        ({L["mig_strategy"]: "mixed"}, {"mig"}),
        ({L["replicas"]: "1"}, set()),
        ({L["replicas"]: "4"}, {"time-slicing"}),
        (
            {L["replicas"]: "four"},
            set(),
        ),  # no count declares nothing (gpu_access took it for sharing)
        ({L["replicas"]: "0"}, set()),
        ({L["sharing_strategy"]: "time-slicing"}, {"time-slicing"}),
        ({L["sharing_strategy"]: "mps", L["replicas"]: "2"}, {"mps", "time-slicing"}),
        ({L["mps_capable"]: "true"}, {"mps"}),
    ],
)
def test_the_inventory_and_gpu_access_read_a_nodes_sharing_labels_alike(labels, mechanisms):
    node = {
        "metadata": {"name": "gpu-1", "labels": labels},
        "status": {"capacity": {"nvidia.com/gpu": "1"}},
    }
    assert facts.node_sharing(labels) == mechanisms
    hints = inventory.gpu_nodes([node], [])["hints"]
    assert {"time-slicing": hints["time_slicing"], "mps": hints["mps"]} == {
        m: m in mechanisms for m in ("time-slicing", "mps")
    }
    assert gpu_access._node_mechanisms([node])[0] == mechanisms
