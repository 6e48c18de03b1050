"""A KAI whose helm release and running components disagree is named, and no change runs on it
(issue 19: "what runs is read from the components, not from helm alone").

`helm rollback` to an upgrade revision of KAI's chart says it succeeded and helm reads the older
version, but only the operator goes back: kai-config and every component keep the newer one
(kai-contract.md section 14; tests/lab/test_kai_rollback.py shows it on the stand-in). Here the
collection meets that cluster: inventory.yml names the split as a finding, and rollout.yml's
preflight refuses it (gate `agreement`) with the fix. The lab ends on its starting release.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from kailab import kai
from test_canary import BIN, REPO, WAIVER, run_env
from test_kai_rollback import helm, history, release, upgrade_to


@pytest.fixture()
def pair(lab):
    """(older, newer) releases of the pair; the lab is on the older one before and after."""
    older, newer = kai.resolve("pre"), kai.resolve("patched")
    kai.install(lab, older)
    yield older, newer
    kai.install(lab, older)


def playbook(lab, root: Path, *argv: str) -> tuple[subprocess.CompletedProcess, Path]:
    done = subprocess.run(
        [str(BIN / "ansible-playbook"), *argv],
        env=run_env(lab, root), cwd=REPO, capture_output=True, text=True, timeout=600,
        check=False,
    )  # fmt: skip
    folders = [p for p in root.iterdir() if p.is_dir() and not p.is_symlink()]
    assert len(folders) == 1, (done.returncode, done.stdout[-4000:], done.stderr[-2000:])
    return done, folders[0]


def test_a_split_install_is_named_by_inventory_and_refused_by_preflight(lab, pair, tmp_path):
    older, newer = pair
    if history(lab)[-1]["description"] != "Upgrade complete":
        upgrade_to(lab, older)  # an upgrade revision at the older release
    old_rev = release(lab)["revision"]
    kai.install(lab, newer)
    helm(lab, "rollback", kai.RELEASE, str(old_rev), "--wait", "--timeout=120s")
    kai.wait_rolled_out(lab, names=[kai.OPERATOR])

    done, bundle = playbook(lab, tmp_path / "inventory", "playbooks/inventory.yml")
    entry = json.loads((bundle / "inventory.json").read_text())["clusters"]["lab"]
    findings = entry["kai"]["findings"]
    assert entry["kai"]["version"] == newer, findings  # the binder's code, not helm's label
    assert f"helm says {older}, binder runs {newer}: split" in findings, findings
    assert f"operator runs {older}, binder runs {newer}: split" in findings, findings
    assert f"helm says {older}, binder runs {newer}: split" in (bundle / "inventory.md").read_text()

    request = {
        "kaiops_rollout_regression_waiver": WAIVER,
        "kaiops_kai_version": newer,
        "kaiops_rollout_rollback_target": older,
    }
    done, bundle = playbook(lab, tmp_path / "rollout", "rollout.yml", "--check",
                            "-e", json.dumps(request))  # fmt: skip
    assert done.returncode != 0, done.stdout[-4000:]
    cluster = json.loads((bundle / "report.json").read_text())["clusters"]["lab"]
    assert cluster["decision"] == "refused", cluster["reasons"]
    agreement = next(g for g in cluster["gates"] if g["gate"] == "agreement")
    assert not agreement["passed"]
    assert f"helm says {older}, binder runs {newer}: split" in agreement["message"]
    assert "never helm rollback" in agreement["fix"]
