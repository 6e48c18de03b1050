"""Lab lifecycle: a second `up` changes nothing; `down` leaves the machine as before.

Destructive: it takes the lab down. `make test` runs it last, on its own.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "lab"))

from kailab import host  # noqa: E402
from kailab.cluster import Lab  # noqa: E402
from kailab.config import RESTORE, LabConfig  # noqa: E402


def kailab(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "kailab", *args],
        cwd=REPO / "lab", capture_output=True, text=True, timeout=600, check=False,
    )  # fmt: skip


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
