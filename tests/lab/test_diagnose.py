"""diagnose.yml on the lab: Pending pods of every cause the stand-in produces without faults,
planted in a throwaway namespace, each given its planted cause (confusion table printed, 100 %
expected). Bounded: about a minute (the stand-in decides within a few scheduling cycles, the
playbook reads one namespace's pods).

Planted (kai-contract.md section 14, the stand-in's CONTRACT): a fraction in a queue that does
not exist (QueueDoesNotExist), one in a queue whose GPU limit is 0 (OverLimit), a fraction held
by a scheduling gate, a gang short of members (a PodGroup with minMember 3 and 2 pods), and a
pod asking for more whole GPUs than any node has (the stand-in writes no condition for it: the
rule reads the nodes' allocatable GPUs). Not planted: GPU sharing rejected - the stand-in's
admission refuses such a pod at creation, so it never exists to be Pending. The queue is the
only cluster-scoped object; it carries this run's label and is deleted by this test.
"""

from __future__ import annotations

import json
import subprocess
import time

from test_canary import BIN, REPO, run_env
from test_kai import fraction_pod, get, wait_for

DEADLINE_S = 90
LABEL = "kaiops.dev/labtest"


def queue(name: str, run: str, gpu_limit: int) -> dict:
    unlimited = {"quota": 0, "limit": -1, "overQuotaWeight": 1}
    return {
        "apiVersion": "scheduling.run.ai/v2",
        "kind": "Queue",
        "metadata": {"name": name, "labels": {LABEL: run}},
        "spec": {
            "parentQueue": "default-parent-queue",
            "resources": {
                "gpu": {"quota": 0, "limit": gpu_limit, "overQuotaWeight": 1},
                "cpu": unlimited,
                "memory": unlimited,
            },
        },
    }


def in_queue(pod: dict, name: str) -> dict:
    pod["metadata"]["labels"] = {"kai.scheduler/queue": name}
    return pod


def gang_member(name: str, group: str) -> dict:
    pod = fraction_pod(name)
    pod["metadata"]["annotations"]["pod-group-name"] = group  # the pod grouper skips it then
    return pod


def whole_gpus(name: str, gpus: int) -> dict:
    pod = fraction_pod(name)
    pod["metadata"]["annotations"] = {}
    container = pod["spec"]["containers"][0]
    container["resources"] = {"limits": {"nvidia.com/gpu": str(gpus)}}
    return pod


def planted(namespace: str, run: str) -> tuple[list[dict], dict]:
    missing, zero = f"kaiops-diag-none-{run}", f"kaiops-diag-zero-{run}"
    gang = {
        "apiVersion": "scheduling.run.ai/v2alpha2",
        "kind": "PodGroup",
        "metadata": {"name": "gang"},
        "spec": {"minMember": 3, "queue": "default-queue"},
    }
    objects = [
        in_queue(fraction_pod("noqueue-0"), missing),
        in_queue(fraction_pod("limit-0"), zero),
        fraction_pod("gated-0", gated=True),
        gang,
        gang_member("gang-0", "gang"),
        gang_member("gang-1", "gang"),
        whole_gpus("big-0", 64),  # more than any node: the real node has 2, KWOK nodes 8
    ]
    expected = {
        f"{namespace}/noqueue-0": "queue_missing",
        f"{namespace}/limit-0": "queue_over_limit",
        f"{namespace}/gated-0": "scheduling_gated",
        f"{namespace}/gang-0": "gang_waiting",
        f"{namespace}/gang-1": "gang_waiting",
        f"{namespace}/big-0": "no_gpu_fits",
    }
    return objects, expected


def decided(kube, namespace: str) -> bool:
    """The stand-in has acted on every planted pod: each has its PodGroup, and the two queue
    cases carry KAI's condition."""
    pods = (get(kube, "pods", "-n", namespace) or {}).get("items") or []
    groups = (get(kube, "podgroups.scheduling.run.ai", "-n", namespace) or {}).get("items") or []
    names = {g["metadata"]["name"]: g for g in groups}
    if len(pods) < 6 or any(
        (p["metadata"].get("annotations") or {}).get("pod-group-name") not in names for p in pods
    ):
        return False
    held = [
        g
        for g in groups
        if (g.get("spec") or {}).get("queue", "").startswith("kaiops-diag-")
        and (g.get("status") or {}).get("schedulingConditions")
    ]
    return len(held) == 2


def confusion(expected: dict, got: dict) -> float:
    rows: dict = {}
    for pod, want in expected.items():
        cell = rows.setdefault(want, {})
        cell[got.get(pod, "(not diagnosed)")] = cell.get(got.get(pod, "(not diagnosed)"), 0) + 1
    print("\nexpected cause    -> got (count)")
    for want, cell in sorted(rows.items()):
        print(f"{want:17} -> " + ", ".join(f"{k} {v}" for k, v in sorted(cell.items())))
    share = sum(1 for pod, want in expected.items() if got.get(pod) == want) / len(expected)
    print(f"expected: {100 * share:.0f} %")
    return share


def test_diagnose_gives_each_planted_pending_pod_its_cause(lab, kube, namespace, tmp_path):
    started = time.monotonic()
    run = namespace.rsplit("-", 1)[-1]
    objects, expected = planted(namespace, run)
    zero = queue(f"kaiops-diag-zero-{run}", run, gpu_limit=0)
    try:
        kube.apply(zero)
        kube.apply(*objects, namespace=namespace)
        wait_for(lambda: decided(kube, namespace), timeout=45, what="the stand-in's decisions")
        root = tmp_path / "evidence"
        done = subprocess.run(
            [str(BIN / "ansible-playbook"), "playbooks/diagnose.yml",
             "-e", json.dumps({"kai_diagnose_namespaces": [namespace]})],
            env=run_env(lab, root), cwd=REPO, capture_output=True, text=True,
            timeout=DEADLINE_S, check=False,
        )  # fmt: skip
        assert done.returncode == 0, done.stdout + done.stderr
        report = json.loads((root / "latest" / "report.json").read_text())
        pods = report["clusters"]["lab"]["pods"]
        got = {f"{p['pod']['namespace']}/{p['pod']['name']}": p["cause"] for p in pods}
        assert confusion(expected, got) == 1.0, json.dumps(pods, indent=1)
        assert set(got) == set(expected)  # only this namespace's pods
        for pod in pods:
            assert pod["evidence"], pod
    finally:
        kube(
            "delete",
            "queues.scheduling.run.ai",
            zero["metadata"]["name"],
            "--wait=false",
            check=False,
        )
    assert time.monotonic() - started < DEADLINE_S
