"""A playbook that plants objects, killed part way and run again, converges (README item 9).

gpu_access.yml is started on the lab and sent SIGTERM once its namespace, its queue with GPU
limit 0 and a probe pod exist; its bundle must be kept and marked interrupted. The rerun must
recognise what the killed run left (labelled by the role), record its removal in its own bundle
and end complete; an object of the same name that the role did not create is still refused.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest
from test_canary import BIN, REPO, run_env

NAMESPACE = "kaiops-gpu-access"
ZERO_QUEUE = "kaiops-gpu-access-zero-limit"
# the policy case plants the queue, the fractional one a probe pod: enough to leave both behind
CASES = '{"kai_gpu_access_cases": ["policy_queue", "fractional"]}'


def playbook(lab, root: Path, *extra: str) -> subprocess.Popen:
    return subprocess.Popen(
        [str(BIN / "ansible-playbook"), "playbooks/gpu_access.yml", "-e", CASES, *extra],
        env=run_env(lab, root), cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
        text=True, start_new_session=True,
    )  # fmt: skip


def planted(kube) -> bool:
    queue = kube("get", "queues.scheduling.run.ai", ZERO_QUEUE, check=False)
    pods = kube("get", "pods", "-n", NAMESPACE, "-o", "name", check=False)
    return queue.returncode == 0 and bool(pods.stdout.strip())


def bundle_of(root: Path) -> Path:
    folders = [p for p in root.iterdir() if p.is_dir() and not p.is_symlink()]
    assert len(folders) == 1, folders
    return folders[0]


def events(bundle: Path) -> list[dict]:
    with open(bundle / "tasks.jsonl") as handle:
        return [json.loads(line) for line in handle]


@pytest.fixture()
def clean(kube):
    """No leftover of an earlier run before, and none after, whatever the test did."""
    for args in (("namespace", NAMESPACE), ("queues.scheduling.run.ai", ZERO_QUEUE)):
        kube("delete", *args, "--ignore-not-found", "--wait=true", "--timeout=120s", check=False)
    yield
    for args in (("namespace", NAMESPACE), ("queues.scheduling.run.ai", ZERO_QUEUE)):
        kube("delete", *args, "--ignore-not-found", "--wait=true", "--timeout=120s", check=False)


def test_gpu_access_killed_part_way_then_rerun_converges(lab, kube, clean, tmp_path):
    killed = playbook(lab, tmp_path / "killed")
    deadline = time.monotonic() + 240
    while time.monotonic() < deadline and killed.poll() is None and not planted(kube):
        time.sleep(0.5)
    assert killed.poll() is None, "gpu_access.yml ended before it planted anything"
    assert planted(kube), "no queue and probe pod within 240 s"
    os.killpg(killed.pid, signal.SIGTERM)
    out, _ = killed.communicate(timeout=120)
    interrupted = bundle_of(tmp_path / "killed")
    assert (interrupted / "status").read_text() == "interrupted\n", out[-3000:]
    assert kube("get", "namespace", NAMESPACE, check=False).returncode == 0, "nothing was left"

    rerun = playbook(lab, tmp_path / "rerun")
    out, _ = rerun.communicate(timeout=600)
    assert rerun.returncode == 0, out[-6000:]
    bundle = bundle_of(tmp_path / "rerun")
    assert (bundle / "status").read_text() == "complete\n"
    removed = {
        e["task"].split(" : ")[-1]
        for e in events(bundle)
        if e.get("changed") and "interrupted run of this role left behind" in e["task"]
    }
    assert removed == {
        "Remove the namespace an interrupted run of this role left behind",
        "Remove the queue an interrupted run of this role left behind",
    }, removed
    # what the rerun planted it removed again: nothing of either run is left
    assert kube("get", "namespace", NAMESPACE, check=False).returncode != 0
    assert kube("get", "queues.scheduling.run.ai", ZERO_QUEUE, check=False).returncode != 0


def test_a_queue_of_that_name_the_role_did_not_create_is_refused(lab, kube, clean, tmp_path):
    kube.apply(
        {
            "apiVersion": "scheduling.run.ai/v2",
            "kind": "Queue",
            "metadata": {"name": ZERO_QUEUE},
            "spec": {"resources": {"gpu": {"quota": 0, "limit": 0, "overQuotaWeight": 1}}},
        }
    )
    run = playbook(lab, tmp_path / "refused")
    out, _ = run.communicate(timeout=300)
    assert run.returncode != 0, out[-4000:]
    assert "does not carry this role's labels" in out, out[-4000:]
    # neither reused nor deleted
    assert kube("get", "queues.scheduling.run.ai", ZERO_QUEUE, check=False).returncode == 0
    assert kube("get", "namespace", NAMESPACE, check=False).returncode != 0
