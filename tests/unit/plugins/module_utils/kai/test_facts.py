"""kai/facts.py: the one reading of a running component's boolean flags, which the inventory,
the Pending-pod diagnosis and gpu_access's plan share (issue 20: what runs is read in one place)."""

import pytest

from ansible_collections.kaiops.runbooks.plugins.module_utils.gpu_access import plan
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
