#!/usr/bin/env python3
"""How the collection's cost on the controller grows with the number of clusters (issue 21).

Starts one fake API server per host (tests/unit/fakeapi.py, serving the unit tests' cluster
fixture with KAI and GPU sharing: the same objects a lab cluster answers with), writes an
inventory of N hosts, and runs each playbook asked with ``--forks F``, for each N and F:

- ``inventory``: ``playbooks/inventory.yml`` (read-only: every host's KAI release, components,
  RBAC and nodes read, its report and bundle written);
- ``rollout-check``: ``rollout.yml --check`` (the request judged, preflight's reads and gates, the
  snapshots of KAI's namespace and release, the fleet report), with the unit tests' fake helm
  answering the release's history and values.

Prints one row per run: wall time, per host, the controller's CPU seconds (ansible-playbook and
every fork and module it ran, from getrusage of the children), the share of the machine's cores
they used (near the core count: the controller is the limit, not the clusters), the peak
resident memory of the largest single process, and the exit status. A run that fails, or whose
report does not hold every host, stays in the table and fails the benchmark.

What it measures is the controller: the fake servers answer in microseconds, so the time is
Ansible's and the modules', not an API server's. On this 2-core machine forks above the cores
only queue.

Usage: python tools/fleet_cost.py [--hosts 1 3 10 30 100] [--forks 5 20 50]
                                  [--playbooks inventory rollout-check]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests" / "unit"))
from fakeapi import FakeAPI  # noqa: E402

FIXTURE = REPO / "tests" / "unit" / "fixtures" / "clusters" / "kai-sharing.yml"
BIN = Path(sys.executable).parent
# rollout.yml's request for each host (the unit tests' own: a version pair, thresholds, the
# regression evidence and the rehearsal waived, since neither is on record for fake clusters)
PLAYBOOKS = {
    "inventory": ["playbooks/inventory.yml", "-e", "kai_inventory_use_helm=false"],
    "rollout-check": ["rollout.yml", "--check"],
}


def _rollout_request() -> dict:
    from playbooks.test_rollout import REQUEST  # noqa: PLC0415 (the unit tests' request)

    waiver = {"reason": "fleet-cost bench", "approved_by": "bench"}
    return dict(REQUEST, kaiops_rollout_rehearsal_waiver=waiver)


def _fake_helm(folder: Path) -> Path:
    """The unit tests' fake helm on a folder of its own (put first on PATH)."""
    from playbooks.test_rollout import FAKE_HELM  # noqa: PLC0415

    helm_dir = folder / "helm-bin"
    helm_dir.mkdir()
    (helm_dir / "helm").write_text(FAKE_HELM)
    (helm_dir / "helm").chmod(0o700)
    return helm_dir


def _serve_kai(api) -> None:
    """KAI's CRDs served, as rollout.yml's preflight reads them (kai_cluster in the unit tests)."""
    import fakeapi  # noqa: PLC0415

    fakeapi.KINDS[("kai.scheduler/v1", "SchedulingShard")] = ("schedulingshards", False)
    fakeapi.KINDS[("scheduling.run.ai/v2", "Queue")] = ("queues", False)
    api.served |= {"kai.scheduler/v1", "scheduling.run.ai/v2"}


def _inventory(folder: Path, apis: list, playbook: str) -> Path:
    extra = _rollout_request() if playbook == "rollout-check" else {}
    hosts = {
        "c%03d" % i: {
            **extra,
            "kaiops_kubeconfig": api.kubeconfig(folder / ("c%03d.kubeconfig" % i)),
            "kaiops_change_owner": "fleet-cost bench",
        }
        for i, api in enumerate(apis)
    }
    path = folder / "hosts.yml"
    path.write_text(yaml.safe_dump({"all": {"hosts": hosts}}))
    return path


