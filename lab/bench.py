"""Lab benchmark: prints figures, asserts nothing (targets live in the docs, not in tests).

  cold build   (only with --cold: empty module, build and program caches in a temp folder)
  warm up      `down` then `up` with every binary cached, until all nodes Ready
  down         time to delete the lab
  idle memory  resident memory of every lab process (KAI's pods included) after a quiet period
  KAI          helm install to every KAI Deployment rolled out; a `make lab-kai` switch;
               submit-to-bound and submit-to-Running p50/p95/p99 of N fraction pods on
               the KWOK nodes, from a watch on this machine's clock

Run: make lab-bench   (or: PYTHONPATH=lab python lab/bench.py [--cold] [--idle-seconds N])
"""

from __future__ import annotations

import argparse
import math
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from kailab import host, kai
from kailab.cluster import Lab
from kailab.config import LabConfig

REPO = Path(__file__).resolve().parents[1]


def timed(fn) -> float:
    started = time.monotonic()
    fn()
    return time.monotonic() - started


def rss_mib(pids) -> float:
    total = 0
    for pid in pids:
        try:
            for line in Path(f"/proc/{pid}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1])
        except OSError:
            continue
    return total / 1024


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    rank = max(0, min(len(ordered) - 1, math.ceil(q / 100 * len(ordered)) - 1))  # nearest rank
    return ordered[rank]


def fraction_latencies(lab: Lab, count: int, timeout: float = 300) -> dict:
    """Create `count` fraction pods at once on the KWOK nodes; a watch notes when each
    gets a node and when it is Running. Pods that never do count as missing."""
    import json

    ns = f"bench-{int(time.time())}"
    lab.kubectl("create", "namespace", ns)
    lab.kubectl("wait", "--for=create", "serviceaccount/default", "-n", ns, "--timeout=60s")
    kubectl = str(lab.binaries()["kubectl"])
    watch = subprocess.Popen(
        [kubectl, f"--kubeconfig={lab.cfg.kubeconfig}", "get", "pods", "-n", ns, "--watch",
         "-o", "jsonpath={.metadata.name} {.spec.nodeName} {.status.phase}{\"\\n\"}"],
        stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    pods = [
        {
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": f"f{i}", "annotations": {"gpu-fraction": "0.25"}},
            "spec": {
                "schedulerName": "kai-scheduler", "nodeSelector": {"type": "kwok"},
                "tolerations": [{"key": "kwok.x-k8s.io/node", "operator": "Exists"}],
                "containers": [{"name": "main", "image": "busybox"}],
            },
        }
        for i in range(count)
    ]  # fmt: skip
    submitted = time.monotonic()
    lab.kubectl(
        "create", "-n", ns, "-f", "-", input_text="\n---\n".join(json.dumps(p) for p in pods)
    )
    bound, running = {}, {}
    deadline = submitted + timeout
    while len(running) < count and time.monotonic() < deadline:
        line = watch.stdout.readline()
        if not line:
            break
        parts = line.split()
        now = time.monotonic() - submitted
        if len(parts) >= 2 and parts[1] not in ("Pending", "Running"):
            bound.setdefault(parts[0], now)
        if parts and parts[-1] == "Running":
            running.setdefault(parts[0], now)
    watch.kill()
    lab.kubectl("delete", "namespace", ns, "--wait=false")
    return {"count": count, "bound": list(bound.values()), "running": list(running.values())}


def kai_figures(lab: Lab, pods: int) -> list[tuple[str, float, str]]:
    figures = []
    lab.helm("uninstall", kai.RELEASE, "-n", kai.NAMESPACE, "--wait")
    figures.append(("KAI helm install to all rolled out", kai.install(lab, "pre")["seconds"], "s"))
    figures.append(
        ("make lab-kai switch (pre -> patched)", kai.install(lab, "patched")["seconds"], "s")
    )
    figures.append(
        ("make lab-kai switch (patched -> pre)", kai.install(lab, "pre")["seconds"], "s")
    )
    lat = fraction_latencies(lab, pods)
    for what in ("bound", "running"):
        got = lat[what]
        figures.append((f"{pods} fraction pods {what} (of {pods})", len(got), ""))
        for q in (50, 95, 99):
            figures.append((f"  submit-to-{what} p{q}", percentile(got, q), "s"))
    return figures


def reproduce(lab: Lab) -> None:
    """One full run of playbooks/reproduce.yml on the lab, as a user runs it."""
    venv_bin = Path(sys.executable).parent
    env = {**os.environ, "PATH": f"{venv_bin}:{lab.binaries()['helm'].parent}:{os.environ['PATH']}",
           "KUBECONFIG": str(lab.cfg.kubeconfig)}  # fmt: skip
    proc = subprocess.run(
        [str(venv_bin / "ansible-playbook"), "playbooks/reproduce.yml"],
        cwd=REPO, env=env, capture_output=True, text=True, check=False,
    )  # fmt: skip
    if proc.returncode != 0:
        print(f"reproduce.yml exited {proc.returncode}: {proc.stdout[-2000:]}", file=sys.stderr)


def kailab(*args: str) -> float:
    """Seconds one `python -m kailab` command takes (the fleet's as make runs it)."""
    started = time.monotonic()
    subprocess.run([sys.executable, "-m", "kailab", *args], cwd=REPO / "lab", check=True,
                   capture_output=True)  # fmt: skip
    return time.monotonic() - started


def fleet_figures(fleet: list[LabConfig], idle_seconds: float) -> list[tuple]:
    """LAB_CLUSTERS > 1: the fleet from down to every cluster Ready with KAI rolled out, each
    cluster's idle memory (its processes and its pods), and the time to take all of it down."""
    kailab("down")
    figures = [(f"warm lab-up, {len(fleet)} clusters with KAI", kailab("up"), "s")]
    time.sleep(idle_seconds)
    total = 0.0
    for cfg in fleet:
        mib = rss_mib(set(host.lab_pids(cfg)) | host.cgroup_pids(cfg.pod_cgroups))
        figures.append((f"  idle resident memory, {cfg.name}", mib, "MiB"))
        total += mib
    figures.append(("idle resident memory, the fleet", total, "MiB"))
    figures.append((f"lab-down, {len(fleet)} clusters", kailab("down"), "s"))
    figures.append(("lab-up again (for the next user)", kailab("up"), "s"))
    return figures


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--cold", action="store_true", help="also time a build from empty caches")
    parser.add_argument("--idle-seconds", type=float, default=30.0)
    parser.add_argument("--kai-pods", type=int, default=100, help="fraction pods to time (0: skip)")
    parser.add_argument(
        "--no-reproduce", action="store_true", help="skip timing playbooks/reproduce.yml"
    )
    args = parser.parse_args()
    quiet = lambda _m: None  # noqa: E731
    figures = []

    if args.cold:
        with tempfile.TemporaryDirectory() as tmp:
            # nothing cached: programs, Go build cache and downloaded modules
            env = {
                **os.environ,
                "KAIOPS_CACHE": tmp,
                "GOCACHE": f"{tmp}/gocache",
                "GOMODCACHE": f"{tmp}/gomod",
                "GOFLAGS": "-modcacherw",
            }
            started = time.monotonic()
            subprocess.run(
                [sys.executable, "-m", "kailab", "build"], cwd=REPO / "lab", env=env, check=True
            )
            figures.append(("cold build of all binaries", time.monotonic() - started, "s"))

    fleet = LabConfig.fleet_from_env()
    if len(fleet) > 1:
        figures += fleet_figures(fleet, args.idle_seconds)
        for name, value, unit in figures:
            print(f"{name:<40} {value:10.1f} {unit}")
        return 0
    lab = Lab(LabConfig.from_env(), log=quiet)
    lab.down()
    figures.append(("warm lab-up to all nodes Ready", timed(lab.up), "s"))
    time.sleep(args.idle_seconds)  # idle means idle: let start-up work settle before measuring
    pids = set(host.lab_pids(lab.cfg)) | host.cgroup_pids()
    figures.append(("idle lab + KAI resident memory", rss_mib(pids), "MiB"))
    figures.append(("lab processes counted", len(pids), ""))
    if args.kai_pods:
        figures += kai_figures(lab, args.kai_pods)
    if not args.no_reproduce:
        figures.append(
            ("reproduce.yml, both builds, all cases", timed(lambda: reproduce(lab)), "s")
        )
    figures.append(("lab-down (delete the lab)", timed(lab.down), "s"))
    figures.append(("lab-up again (for the next user)", timed(lab.up), "s"))

    for name, value, unit in figures:
        print(f"{name:<36} {value:10.1f} {unit}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
