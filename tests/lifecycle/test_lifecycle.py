"""Lab lifecycle: a second `up` changes nothing; `down` leaves the machine as before.

Destructive: it takes the lab down. `make test` runs it last, on its own.
"""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "lab"))

from kailab import host  # noqa: E402
from kailab.cluster import Lab  # noqa: E402
from kailab.config import RESTORE, LabConfig  # noqa: E402


def kailab(*args: str, clusters: int = 1) -> subprocess.CompletedProcess:
    env = {**os.environ, "KAIOPS_LAB_CLUSTERS": str(clusters)}
    return subprocess.run(
        [sys.executable, "-m", "kailab", *args],
        cwd=REPO / "lab", capture_output=True, text=True, timeout=600, check=False, env=env,
    )  # fmt: skip


def machine() -> dict:
    """What a lab may change on the machine, as sets to compare before and after."""
    return {
        "links": {line.split(":")[1].strip().split("@")[0]
                  for line in host.run("ip", "-o", "link", "show").stdout.splitlines()},
        "netns": set(host.netns_names()) if Path("/run/netns").exists() else set(),
        "mounts": {t for _, t in host.mounts()},
        "cgroups": {str(p) for p in Path("/sys/fs/cgroup").glob("*/*") if p.is_dir()},
        # rules and chains, without the dump's date line and the packet counters
        "iptables": {re.sub(r"\[\d+:\d+\]", "", line)
                     for line in host.run("iptables-save").stdout.splitlines()
                     if line and not line.startswith("#")},
    }  # fmt: skip


def reachable(pin: Path, ip: str, port: int) -> bool:
    """Whether a TCP connection from inside the network namespace `pin` to ip:port is answered."""

    def connect() -> bool:
        try:
            socket.create_connection((ip, port), timeout=2).close()
        except OSError:
            return False
        return True

    return host.in_netns(pin, connect)


def test_second_up_is_a_noop_then_down_restores_the_machine():
    lab = Lab(LabConfig.from_env(), log=lambda _m: None)
    assert lab.cfg.kubeconfig.exists(), "the lab must be up before this test"
    before = {row["name"]: row["pid"] for row in lab.status()}
    assert all(before.values()), before

    up = kailab("up")
    assert up.returncode == 0, up.stderr
    after = {row["name"]: row["pid"] for row in lab.status()}
    assert after == before, "a second `up` restarted components"

    record = json.loads(lab.cfg.path(RESTORE).read_text())
    recorded = record["sysctls"]
    down = kailab("down")
    assert down.returncode == 0, down.stdout + down.stderr
    assert lab.leftovers(set(record["existing_paths"])) == []
    assert host.read_sysctls(recorded) == recorded
    assert not any(p.exists() for p in (lab.cfg.state_dir, lab.cfg.run_dir))
    assert not list(Path("/sys/fs/cgroup").glob("*/kubepods"))

    again = kailab("down")
    assert again.returncode == 0, "down on a machine without a lab must succeed"


def test_a_fleet_of_three_isolated_clusters_then_down_restores_the_machine():
    """LAB_CLUSTERS=3 from a machine without a lab: three clusters, each with its own API
    server, node, GPUs and KAI, none reaching another; a second `up` is a no-op; `down` with
    no LAB_CLUSTERS takes all three away and leaves the machine as it was."""
    before = machine()
    up = kailab("up", clusters=3)
    assert up.returncode == 0, up.stdout[-3000:] + up.stderr
    labs = [Lab(LabConfig.from_env(i), log=lambda _m: None) for i in (1, 2, 3)]
    status = kailab("status", clusters=3)
    assert status.returncode == 0, status.stdout
    assert status.stdout.count("KAI: release kai-scheduler") == 3, status.stdout
    for lab in labs:
        node = lab.kubectl("get", "node", lab.cfg.node_name, "-o", "json").stdout
        assert json.loads(node)["status"]["allocatable"]["nvidia.com/gpu"] == "2", lab.cfg.name
    for lab in labs:
        # every kubelet took its whole configuration (an unknown field is only warned about)
        log = lab.cfg.path("logs", "kubelet.log").read_text()
        assert "strict decoding error" not in log, (lab.cfg.name, log[:2000])
        # its pods' logs in its own folder: kubelets sharing /var/log/pods delete each other's
        logs = {p.name.split("_")[0] for p in lab.cfg.path("pod-logs").iterdir()}
        assert "kai-scheduler" in logs, (lab.cfg.name, logs)
        binder = lab.kubectl(
            "logs", "-n", "kai-scheduler", "deploy/binder", "--tail=1", check=False
        )
        assert binder.returncode == 0, (lab.cfg.name, binder.stderr)
    apis = {lab.cfg.name: lab.cfg.network.node_ip for lab in labs}
    for lab in labs[1:]:
        for name, ip in apis.items():
            own = name == lab.cfg.name
            assert reachable(lab.cfg.net_pin, ip, 6443) == own, (lab.cfg.name, name)
    pids = [{r["name"]: r["pid"] for r in lab.status()} for lab in labs]
    again = kailab("up", clusters=3)
    assert again.returncode == 0, again.stderr
    assert [{r["name"]: r["pid"] for r in lab.status()} for lab in labs] == pids

    records = [json.loads(lab.cfg.path(RESTORE).read_text()) for lab in labs]
    down = kailab("down")
    assert down.returncode == 0, down.stdout + down.stderr
    for lab, record in zip(labs, records, strict=True):
        assert lab.leftovers(set(record["existing_paths"])) == [], lab.cfg.name
    assert host.read_sysctls(records[0]["sysctls"]) == records[0]["sysctls"]
    assert machine() == before


def test_down_after_a_killed_up_still_cleans_up(tmp_path):
    lab = Lab(LabConfig.from_env(), log=lambda _m: None)
    log = tmp_path / "up.log"
    with open(log, "w") as out:
        up = subprocess.Popen(
            [sys.executable, "-u", "-m", "kailab", "up"], cwd=REPO / "lab", stdout=out,
            stderr=subprocess.STDOUT,
        )  # fmt: skip
    # kill it in the middle: once containerd is being started, the control plane runs
    deadline = time.monotonic() + 120
    while "start containerd" not in log.read_text() and time.monotonic() < deadline:
        assert up.poll() is None, log.read_text()
        time.sleep(0.1)
    up.kill()
    up.wait()
    assert host.lab_pids(lab.cfg), "nothing was running when `up` was killed"
    record = json.loads(lab.cfg.path(RESTORE).read_text())

    down = kailab("down")
    assert down.returncode == 0, down.stdout + down.stderr
    assert lab.leftovers(set(record["existing_paths"])) == []
    assert host.read_sysctls(record["sysctls"]) == record["sysctls"]
