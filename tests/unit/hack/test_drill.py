"""hack/drill.sh, make drill's change window, against stand-ins for what it drives.

ansible-playbook, ansible-config, the lab's python (``-m kailab env``, ``-m kailab.kai
versions``) and kubectl are small scripts in tmp_path that record their argv; the fake
ansible-playbook makes a bundle per run under a temporary evidence root and points ``latest`` at
it, as the evidence callback does, and writes a rollout's report.json. The lab is never touched.
"""

import json
import os
import re
import subprocess
import sys

import pytest
from conftest import REPO

SCRIPT = os.path.join(REPO, "hack", "drill.sh")
PRE, PATCHED = "v0.9.2", "v0.9.3"
NAMESPACE = "kaiops-reproduce-nil-data-1"
CHART = '{"kaiops_kai_chart_ref": "/bundles/kai scheduler-{version}.tgz"}'
DRILL_ARGS = "-e '%s'" % CHART

PLAYBOOK = """#!%s
import json, os, pathlib, sys

log = pathlib.Path(os.environ["FAKE_LOG"])
calls = [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []
number = len(calls) + 1
with log.open("a") as out:
    out.write(json.dumps(sys.argv[1:]) + "\\n")
root = pathlib.Path(os.environ["FAKE_EVIDENCE"])
bundle = root / ("%%02d-%%s" %% (number, pathlib.Path(sys.argv[1]).stem))
bundle.mkdir(parents=True)
latest = root / "latest"
if latest.is_symlink():
    latest.unlink()
latest.symlink_to(bundle.name)
if sys.argv[1] == "rollout.yml":
    first = not any(call[0] == "rollout.yml" for call in calls)
    decision = "not_approved" if first else os.environ["FAKE_DECISION"]
    figures = {"verify": {"submit_to_running": {"p95_s": 12.5}}}
    report = {"decision": decision, "clusters": {"lab": {"change": {"figures": figures}}}}
    (bundle / "report.json").write_text(json.dumps(report))
sys.exit(json.loads(os.environ.get("FAKE_RC", "{}")).get(str(number), 0))
"""

# The same shape as ansible-config dump --format json: [{plugin: [{name, value}, ...]}].
ANSIBLE_CONFIG = """#!/bin/sh
echo "$@" >> "$FAKE_DIR/ansible-config.argv"
options='{"name": "keep", "value": 5}, {"name": "root", "value": "'"$FAKE_EVIDENCE"'"}'
printf '[{"kaiops.runbooks.evidence": [%s]}]' "$options"
"""

LAB_PY = """#!/bin/sh
echo "$@" >> "$FAKE_DIR/lab.argv"
case "$2 $3" in
  "kailab env") echo "export PATH=$FAKE_DIR/labbin:/usr/bin:/bin"
                echo "export KUBECONFIG=$FAKE_DIR/kubeconfig" ;;
  "kailab.kai versions") echo "pre=%s"; echo "patched=%s" ;;
  *) echo "unexpected: $*" >&2; exit 9 ;;
esac
""" % (PRE, PATCHED)

KUBECTL = (
    """#!/bin/sh
echo "$@" >> "$FAKE_DIR/kubectl.argv"
if [ "$1" = get ]; then printf '%s'; fi
"""
    % NAMESPACE
)


def write(path, text):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    path.chmod(0o755)


@pytest.fixture
def drill(tmp_path):
    """Run hack/drill.sh against the stand-ins: (exit status, stdout, playbook argvs, kubectl)."""
    venv = tmp_path / "venv"
    write(venv / "bin" / "ansible-playbook", PLAYBOOK % sys.executable)
    write(venv / "bin" / "ansible-config", ANSIBLE_CONFIG)
    write(tmp_path / "lab-python", LAB_PY)
    write(tmp_path / "labbin" / "kubectl", KUBECTL)
    evidence = tmp_path / "evidence"

    def run(rc=None, decision="approved", kai_version="", **env_changes):
        env = {
            "PATH": "/usr/bin:/bin",
            "HOME": str(tmp_path),
            "VENV": str(venv),
            "PY": sys.executable,
            "LAB_PY": str(tmp_path / "lab-python"),
            "ANSIBLE_PLAYBOOK": str(venv / "bin" / "ansible-playbook"),
            "KAI_VERSION": kai_version,
            "DRILL_ARGS": DRILL_ARGS,
            "FAKE_DIR": str(tmp_path),
            "FAKE_LOG": str(tmp_path / "playbook.argv"),
            "FAKE_EVIDENCE": str(evidence),
            "FAKE_RC": json.dumps(rc or {}),
            "FAKE_DECISION": decision,
        }
        env.update(env_changes)
        env = {k: v for k, v in env.items() if v is not None}
        done = subprocess.run(
            [SCRIPT], env=env, capture_output=True, text=True, timeout=120, check=False
        )
        log = tmp_path / "playbook.argv"
        calls = [json.loads(x) for x in log.read_text().splitlines()] if log.exists() else []
        kubectl_log = tmp_path / "kubectl.argv"
        kubectl = kubectl_log.read_text().splitlines() if kubectl_log.exists() else []
        return done.returncode, done.stdout + done.stderr, calls, kubectl

    run.evidence = str(evidence)
    return run


def expected_calls(evidence, rollback_target=PRE):
    """The seven playbooks of the drill, in order, with their -e arguments."""
    tail = ["-e", CHART]
    target = ["-e", "kaiops_rollout_rollback_target=" + rollback_target] if rollback_target else []
    rollout = ["rollout.yml", "-e", "kaiops_kai_version=" + PATCHED] + target + tail
    damage = {
        "kaiops_reproduce_cases": ["nil_data"],
        "kaiops_reproduce_builds": ["pre"],
        "kaiops_reproduce_install": False,
        "kaiops_reproduce_keep_namespaces": True,
    }
    return [
        ["playbooks/inventory.yml"] + tail,
        ["playbooks/reproduce.yml"] + tail,
        rollout,
        ["playbooks/rollback.yml", "-e", "kaiops_rollout_rollback_bundle=%s/03-rollout" % evidence]
        + tail,
        ["playbooks/reproduce.yml", "-e", damage] + tail,
        ["playbooks/recovery.yml", "-e", None, "-e", None] + tail,
        rollout,
    ]


