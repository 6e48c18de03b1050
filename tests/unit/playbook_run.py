"""Run one of the collection's playbooks against fake clusters, isolated from the user's own.

Shared by the playbook tests: the inventory is written from `hosts` (cluster hosts with no
connection settings: the collection runs its modules on the controller), the evidence goes to
`tmp_path/evidence`, KUBECONFIG points nowhere and PATH holds only the venv and the system
folders (no helm unless a test brings its own through `path_first`).
"""

import os
import subprocess
import sys

import yaml
from conftest import REPO

BIN = os.path.dirname(sys.executable)


def write_inventory(path, hosts, common=None):
    base = dict(common or {})
    data = {"all": {"hosts": {name: dict(base, **hvars) for name, hvars in hosts.items()}}}
    path.write_text(yaml.safe_dump(data))


def run_playbook(tmp_path, playbook, inventory, *args, path_first=None, env_extra=None):
    """ansible-playbook `playbook` (relative to the repo) -> (CompletedProcess, bundle path)."""
    env = dict(os.environ)
    env.pop("KAIOPS_EVIDENCE_DIR", None)  # of old; nothing reads it now
    env.pop("KUBERNETES_SERVICE_HOST", None)
    path = [BIN, "/usr/bin", "/bin"]
    env.update(
        {
            "KUBECONFIG": "/nonexistent/kubeconfig",  # never the user's own clusters
            "ANSIBLE_CONFIG": os.path.join(REPO, "ansible.cfg"),
            "KAIOPS_EVIDENCE_ROOT": str(tmp_path / "evidence"),
            "HOME": str(tmp_path),  # the dynamic client's discovery cache stays here
            "PATH": os.pathsep.join(([path_first] if path_first else []) + path),
            "ANSIBLE_NOCOLOR": "1",
        }
    )
    env.update(env_extra or {})
    done = subprocess.run(
        [os.path.join(BIN, "ansible-playbook"), "-i", str(inventory), playbook, *args],
        env=env,
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    return done, os.path.realpath(tmp_path / "evidence" / "latest")
