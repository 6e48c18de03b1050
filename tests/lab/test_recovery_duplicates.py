"""KAI-Scheduler #1673 on the lab's real node, after the upgrade past it (issue 22).

The real node has two GPUs. The build with fault ``duplicate-reservation`` binds pod A (0.5 of a
GPU) and gives its GPU group two reservation pods, one GPU each. The healthy build then runs (as
KAI from v0.16.0 on, which makes no duplicates but leaves the ones there): pod B (0.75, a group of
its own) cannot get a GPU, the kubelet refuses its reservation pod, and B stays Pending. diagnose
names the duplicates; recovery.yml's ``delete_duplicate_reservation_pods`` deletes the one whose
GPU A does not read (its capabilities ConfigMap says which), and B binds. A keeps its GPU.
"""

from __future__ import annotations

import json
import subprocess

import pytest
from kailab import kai
from test_canary import BIN, REPO, run_env
from test_diagnose import _bindrequests, _reservation_pods, diagnose
from test_kai import (  # noqa: F401 - started_with: a fixture, it puts the lab's build back
    fraction_pod,
    get,
    started_with,
    wait_for,
)

STEP = "delete_duplicate_reservation_pods"
INDEX = "run.ai/reserve_for_gpu_index"  # the GPU a reservation pod holds, written once it runs


def _group(kube, namespace: str, name: str) -> str:
    pod = get(kube, "pod", name, "-n", namespace) or {}
    return (pod.get("metadata", {}).get("labels") or {}).get("runai-gpu-group", "")


def _bound(kube, namespace: str, name: str) -> str:
    return ((get(kube, "pod", name, "-n", namespace) or {}).get("spec") or {}).get("nodeName")


def _refused(kube, namespace: str, name: str) -> bool:
    groups = {
        g
        for b in _bindrequests(kube, namespace, name)
        for g in b["spec"].get("selectedGPUGroups") or []
    }
    return any(
        (r.get("status") or {}).get("reason") == "UnexpectedAdmissionError"
        for r in _reservation_pods(kube, groups)
    )


def _devices_read(kube, namespace: str, name: str) -> str:
    pod = get(kube, "pod", name, "-n", namespace)
    prefix = pod["metadata"]["annotations"]["runai/shared-gpu-configmap"]
    cm = get(kube, "configmap", f"{prefix}-0", "-n", namespace) or {}
    return (cm.get("data") or {}).get("NVIDIA_VISIBLE_DEVICES", "")


def recovery(lab, root, steps: list[str]) -> dict:
    extra = {
        "kaiops_recovery_steps": steps,
        "kai_recovery_min_age_s": 0,
        "kai_recovery_window_s": 120,
    }
    done = subprocess.run(
        [str(BIN / "ansible-playbook"), "playbooks/recovery.yml", "-e", json.dumps(extra)],
        env=run_env(lab, root), cwd=REPO, capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    return json.loads((root / "latest" / "recovery.json").read_text())["clusters"]["lab"]


@pytest.mark.usefixtures("started_with")
def test_duplicate_reservation_pods_are_diagnosed_and_the_unread_one_deleted(
    lab, kube, namespace, tmp_path
):
    node = lab.cfg.node_name
    kai.install(lab, "patched", faults=("duplicate-reservation",))
    kube.apply(fraction_pod("dup-a", "0.5", real_node=node), namespace=namespace)
    wait_for(lambda: _bound(kube, namespace, "dup-a"), timeout=90, what="pod A bound")
    group = _group(kube, namespace, "dup-a")

    def holding():
        pods = [
            r
            for r in _reservation_pods(kube, {group})
            if r["metadata"].get("annotations", {}).get(INDEX)
        ]
        return pods if len(pods) == 2 else None

    held = wait_for(
        holding, timeout=60, what="two reservation pods of A's group, each with its GPU"
    )
    read = _devices_read(kube, namespace, "dup-a")
    unread = [r["metadata"]["name"] for r in held if r["metadata"]["annotations"][INDEX] != read]
    assert len(unread) == 1, (read, [r["metadata"]["annotations"] for r in held])

    kai.install(lab, "patched")  # past the bug: the duplicates stay
    kube.apply(fraction_pod("dup-b", "0.75", real_node=node), namespace=namespace)
    wait_for(
        lambda: _refused(kube, namespace, "dup-b"), timeout=90, what="B's reservation pod refused"
    )
    assert not _bound(kube, namespace, "dup-b")

    causes = {p["pod"]["name"]: p for p in diagnose(lab, namespace, tmp_path / "diagnose")}
    assert causes["dup-b"]["cause"] == "duplicate_reservation", causes["dup-b"]

    report = recovery(lab, tmp_path / "recovery", [STEP])
    deleted = [i["target"]["name"] for i in report["interventions"] if i.get("step") == STEP]
    assert deleted == unread, report["interventions"]
    outcomes = {o["finding"]: o["verdict"] for o in report["observation"]["outcomes"]}
    assert (
        outcomes[f"duplicate_reservation_pod:{kai.RESERVATION_NAMESPACE}/{unread[0]}"]
        == "recovered"
    )
    # B's retry comes after the binder gives up on its refused reservation pod (40 s)
    wait_for(lambda: _bound(kube, namespace, "dup-b"), timeout=90, what="B bound after the step")
    assert _bound(kube, namespace, "dup-a") == node
    kept = [r["metadata"]["name"] for r in _reservation_pods(kube, {group})]
    assert unread[0] not in kept and len(kept) == 1

    # The node's two GPUs free again before the next test (and before the build is switched
    # back, when a restarting binder could miss the pods' deletion): the healthy binder deletes
    # a group's reservation pod when its last pod goes.
    groups = {group, _group(kube, namespace, "dup-b")}
    kube("delete", "pod", "dup-a", "dup-b", "-n", namespace, "--wait=true")
    wait_for(
        lambda: not _reservation_pods(kube, groups),
        timeout=60,
        what="A's and B's reservation pods gone",
    )