def comparable(calls):
    """JSON -e values parsed (key order and spacing aside); recovery's two checked on their own."""
    out = []
    for call in calls:
        if call[0] == "playbooks/recovery.yml":
            call = call[:2] + [None, "-e", None] + call[5:]
        out.append(
            [
                json.loads(a) if isinstance(a, str) and a[:1] == "{" and a != CHART else a
                for a in call
            ]
        )
    return out


STEPS = [
    "inventory",
    "reproduce",
    "rehearse-forward",
    "rehearse-back",
    "damage",
    "recovery",
    "rollout",
]


def table(output):
    """(name, exit) of each line of the timing table, in order."""
    return re.findall(r"^(\S+) +\d+s exit (\d+)$", output, re.MULTILINE)


def test_drill_runs_the_seven_steps_in_order_and_exits_0_when_approved(drill):
    rc, output, calls, kubectl = drill()
    assert rc == 0, output
    assert comparable(calls) == comparable(expected_calls(drill.evidence))
    steps, window = (json.loads(calls[5][i]) for i in (2, 4))
    assert steps["kaiops_recovery_steps"] == [
        "delete_failed_bindrequests",
        "delete_dataless_configmaps",
        "delete_orphan_configmaps",
    ]
    assert steps["kai_recovery_window_floor_s"] == 60
    assert window == {
        "kai_recovery_namespaces": [NAMESPACE],
        "kai_recovery_window_baseline_s": 12.5,
        "kai_recovery_window_baseline_source": "rollout verification p95, 03-rollout",
    }
    # gone before the rollout: the recovery's pods hold GPU shares until they are
    assert kubectl[-1] == "delete namespace %s --wait=true --timeout=120s" % NAMESPACE
    assert table(output) == [(name, "0") for name in STEPS]
    titles = re.findall(r"^== drill: (.*)$", output, re.MULTILINE)
    assert titles == [
        "inventory (read-only): is the pre-patch build exposed?",
        "reproduce: the regression evidence for " + PATCHED,
        "rehearsal, forward: rollout.yml to %s (not approved without a rehearsal on record: "
        "expected)" % PATCHED,
        "rehearsal, back: rollback.yml from 03-rollout to %s, verified" % PRE,
        "the damage the pre-patch build leaves (nil-data case, namespace kept)",
        "recovery.yml on %s (window from the rehearsal rollout's submit-to-Running p95 12.5s)"
        % NAMESPACE,
        "rollout.yml to " + PATCHED,
    ]
    assert re.search(r"^drill end to end: \d+ s \(after lab-up\)$", output, re.MULTILINE)
    assert "rehearsal: %s/04-rollback/report.md\n" % drill.evidence in output
    assert "recovery: %s/06-recovery/recovery.md\n" % drill.evidence in output
    assert "report: %s/07-rollout/report.md\n" % drill.evidence in output
    assert output.rstrip().endswith("decision: approved (rollout exit status 0)")


@pytest.mark.parametrize(
    "kai_version, target", [("patched", PATCHED), ("v0.8.0", "v0.8.0"), ("none", "")]
)
def test_the_rollback_target_is_the_release_the_lab_installed(drill, kai_version, target):
    rc, output, calls, _ = drill(kai_version=kai_version)
    assert rc == 0, output
    assert comparable(calls) == comparable(expected_calls(drill.evidence, target))


@pytest.mark.parametrize("failing, name", [(1, "inventory"), (2, "reproduce")])
def test_a_failed_inventory_or_reproduce_ends_the_drill_with_its_status(drill, failing, name):
    rc, output, calls, _ = drill(rc={str(failing): 3})
    assert rc == 3
    assert len(calls) == failing
    assert "decision:" not in output


def test_a_failed_rehearsal_ends_the_drill_before_the_rollout(drill):
    rc, output, calls, kubectl = drill(rc={"4": 5})
    assert rc == 5
    assert [c[0] for c in calls] == [
        "playbooks/inventory.yml",
        "playbooks/reproduce.yml",
        "rollout.yml",
        "playbooks/rollback.yml",
    ]
    assert table(output) == [(n, "5" if n == "rehearse-back" else "0") for n in STEPS[:4]]
    assert "rehearsal: %s/04-rollback/report.md\n" % drill.evidence in output
    assert "the rollback rehearsal did not end verified (exit 5): no rollout without it" in output
    assert kubectl == []


def test_the_forward_rehearsal_and_the_damage_may_fail(drill):
    rc, output, calls, _ = drill(rc={"3": 2, "5": 1})
    assert rc == 0, output
    assert len(calls) == 7
    assert dict(table(output))["rehearse-forward"] == "2"


@pytest.mark.parametrize("rollout_rc, expected", [(0, 2), (6, 6)])
def test_a_rollout_not_approved_fails_the_drill(drill, rollout_rc, expected):
    rc, output, calls, _ = drill(rc={"7": rollout_rc}, decision="not_approved")
    assert rc == expected
    assert len(calls) == 7
    assert "decision: not_approved (rollout exit status %d)" % rollout_rc in output


def test_a_missing_input_is_named_with_its_fix(drill):
    rc, output, calls, _ = drill(VENV=None)
    assert rc == 2
    assert "VENV is not set: run it through make drill" in output
    assert calls == []
