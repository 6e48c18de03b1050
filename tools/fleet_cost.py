#!/usr/bin/env python3
"""How the collection's cost on the controller grows with the number of clusters (issue 21).

Starts one fake API server per host (tests/unit/fakeapi.py, serving the unit tests' cluster
fixture with KAI and GPU sharing: the same objects a lab cluster answers with), writes an
inventory of N hosts, and runs ``playbooks/inventory.yml`` (read-only: every host's KAI release,
components, RBAC and nodes read, its report and bundle written) with ``--forks F``, for each N
and F asked. Prints one row per run: wall time, per host, the controller's peak resident memory
(the largest single process: ansible-playbook or a fork, from getrusage of the children) and
the exit status. A run that fails stays in the table: its figures are not a pass.

What it measures is the controller: the fake servers answer in microseconds, so the time is
Ansible's and the modules', not an API server's. On this 2-core machine forks above the cores
only queue.

Usage: python tools/fleet_cost.py [--hosts 1 10 50 100] [--forks 5 20]
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


def _inventory(folder: Path, apis: list) -> Path:
    hosts = {
        "c%03d" % i: {
            "kaiops_kubeconfig": api.kubeconfig(folder / ("c%03d.kubeconfig" % i)),
            "kaiops_change_owner": "fleet-cost bench",
        }
        for i, api in enumerate(apis)
    }
    path = folder / "hosts.yml"
    path.write_text(yaml.safe_dump({"all": {"hosts": hosts}}))
    return path


def run(hosts: int, forks: int, apis: list) -> dict:
    folder = Path(tempfile.mkdtemp(prefix="kaiops-fleet-cost-"))
    env = dict(os.environ)
    env.pop("KUBERNETES_SERVICE_HOST", None)
    env.update(
        KUBECONFIG="/nonexistent/kubeconfig",
        ANSIBLE_CONFIG=str(REPO / "ansible.cfg"),
        KAIOPS_EVIDENCE_ROOT=str(folder / "evidence"),
        HOME=str(folder),
        ANSIBLE_NOCOLOR="1",
    )
    argv = [str(BIN / "ansible-playbook"), "-i", str(_inventory(folder, apis[:hosts]))]
    argv += ["playbooks/inventory.yml", "--forks", str(forks), "-e", "kai_inventory_use_helm=false"]
    started = time.monotonic()
    done = subprocess.run(argv, env=env, cwd=REPO, capture_output=True, text=True, check=False)
    seconds = time.monotonic() - started
    # the largest resident set of any child process so far (KiB on Linux): runs go from small to
    # large, so each row's figure is its own or a smaller run's
    peak_mib = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    bundle = folder / "evidence" / "latest"
    report = bundle / "inventory.json"
    read = len(json.loads(report.read_text()).get("clusters") or {}) if report.exists() else 0
    return {
        "hosts": hosts,
        "forks": forks,
        "rc": done.returncode,
        "seconds": round(seconds, 1),
        "per_host_s": round(seconds / hosts, 2),
        "peak_rss_mib": round(peak_mib),
        "clusters_in_report": read,
        "tail": "" if done.returncode in (0, 2) else (done.stdout + done.stderr)[-400:],
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hosts", type=int, nargs="+", default=[1, 10, 50, 100])
    parser.add_argument("--forks", type=int, nargs="+", default=[5, 20])
    parser.add_argument("--json", help="also write the rows to this file")
    args = parser.parse_args(argv)
    apis = [FakeAPI.from_fixture(FIXTURE).start() for _ in range(max(args.hosts))]
    rows = []
    try:
        print("hosts forks  exit   wall s  per host s  peak RSS MiB  clusters in report")
        for hosts in sorted(args.hosts):
            for forks in args.forks:
                row = run(hosts, forks, apis)
                rows.append(row)
                print("%5d %5d %5d %8.1f %11.2f %13d %19d" % (row["hosts"], row["forks"],
                      row["rc"], row["seconds"], row["per_host_s"], row["peak_rss_mib"],
                      row["clusters_in_report"]), flush=True)  # fmt: skip
                if row["tail"]:
                    print("  " + row["tail"].replace("\n", "\n  "))
    finally:
        for api in apis:
            api.stop()
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1) + "\n")
    return 0 if all(r["clusters_in_report"] == r["hosts"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
