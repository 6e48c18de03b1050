"""The collection under ansible-runner, the way AWX runs a job (issue 21 item 4): inventory.yml
against a fake cluster through ansible-runner's Python API, and through AWX's remote execution
protocol (``ansible-runner transmit | ansible-runner worker | ansible-runner process``). Each run
leaves the collection's evidence bundle with a manifest that verifies, and the runner's own job
events. Two runs only: each spawns ansible-playbook.
"""

import json
import os
import shutil
import subprocess
import sys

import ansible_runner
import yaml
from conftest import REPO
from playbooks.test_inventory import sha256sum_ok

BIN = os.path.dirname(sys.executable)


def private_data_dir(tmp_path, api):
    """An ansible-runner private data dir as AWX lays one out: the project (this repository's
    playbooks), the inventory, the extra variables and the environment."""
    root = tmp_path / "job"
    shutil.copytree(os.path.join(REPO, "playbooks"), root / "project" / "playbooks")
    (root / "inventory").mkdir()
    kubeconfig = api.kubeconfig(tmp_path / "c1.kubeconfig")
    hosts = {"all": {"hosts": {"c1": {"kaiops_kubeconfig": kubeconfig}}}}
    (root / "inventory" / "hosts.yml").write_text(yaml.safe_dump(hosts))
    (root / "env").mkdir()
    (root / "env" / "extravars").write_text(yaml.safe_dump({"kai_inventory_use_helm": False}))
    envvars = {
        "ANSIBLE_CONFIG": os.path.join(REPO, "ansible.cfg"),
        # The collection from this checkout (an EE would have it installed instead).
        "ANSIBLE_COLLECTIONS_PATH": os.path.join(REPO, "collections"),
        "KAIOPS_EVIDENCE_ROOT": str(tmp_path / "evidence"),
        "KUBECONFIG": "/nonexistent/kubeconfig",
        "HOME": str(tmp_path),
        "PATH": os.pathsep.join([BIN, "/usr/bin", "/bin"]),
        "ANSIBLE_NOCOLOR": "1",
    }
    (root / "env" / "envvars").write_text(yaml.safe_dump(envvars))
    return root


def assert_bundle(tmp_path):
    bundle = os.path.realpath(tmp_path / "evidence" / "latest")
    assert sha256sum_ok(bundle), bundle
    with open(os.path.join(bundle, "inventory.json")) as handle:
        report = json.load(handle)
    assert report["clusters"]["c1"]["status"] == "ok", report["clusters"]["c1"]
    assert report["clusters"]["c1"]["kai"]["version"], report["clusters"]["c1"]["kai"]
    with open(os.path.join(bundle, "status")) as handle:
        assert handle.read().strip() == "complete"


def test_inventory_through_ansible_runners_python_api(tmp_path, fake_api):
    root = private_data_dir(tmp_path, fake_api("kai-sharing"))
    run = ansible_runner.run(
        private_data_dir=str(root), playbook="playbooks/inventory.yml", quiet=True
    )
    assert (run.status, run.rc) == ("successful", 0), (run.status, run.rc, run.stdout.read())
    names = [event.get("event") for event in run.events]
    assert "playbook_on_start" in names and "playbook_on_stats" in names
    assert_bundle(tmp_path)


def test_inventory_through_transmit_worker_process(tmp_path, fake_api):
    root = private_data_dir(tmp_path, fake_api("kai-sharing"))
    runner = os.path.join(BIN, "ansible-runner")
    env = dict(os.environ, PATH=os.pathsep.join([BIN, "/usr/bin", "/bin"]))
    transmit = subprocess.Popen(
        [runner, "transmit", str(root), "-p", "playbooks/inventory.yml"],
        stdout=subprocess.PIPE,
        env=env,
    )
    worker = subprocess.Popen(
        [runner, "worker", "--private-data-dir", str(tmp_path / "worker")],
        stdin=transmit.stdout,
        stdout=subprocess.PIPE,
        env=env,
    )
    transmit.stdout.close()
    processed = tmp_path / "processed"
    done = subprocess.run(
        [runner, "process", str(processed)],
        stdin=worker.stdout,
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
        check=False,
    )
    worker.stdout.close()
    assert transmit.wait(timeout=60) == 0 and worker.wait(timeout=60) == 0
    assert done.returncode == 0, done.stderr
    job = processed / "artifacts"  # what the worker streamed back, as AWX's controller keeps it
    assert (job / "rc").read_text().strip() == "0"
    assert (job / "status").read_text().strip() == "successful"
    events = [json.loads(p.read_text()) for p in (job / "job_events").glob("*.json")]
    assert "playbook_on_stats" in {e.get("event") for e in events}
    assert_bundle(tmp_path)
