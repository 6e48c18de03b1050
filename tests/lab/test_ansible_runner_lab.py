"""The change window's main entry point under ansible-runner, on the lab (issue 21 item 4).

AWX and Ansible Automation Platform run a collection through ansible-runner; the unit tests run
inventory.yml that way against a fake cluster. Here ``rollout.yml --check`` runs through
ansible-runner's Python API against the lab's real API server, KAI's release and nodes: it reads
everything a rollout reads, passes its preflight gates, writes its bundle, stops before the change
steps (exit 2, as ``ansible-playbook --check`` does), and changes nothing.
"""

from __future__ import annotations

import json
import subprocess

import ansible_runner
from kailab import kai
from test_canary import REPO, run_env

WAIVER = {"reason": "ansible-runner lab test: a --check run", "approved_by": "pytest"}


def test_rollout_check_through_ansible_runner_reads_the_lab_and_changes_nothing(lab, tmp_path):
    before = kai.status(lab)
    env = run_env(lab, tmp_path / "evidence")
    (tmp_path / "job").mkdir()
    run = ansible_runner.run(
        private_data_dir=str(tmp_path / "job"),
        project_dir=str(REPO),
        playbook="rollout.yml",
        inventory=str(REPO / "inventories" / "lab"),
        cmdline="--check",
        extravars={
            "kaiops_rollout_regression_waiver": WAIVER,
            "kaiops_rollout_rehearsal_waiver": WAIVER,
        },
        envvars=env,
        quiet=True,
        timeout=600,
    )
    out = run.stdout.read()
    # a --check rollout reads and decides, then exits 2: the change steps did not run (as
    # ansible-playbook does; molecule rollout_preflight asserts the same)
    assert (run.status, run.rc) == ("failed", 2), out[-4000:]
    assert "every preflight gate passed, but baseline, upgrade, verify" in out, out[-4000:]
    events = {e.get("event") for e in run.events}
    assert {"playbook_on_start", "runner_on_ok", "playbook_on_stats"} <= events

    bundle = (tmp_path / "evidence" / "latest").resolve()
    check = subprocess.run(
        ["sha256sum", "-c", "--quiet", "manifest.sha256"], cwd=bundle, check=False
    )
    assert check.returncode == 0, bundle
    assert (bundle / "status").read_text().strip() == "complete"
    report = json.loads((bundle / "report.json").read_text())
    cluster = report["clusters"]["lab"]
    steps = {s["step"]: s["status"] for s in cluster["steps"]}
    # read and decided; under --check nothing is upgraded, probed or rolled back
    assert steps["inventory"] == "done" and steps["snapshot"] == "done", steps
    assert {steps[s] for s in ("baseline", "upgrade", "verify", "rollback")} == {"not_run"}, steps
    assert cluster["current_version"] == before["app_version"].split("+", 1)[0]

    after = kai.status(lab)
    assert (after["revision"], after["app_version"]) == (before["revision"], before["app_version"])
