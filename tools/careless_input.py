"""Careless and hostile input to every playbook, re-run on demand (issue 23): `make careless`.

Runs each case of tools/careless_input.yml (rules as data) with ansible-playbook against an
inventory whose kubeconfig points nowhere, one after another, and sorts each run into one of:

  refused      exit 2, no cluster read, the playbook's report written, the bundle's status
               "refused", no traceback, no template's output in the bundle (the one right answer)
  no_report    refused before any cluster read, but without the playbook's report or status
  stopped      exit 2 before any cluster was read, and no bundle at all (the evidence store
               could not hold one: the run stopped with the fix, as it must)
  accepted     a cluster read was tried: the input passed the request check
  crashed      a Python traceback reached the user, or ansible-playbook's exit 250 or 4
  leaked       a template's output (the `id` command's "uid=") is in the bundle

and prints one line per run and the count per category. It changes no cluster (no kubeconfig
leads to one). Each run spawns ansible-playbook: about 5 s each on 2 cores, 110 cases. Exit 1
when any run is not refused or stopped.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parent.parent
CASES = REPO / "tools" / "careless_input.yml"
BIN = Path(sys.executable).parent
# the modules that read a cluster: one of them run (not skipped) means the request check let the
# input through
CLUSTER_READERS = ("kai_inventory_info", "kai_identify", "k8s_info", "kai_recovery_info")
UNWRITABLE = "/proc/kaiops-evidence"  # not even root can make a folder there
GOOD = ("refused", "stopped")


def _fill(value, template):
    if isinstance(value, str):
        return template if value == "TEMPLATE" else value
    if isinstance(value, dict):
        return {k: _fill(v, template) for k, v in value.items()}
    if isinstance(value, list):
        return [_fill(v, template) for v in value]
    return value


def expand(data: dict) -> list[dict]:
    """One run per (case, playbook), in the file's order."""
    runs = []
    for case in data["cases"]:
        books = case["playbooks"]
        for book in data["all_playbooks"] if books == "all" else books:
            runs.append(dict(case, playbook=book))
    return runs


def _inventory(run: dict, data: dict, folder: Path) -> Path:
    path = folder / "hosts.yml"
    if run.get("raw_inventory"):
        path.write_text(run["raw_inventory"].replace("{kubeconfig}", "/nonexistent/kubeconfig"))
        return path
    host = dict(data["base_host"], **_fill(run.get("host") or {}, data["template"]))
    hosts = {"c%d" % (i + 1): dict(host) for i in range(int(run.get("hosts") or 1))}
    path.write_text(yaml.safe_dump({"all": {"hosts": hosts}}))
    return path


def _extra_args(run: dict, template: str) -> list[str]:
    extra = run.get("extra")
    if extra is None:
        return []
    if isinstance(extra, str):
        return ["-e", extra]
    if isinstance(extra, dict):
        return ["-e", json.dumps(_fill(extra, template))]
    return [arg for item in extra for arg in ("-e", item)]


def _evidence_root(run: dict, folder: Path) -> str:
    if run.get("evidence_root") == "file":
        path = folder / "evidence-file"
        path.write_text("not a folder\n")
        return str(path)
    if run.get("evidence_root") == "unwritable":
        return UNWRITABLE
    return str(folder / "evidence")


def _read_any(evidence: Path) -> list[dict]:
    with open(evidence / "tasks.jsonl", errors="replace") as handle:
        return [json.loads(line) for line in handle if line.strip()]


def classify(rc: int, out: str, evidence: Path | None) -> tuple[str, str]:
    """(category, why) of one run from its exit status, its output and its bundle."""
    if "Traceback (most recent call last)" in out or rc in (4, 250):
        return "crashed", "exit %d" % rc
    if evidence is None or not evidence.is_dir():
        return ("stopped", "no bundle") if rc == 2 else ("no_report", "no bundle, exit %d" % rc)
    for path in evidence.rglob("*"):
        if path.is_file() and "uid=" in path.read_text(errors="replace"):
            return "leaked", str(path.relative_to(evidence))
    events = _read_any(evidence) if (evidence / "tasks.jsonl").exists() else []
    read = [
        e["action"]
        for e in events
        if e.get("action", "").split(".")[-1] in CLUSTER_READERS and e.get("event") != "skipped"
    ]
    if read:
        return "accepted", "read a cluster (%s)" % read[0].split(".")[-1]
    status = (evidence / "status").read_text().strip() if (evidence / "status").exists() else ""
    reports = [p.name for p in evidence.glob("report.*")] + [p.name for p in evidence.glob("*.md")]
    if rc == 2 and status == "refused" and reports:
        return "refused", status
    return "no_report", "exit %d, status %r, reports %s" % (rc, status, sorted(reports) or "none")


def run_one(run: dict, data: dict) -> dict:
    folder = Path(tempfile.mkdtemp(prefix="kaiops-careless-"))
    try:
        root = _evidence_root(run, folder)
        env = dict(os.environ)
        for name in ("KUBERNETES_SERVICE_HOST", "KAIOPS_EVIDENCE_DIR"):
            env.pop(name, None)
        env.update(
            KUBECONFIG="/nonexistent/kubeconfig",
            ANSIBLE_CONFIG=str(REPO / "ansible.cfg"),
            KAIOPS_EVIDENCE_ROOT=root,
            HOME=str(folder),
            PATH=os.pathsep.join([str(BIN), "/usr/bin", "/bin"]),
            ANSIBLE_NOCOLOR="1",
        )
        argv = [str(BIN / "ansible-playbook"), "-i", str(_inventory(run, data, folder))]
        argv += [run["playbook"], *_extra_args(run, data["template"])]
        started = time.monotonic()
        done = subprocess.run(
            argv, env=env, cwd=REPO, capture_output=True, text=True, timeout=300, check=False
        )
        latest = Path(root) / "latest"
        evidence = latest.resolve() if latest.exists() else None
        category, why = classify(done.returncode, done.stdout + done.stderr, evidence)
        return {
            "case": run["name"],
            "playbook": run["playbook"],
            "rc": done.returncode,
            "category": category,
            "why": why,
            "seconds": round(time.monotonic() - started, 1),
        }
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", default=str(CASES))
    parser.add_argument("-k", default="", help="only the runs whose case or playbook has this")
    parser.add_argument("--json", help="also write every run's result to this file")
    args = parser.parse_args(argv)
    data = yaml.safe_load(Path(args.cases).read_text())
    runs = [r for r in expand(data) if args.k in r["name"] + " " + r["playbook"]]
    results, started = [], time.monotonic()
    for run in runs:
        result = run_one(run, data)
        results.append(result)
        print("%-10s %-28s %-46s %5.1fs  %s" % (result["category"], result["playbook"],
              result["case"][:46], result["seconds"], result["why"]), flush=True)  # fmt: skip
    counts = {}
    for result in results:
        counts[result["category"]] = counts.get(result["category"], 0) + 1
    print("\n%d runs in %.0f s: %s" % (len(results), time.monotonic() - started,
          ", ".join("%s %d" % kv for kv in sorted(counts.items()))))  # fmt: skip
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1) + "\n")
    return 0 if all(r["category"] in GOOD for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
