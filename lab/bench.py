"""Lab benchmark: prints figures, asserts nothing (targets live in the docs, not in tests).

  cold build   (only with --cold: empty module, build and program caches in a temp folder)
  warm up      `down` then `up` with every binary cached, until all nodes Ready
  down         time to delete the lab
  idle memory  resident memory of every lab process after a quiet period

Run: make lab-bench   (or: PYTHONPATH=lab python lab/bench.py [--cold] [--idle-seconds N])
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from kailab import host
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


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--cold", action="store_true", help="also time a build from empty caches")
    parser.add_argument("--idle-seconds", type=float, default=30.0)
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

    lab = Lab(LabConfig.from_env(), log=quiet)
    lab.down()
    figures.append(("warm lab-up to all nodes Ready", timed(lab.up), "s"))
    time.sleep(args.idle_seconds)  # idle means idle: let start-up work settle before measuring
    pids = set(host.lab_pids(lab.cfg)) | host.cgroup_pids()
    figures.append(("idle lab resident memory", rss_mib(pids), "MiB"))
    figures.append(("lab processes counted", len(pids), ""))
    figures.append(("lab-down (delete the lab)", timed(lab.down), "s"))
    figures.append(("lab-up again (for the next user)", timed(lab.up), "s"))

    for name, value, unit in figures:
        print(f"{name:<36} {value:10.1f} {unit}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