def _children_cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run(playbook: str, hosts: int, forks: int, apis: list) -> dict:
    folder = Path(tempfile.mkdtemp(prefix="kaiops-fleet-cost-"))
    env = dict(os.environ)
    env.pop("KUBERNETES_SERVICE_HOST", None)
    env.update(
        KUBECONFIG="/nonexistent/kubeconfig",
        ANSIBLE_CONFIG=str(REPO / "ansible.cfg"),
        KAIOPS_EVIDENCE_ROOT=str(folder / "evidence"),
        HOME=str(folder),
        ANSIBLE_NOCOLOR="1",
        PATH=os.pathsep.join([str(_fake_helm(folder)), str(BIN), env.get("PATH", "")]),
    )
    argv = [str(BIN / "ansible-playbook"), "-i", str(_inventory(folder, apis[:hosts], playbook))]
    argv += PLAYBOOKS[playbook] + ["--forks", str(forks)]
    cpu_before, started = _children_cpu_s(), time.monotonic()
    done = subprocess.run(argv, env=env, cwd=REPO, capture_output=True, text=True, check=False)
    seconds = time.monotonic() - started
    cpu_s = _children_cpu_s() - cpu_before
    # the largest resident set of any child process so far (KiB on Linux): runs go from small to
    # large, so each row's figure is its own or a smaller run's
    peak_mib = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    bundle = folder / "evidence" / "latest"
    report = bundle / ("inventory.json" if playbook == "inventory" else "report.json")
    read = len(json.loads(report.read_text()).get("clusters") or {}) if report.exists() else 0
    return {
        "playbook": playbook,
        "hosts": hosts,
        "forks": forks,
        "rc": done.returncode,
        "seconds": round(seconds, 1),
        "per_host_s": round(seconds / hosts, 2),
        "cpu_s": round(cpu_s, 1),
        "cpu_per_host_s": round(cpu_s / hosts, 2),
        # CPU seconds per wall second: near the core count, the controller is the limit
        "cores_busy": round(cpu_s / seconds, 2) if seconds else 0.0,
        "peak_rss_mib": round(peak_mib),
        "clusters_in_report": read,
        # rollout.yml --check exits 2 by design (the change steps did not run)
        "tail": "" if done.returncode in (0, 2) else (done.stdout + done.stderr)[-400:],
    }


def _print(row: dict) -> dict:
    print("%-14s %5d %5d %4d %7.1f %11.2f %7.1f %11.2f %11.2f %13d %19d" % (
        row["playbook"], row["hosts"], row["forks"], row["rc"], row["seconds"],
        row["per_host_s"], row["cpu_s"], row["cpu_per_host_s"], row["cores_busy"],
        row["peak_rss_mib"], row["clusters_in_report"]), flush=True)  # fmt: skip
    if row["tail"]:
        print("  " + row["tail"].replace("\n", "\n  "))
    return row


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hosts", type=int, nargs="+", default=[1, 3, 10, 30, 100])
    parser.add_argument("--forks", type=int, nargs="+", default=[5, 20, 50])
    parser.add_argument(
        "--playbooks", nargs="+", choices=sorted(PLAYBOOKS), default=list(PLAYBOOKS)
    )
    parser.add_argument("--json", help="also write the rows to this file")
    args = parser.parse_args(argv)
    apis = [FakeAPI.from_fixture(FIXTURE).start() for _ in range(max(args.hosts))]
    for api in apis:
        _serve_kai(api)
    rows = []
    try:
        print(f"controller: {os.cpu_count()} cores")
        print("playbook       hosts forks exit  wall s  per host s   CPU s  CPU/host s  cores busy"
              "  peak RSS MiB  clusters in report")  # fmt: skip
        for playbook in args.playbooks:
            for hosts in sorted(args.hosts):
                for forks in args.forks:
                    rows.append(_print(run(playbook, hosts, forks, apis)))
    finally:
        for api in apis:
            api.stop()
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1) + "\n")
    return 0 if all(r["clusters_in_report"] == r["hosts"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
