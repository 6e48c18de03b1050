"""Module docs speak to users: DOCUMENTATION and RETURN name no file inside the collection (a
path moves with a refactor and means nothing on Galaxy's page); they name modules, options,
playbooks and docs instead."""

import glob
import importlib
import os
import re

import pytest
from conftest import REPO

MODULES = sorted(
    os.path.splitext(os.path.basename(p))[0]
    for p in glob.glob(os.path.join(REPO, "plugins", "modules", "*.py"))
)
# a Python file, or a path into the collection's code, roles or lab
INTERNAL_PATH = re.compile(r"\w\.py\b|module_utils/|plugin_utils/|roles/|\blab/")


def internal_paths(text):
    return [line.strip() for line in text.splitlines() if INTERNAL_PATH.search(line)]


def test_internal_path_pattern_finds_paths():
    assert internal_paths("as C(rollout/change.py) decides\nfine text") == [
        "as C(rollout/change.py) decides"
    ]
    assert internal_paths("see module_utils/scan and roles/kai_x/tasks") != []
    assert internal_paths("the playbook recovery.yml; docs/diagnose.md") == []


@pytest.mark.parametrize("name", MODULES)
def test_module_docs_cite_no_internal_path(name):
    module = importlib.import_module("ansible_collections.kaiops.runbooks.plugins.modules." + name)
    found = internal_paths(module.DOCUMENTATION) + internal_paths(module.RETURN)
    assert not found, "%s: docs name internal files, reword for users: %s" % (name, found)
