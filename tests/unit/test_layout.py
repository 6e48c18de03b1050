"""tests/unit mirrors the code (issue 20 item 5): a test file in a subfolder names the one source
file it tests, by the rules in MIRRORS; a test file at the top is one of the collection-wide
tests named in TOP_LEVEL. A new test file that follows neither fails here, naming the fix."""

import os
import tomllib

import pytest
from conftest import HERE, REPO

# The rule as data: the first folder of a test file's path under tests/unit, and the source file
# the test file mirrors ({dir}: the test file's folder, {name}: its name less "test_" and ".py").
MIRRORS = {
    "plugins": "{dir}/{name}.py",  # plugins/module_utils/<pkg>/test_<file>.py -> <file>.py there
    "playbooks": "playbooks/{name}.yml",  # runs the playbook with ansible-playbook
    "roles": "roles/{name}",  # runs the role (through a playbook)
    "inventories": "inventories/{name}",  # every playbook against that inventory
    "tools": "tools/{name}.py",
    "hack": "hack/{name}.sh",
}
# Tests of the collection as a whole, or of files the lead keeps at the top (the lab's).
TOP_LEVEL = {
    "test_ansible_runner.py",  # the collection under ansible-runner, as AWX runs it
    "test_collection.py",  # the built tarball, the action group, the connection options
    "test_execution_environment.py",  # meta/execution-environment.yml against the repository
    "test_lab_config.py",  # the lab's data (lab/)
    "test_layers.py",  # every import between the collection's Python files
    "test_layout.py",  # this file
    "test_module_docs.py",  # every module's docs
    "test_modules.py",  # every module's main()
    "test_oci.py",  # lab/kailab/oci.py
    "test_renamed_modules.py",  # meta/runtime.yml's redirects
    "test_roles.py",  # every role's argument specs
}


def mirrored_source(test_path):
    """The source file (from the repository root) that a test file mirrors, by MIRRORS; None for
    a file that is no test, or a test at the top; a ValueError names a folder no rule covers."""
    folder, base = os.path.split(test_path)
    if not (base.startswith("test_") and base.endswith(".py")) or not folder:
        return None
    top = folder.split("/")[0]
    if top not in MIRRORS:
        raise ValueError(
            "%s: no rule for tests/unit/%s/; put the test beside the path of its source (%s)"
            % (test_path, top, ", ".join(sorted(MIRRORS)))
        )
    name = base[len("test_") : -len(".py")]
    return MIRRORS[top].format(dir=folder, name=name)


def layout_problems(test_paths, exists):
    """Every test file that mirrors no existing source file, with what to do about it."""
    problems = []
    for path in test_paths:
        try:
            source = mirrored_source(path)
        except ValueError as error:
            problems.append(str(error))
            continue
        if source is None and "/" not in path and path not in TOP_LEVEL:
            problems.append(
                "%s: a test at the top must test the collection as a whole (add it to TOP_LEVEL "
                "with why); otherwise move it beside its source's path" % path
            )
        elif source is not None and not exists(source):
            problems.append(
                "%s mirrors %s, which does not exist: rename or move the test to mirror the "
                "source file it tests" % (path, source)
            )
    return problems


def unit_tree():
    """Test files and folders under tests/unit, relative to it (fixtures hold no tests)."""
    files, folders = [], []
    for root, dirs, names in os.walk(HERE):
        dirs[:] = sorted(d for d in dirs if d not in ("fixtures", "__pycache__", ".hypothesis"))
        rel = os.path.relpath(root, HERE)
        if rel != ".":
            folders.append(rel)
        files += [os.path.normpath(os.path.join(rel, n)) for n in names if n.startswith("test_")]
    return sorted(f for f in files if f.endswith(".py")), folders


@pytest.mark.parametrize(
    ("test_path", "source"),
    [
        ("plugins/module_utils/rollout/test_gates.py", "plugins/module_utils/rollout/gates.py"),
        ("plugins/module_utils/test_cost.py", "plugins/module_utils/cost.py"),
        ("plugins/modules/test_kai_snapshot.py", "plugins/modules/kai_snapshot.py"),
        ("plugins/action/test_kai_request.py", "plugins/action/kai_request.py"),
        ("playbooks/test_rollout.py", "playbooks/rollout.yml"),
        ("roles/test_kai_request.py", "roles/kai_request"),
        ("tools/test_test_summary.py", "tools/test_summary.py"),
        ("hack/test_drill.py", "hack/drill.sh"),
        ("test_collection.py", None),
        ("plugins/module_utils/rollout/__init__.py", None),
    ],
)
def test_mirrored_source_maps_a_test_file_to_its_source(test_path, source):
    assert mirrored_source(test_path) == source


def test_a_test_that_mirrors_nothing_is_named_with_its_fix():
    on_disk = {"plugins/module_utils/rollout/gates.py"}
    problems = layout_problems(
        [
            "plugins/module_utils/rollout/test_gates.py",
            "plugins/module_utils/rollout/test_gates_more.py",
            "test_rollout_gates.py",
            "molecule/test_x.py",
            "test_collection.py",
        ],
        on_disk.__contains__,
    )
    assert problems == [
        "plugins/module_utils/rollout/test_gates_more.py mirrors "
        "plugins/module_utils/rollout/gates_more.py, which does not exist: rename or move the "
        "test to mirror the source file it tests",
        "test_rollout_gates.py: a test at the top must test the collection as a whole (add it to "
        "TOP_LEVEL with why); otherwise move it beside its source's path",
        "molecule/test_x.py: no rule for tests/unit/molecule/; put the test beside the path of its "
        "source (hack, inventories, playbooks, plugins, roles, tools)",
    ]


def test_every_unit_test_file_mirrors_a_source_file():
    files = unit_tree()[0]
    assert any(f.startswith("plugins/") for f in files)  # the walk found the tree
    assert layout_problems(files, lambda p: os.path.exists(os.path.join(REPO, p))) == []


def test_every_top_level_test_named_in_the_rule_exists():
    assert sorted(n for n in TOP_LEVEL if not os.path.isfile(os.path.join(HERE, n))) == []


def pyproject():
    with open(os.path.join(REPO, "pyproject.toml"), "rb") as handle:
        return tomllib.load(handle)["tool"]


def test_every_test_folder_is_a_package_pytest_does_not_skip():
    # A folder without __init__.py would import its test_runner.py as the top-level module
    # test_runner, clashing with the next one (conftest.py says why packages); a folder name in
    # norecursedirs is never collected (one named "evidence" was, silently).
    skipped = set(pyproject()["pytest"]["ini_options"]["norecursedirs"])
    folders = unit_tree()[1]
    assert [f for f in folders if not os.path.isfile(os.path.join(HERE, f, "__init__.py"))] == []
    assert [f for f in folders if set(f.split("/")) & skipped] == []


def test_ruff_skips_no_folder_of_the_code_or_its_tests():
    # A bare name in ruff's exclude matches a folder of that name anywhere: "evidence" (meant for
    # the run output at the top) once left plugins/module_utils/evidence and its tests unlinted.
    bare = {p for p in pyproject()["ruff"]["extend-exclude"] if "/" not in p}
    folders = [os.path.join("tests/unit", f) for f in unit_tree()[1]]
    for root, dirs, _names in os.walk(os.path.join(REPO, "plugins")):
        folders += [os.path.relpath(os.path.join(root, d), REPO) for d in dirs]
    assert [f for f in folders if set(f.split("/")) & bare] == []
