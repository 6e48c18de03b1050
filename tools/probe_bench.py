#!/usr/bin/env python3
"""What each probe adds to the rollout's verification, measured on an up lab (issue 22).

For each probe set, the lab's pre-patch build is put back (``make lab-kai KAI_VERSION=pre``) and
``rollout.yml`` runs to the patched build; the baseline's and the verification's
``figures.json`` give the wall time from the phase's start to its end and the time it followed
its pods. One row per run, then the median per set. A run that fails or writes no figures is
printed as failed and stays in the count: a benchmark of the passing runs only would flatter.

Usage (the lab up):  eval "$(make -s lab-env)"; python tools/probe_bench.py [--runs 1]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
WAIVED = {
    "reason": "probe benchmark: the verification's cost is measured",
    "approved_by": "tools/probe_bench.py",
}
# (name, the request's probe variables): the default set is gang 1, burst 0.
SETS = (
    ("no gang, no burst", {"kaiops_rollout_gang_probes": 0, "kaiops_rollout_burst_probes": 0}),
    ("gang 1 (default)", {"kaiops_rollout_gang_probes": 1, "kaiops_rollout_burst_probes": 0}),
    ("gang 1, burst 8", {"kaiops_rollout_gang_probes": 1, "kaiops_rollout_burst_probes": 8}),
)


def put_back_pre() -> None:
    subprocess.run(
        ["make", "--no-print-directory", "-s", "lab-kai", "KAI_VERSION=pre"], cwd=REPO, check=True
    )


def phase(bundle: Path, name: str) -> dict | None:
    found = list(bundle.glob(f"verify/*/{name}/figures.json"))
    if not found:
        return None
    fig = json.loads(found[0].read_text())
    return {
        "wall_s": round(fig["finished_wall"] - fig["started_wall"], 1),
        "followed_s": fig.get("followed_s"),
        "probes": fig.get("probes"),
    }


def run(variables: dict, root: Path) -> dict:
    request = dict(
        variables, kaiops_rollout_regression_waiver=WAIVED, kaiops_rollout_rehearsal_waiver=WAIVED
    )
    done = subprocess.run(
        ["ansible-playbook", "rollout.yml", "-e", json.dumps(request)],
        cwd=REPO, capture_output=True, text=True, check=False,
        env={**os.environ, "KAIOPS_EVIDENCE_ROOT": str(root)},
    )  # fmt: skip
    bundles = re.findall(r"kaiops evidence: (\S+)", done.stdout)
    out = {"rc": done.returncode, "bundle": bundles[-1] if bundles else None}
    if bundles:
        out["baseline"] = phase(Path(bundles[-1]), "baseline")
        out["verify"] = phase(Path(bundles[-1]), "verify")
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=1, help="runs per probe set (default 1)")
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory(prefix="kaiops-probe-bench-") as tmp:
        for name, variables in SETS:
            for i in range(args.runs):
                put_back_pre()
                got = run(variables, Path(tmp))
                rows.append((name, got))
                verify = got.get("verify") or {}
                baseline = got.get("baseline") or {}
                status = "ok" if got["rc"] == 0 and verify else f"failed (rc {got['rc']})"
                print(
                    f"{name:20} run {i + 1}: {status:14} "
                    f"verify {verify.get('wall_s', '-')} s wall, "
                    f"{verify.get('followed_s', '-')} s followed, "
                    f"{verify.get('probes', '-')} probes; baseline {baseline.get('wall_s', '-')} s",
                    flush=True,
                )
    put_back_pre()
    print("\nprobe set             runs  failed  verify wall s (median)  followed s (median)")
    for name, _variables in SETS:
        mine = [g for n, g in rows if n == name]
        ok = [g["verify"] for g in mine if g["rc"] == 0 and g.get("verify")]
        wall = statistics.median(v["wall_s"] for v in ok) if ok else "-"
        followed = statistics.median(v["followed_s"] for v in ok) if ok else "-"
        print(f"{name:20}  {len(mine):4}  {len(mine) - len(ok):6}  {wall!s:>22}  {followed!s:>19}")
    return 0 if all(g["rc"] == 0 for _n, g in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
