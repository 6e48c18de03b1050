"""Restore benchmark: prints figures, asserts nothing (the goal, under 90 s, lives in the docs).

On the up lab, with whatever KAI it runs (the stand-in, or the real KAI from a bundle):

  failed gate   rollout.yml from the pre-patch build to the patched one with a threshold no lab
                meets (bind_latency_p50_s 0.001): it downgrades by itself; the figure is the
                report's time from the failed gate's decision to a passing verification on the
                recorded version (decision_to_verified_s), and the time to restore (downgrade
                started to every component at the recorded version, rolled out)
  rollback.yml  rollout.yml forward again, then playbooks/rollback.yml from that bundle: the time
                to restore and to a passing verification

Both figures come from the reports the runs wrote (report.json), never from this script's clock.
Each run is waived what it does not test (the regression evidence, the rehearsal); the waivers
are recorded in the reports. The lab ends on the pre-patch build, as it began.

Run: make restore-bench   (or: PYTHONPATH=lab python lab/bench_restore.py [-e <json>] ...)
  -e is passed to every ansible-playbook run (e.g. the chart reference of a real KAI's bundles:
  -e '{"kaiops_kai_chart_ref": "/path/kai-scheduler-{version}.tgz"}')
  --setup is the command that puts the pre-patch build on the lab (default: make -s lab-kai
  KAI_VERSION=pre; for a real KAI: make -s lab-kai KAI_BUNDLE=<pre bundle>)
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
BUNDLE = re.compile(r"kaiops evidence: (\S+) \((complete|interrupted|running)")
WAIVERS = {
    "kaiops_rollout_regression_waiver": {
        "reason": "restore benchmark: the downgrade is measured, not the regression",
        "approved_by": "lab/bench_restore.py",
    },
    "kaiops_rollout_rehearsal_waiver": {
        "reason": "restore benchmark: this run is the rehearsal being measured",
        "approved_by": "lab/bench_restore.py",
    },
}
FAILING = {"bind_latency_p50_s": 0.001}
GOAL_S = 90


def run(argv: list[str], ok=(0,)) -> str:
    print("$ " + " ".join(shlex.quote(a) for a in argv), flush=True)
    proc = subprocess.run(argv, cwd=REPO, capture_output=True, text=True)
    if proc.returncode not in ok:
        sys.stdout.write(proc.stdout[-4000:] + proc.stderr[-2000:])
        raise SystemExit("failed (exit %d): %s" % (proc.returncode, " ".join(argv)))
    return proc.stdout


def playbook(path: str, extra: list[dict], ok=(0,)) -> dict:
    argv = ["ansible-playbook", path]
    for e in extra:
        argv += ["-e", json.dumps(e)]
    out = run(argv, ok)
    found = BUNDLE.findall(out)
    if not found:
        raise SystemExit("no evidence bundle named in the output of %s" % path)
    bundle = Path(found[-1][0])
    report = json.loads((bundle / "report.json").read_text())
    return {"bundle": bundle, "report": report}


# The lab ties its latency limits to the run's baseline (latency_baseline_factor): that would
# lift the failing threshold to the baseline's, so the failed-gate case leaves the tie out.
BASELINE_TIE = ("latency_baseline_factor", "latency_baseline_plus_s")


def thresholds(base: dict) -> dict:
    """The lab inventory's thresholds with the failing one put in, untied from the baseline."""
    out = run(["ansible-inventory", "--host", "lab"])
    current = json.loads(out).get("kaiops_thresholds") or {}
    untied = {k: v for k, v in current.items() if k not in BASELINE_TIE}
    return dict(untied, **base)


def rollback_figures(result: dict) -> dict:
    cluster = next(iter(result["report"]["clusters"].values()))
    change = cluster.get("change") or {}
    rollback = change.get("rollback") or {}
    return {
        "decision": cluster.get("decision"),
        "implementation": cluster.get("implementation_label") or "-",
        "from": (change.get("after") or {}).get("version") or cluster.get("current_version") or "-",
        "to": (change.get("before") or {}).get("version") or "-",
        "method": rollback.get("method") or "-",
        "restore_s": rollback.get("time_to_restore_s"),
        "verified_s": rollback.get("decision_to_verified_s") or rollback.get("time_to_verified_s"),
        "bundle": result["bundle"].name,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-e", dest="extra", action="append", default=[], type=json.loads)
    parser.add_argument("--setup", default="make -s lab-kai KAI_VERSION=pre")
    args = parser.parse_args()
    os.chdir(REPO)
    extra = [WAIVERS] + args.extra

    run(shlex.split(args.setup))
    failing = playbook(
        "rollout.yml", extra + [{"kaiops_thresholds": thresholds(FAILING)}], ok=(0, 2)
    )
    gate = rollback_figures(failing)

    forward = playbook("rollout.yml", extra, ok=(0, 2))
    back = playbook(
        "playbooks/rollback.yml",
        extra + [{"kaiops_rollout_rollback_bundle": str(forward["bundle"])}],
        ok=(0, 2),
    )
    drill = rollback_figures(back)

    print()
    print(
        "restore benchmark (goal: under %d s from the decision to a passing verification)" % GOAL_S
    )
    print(
        "%-14s %-12s %-22s %-10s %-12s %-12s %s"
        % ("case", "decision", "downgrade", "method", "restore", "verified", "bundle")
    )
    for name, fig in (("failed gate", gate), ("rollback.yml", drill)):
        print(
            "%-14s %-12s %-22s %-10s %-12s %-12s %s"
            % (
                name,
                fig["decision"],
                "%s -> %s" % (fig["from"], fig["to"]),
                fig["method"],
                "%s s" % fig["restore_s"],
                "%s s" % fig["verified_s"],
                fig["bundle"],
            )
        )
    print("KAI: %s" % gate["implementation"])
    return 0


if __name__ == "__main__":
    sys.exit(main())
