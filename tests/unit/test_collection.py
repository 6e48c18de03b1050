"""The collection stands on its own: its action group is complete, the connection options reach
modules through module_defaults only, the rollout runs by its FQCN, the runtime requirements hold
no development tool, and the galaxy build ships what it should and nothing of the lab."""

import glob
import os
import subprocess
import sys
import tarfile

import pytest
import yaml
from conftest import REPO

BIN = os.path.dirname(sys.executable)
MODULES = sorted(
    os.path.splitext(os.path.basename(p))[0]
    for p in glob.glob(os.path.join(REPO, "plugins", "modules", "*.py"))
)
CONNECTION_OPTIONS = {"kubeconfig", "context", "request_timeout"}
TASK_FILES = sorted(
    glob.glob(os.path.join(REPO, "roles", "*", "tasks", "*.yml"))
    + glob.glob(os.path.join(REPO, "playbooks", "*.yml"))
)


def load(path):
    with open(path) as handle:
        return yaml.safe_load(handle)


def test_action_group_kai_lists_every_module():
    runtime = load(os.path.join(REPO, "meta", "runtime.yml"))
    assert sorted(runtime["action_groups"]["kai"]) == MODULES


def tasks_of(node):
    """Every task in a task file or play list, blocks, rescues and always included."""
    for item in node or []:
        if not isinstance(item, dict):
            continue
        for key in ("block", "rescue", "always", "tasks", "pre_tasks", "post_tasks", "handlers"):
            yield from tasks_of(item.get(key))
        yield item


@pytest.mark.parametrize("path", TASK_FILES, ids=[os.path.relpath(p, REPO) for p in TASK_FILES])
def test_connection_options_come_from_module_defaults_only(path):
    for task in tasks_of(load(path)):
        for action, args in task.items():
            if action.startswith(("kaiops.runbooks.", "kubernetes.core.")) and isinstance(
                args, dict
            ):
                given = CONNECTION_OPTIONS & set(args)
                assert not given, "%s: task %r gives %s; use module_defaults" % (
                    os.path.relpath(path, REPO),
                    task.get("name"),
                    sorted(given),
                )


def test_kubernetes_core_tasks_run_on_the_controller():
    for path in TASK_FILES:
        for task in tasks_of(load(path)):
            if any(k.startswith("kubernetes.core.") for k in task):
                assert task.get("delegate_to") == "localhost", (path, task.get("name"))


def test_the_root_rollout_is_a_thin_import_of_the_collections_playbook():
    plays = load(os.path.join(REPO, "rollout.yml"))
    assert plays == [
        {"name": "Rollout", "ansible.builtin.import_playbook": "kaiops.runbooks.rollout"}
    ]


def test_the_rollout_runs_by_its_fqcn(tmp_path):
    env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(REPO, "ansible.cfg"), HOME=str(tmp_path))
    env["PATH"] = BIN + os.pathsep + env.get("PATH", "")
    done = subprocess.run(
        [os.path.join(BIN, "ansible-playbook"), "--syntax-check", "kaiops.runbooks.rollout"],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr


def test_runtime_requirements_are_apart_from_the_development_tools():
    def names(path):
        out = []
        for line in open(path):
            line = line.split("#")[0].strip()
            if line and not line.startswith("-"):
                out.append(line.split("=")[0].split(">")[0].split("<")[0].strip().lower())
        return out

    runtime = names(os.path.join(REPO, "requirements.txt"))
    dev = names(os.path.join(REPO, "requirements-dev.txt"))
    assert "kubernetes" in runtime
    for tool in ("molecule", "ansible-lint", "pytest", "ruff"):
        assert tool not in runtime and tool in dev, tool
    assert "-r requirements.txt" in open(os.path.join(REPO, "requirements-dev.txt")).read()


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    out = tmp_path_factory.mktemp("build")
    done = subprocess.run(
        [
            os.path.join(BIN, "ansible-galaxy"),
            "collection",
            "build",
            "--output-path",
            str(out),
            ".",
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    (tarball,) = glob.glob(str(out / "*.tar.gz"))
    with tarfile.open(tarball) as archive:
        return sorted(archive.getnames())


@pytest.mark.parametrize(
    "shipped",
    [
        "meta/kai_releases.yml",
        "meta/runtime.yml",
        "playbooks/rollout.yml",
        "playbooks/vars/rollout.yml",
        "plugins/plugin_utils/action.py",
        "roles/kai_rollout/tasks/main.yml",
        "requirements.txt",
        "inventories/example/hosts.yml",
        "tests/unit/test_collection.py",
        "tests/unit/plugins/module_utils/rollout/test_gates.py",
        "tests/unit/conftest.py",
    ],
)
def test_the_build_ships(built, shipped):
    assert shipped in built


@pytest.mark.parametrize(
    "left_out",
    [
        "lab/",
        "tests/lab/",
        "tests/lifecycle/",
        "tests/unit/test_lab_config.py",
        "tests/unit/test_oci.py",
        "tests/unit/hack/",
        "tests/unit/tools/",
        "tests/unit/fixtures/lab/",
        "molecule/",
        "inventories/lab/",
        "inventories/lab-fleet/",
        "tools/",
        "mk/",
        "hack/",
        "requirements-dev.txt",
        "pyproject.toml",
        "rollout.yml",
        "docs/lab.md",
        "evidence/",
    ],
)
def test_the_build_leaves_out(built, left_out):
    assert not [name for name in built if name == left_out.rstrip("/") or name.startswith(left_out)]
