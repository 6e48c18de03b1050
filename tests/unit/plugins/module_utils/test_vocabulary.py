"""The vocabulary (module_utils/vocabulary.VARIABLES) lists every kaiops_* name the playbooks and
roles read: the request check refuses a name that is not there, so a name a role reads but the
vocabulary lacks could never be set. A `kaiops_<feature>_*` wildcard in a comment is allowed for
the features that judge their own names (FEATURES)."""

import glob
import os
import re

import pytest
from conftest import REPO

from ansible_collections.kaiops.runbooks.plugins.module_utils.vocabulary import (
    FEATURES,
    VARIABLES,
    whole,
)

NAME = re.compile(r"\bkaiops_[a-z_]+\*?")
FILES = sorted(
    glob.glob(os.path.join(REPO, "playbooks", "**", "*.yml"), recursive=True)
    + glob.glob(os.path.join(REPO, "roles", "**", "*.yml"), recursive=True)
    + glob.glob(os.path.join(REPO, "roles", "**", "*.j2"), recursive=True)
)


def unknown_names(text):
    """The kaiops_* names in `text` that the vocabulary does not list."""
    found = set()
    for name in NAME.findall(text):
        if name.endswith("*"):
            if name[: -len("_*")] not in ["kaiops_" + f for f in FEATURES]:
                found.add(name)
        elif name not in VARIABLES:
            found.add(name)
    return found


def test_unknown_names_finds_a_name_missing_from_the_vocabulary():
    assert unknown_names("{{ kaiops_kubeconfig }} {{ kaiops_reproduce_cases }}") == set()
    assert unknown_names("when: kaiops_no_such_name | bool") == {"kaiops_no_such_name"}
    assert unknown_names("# the kaiops_rollout_* names") == set()
    assert unknown_names("# the kaiops_other_* names") == {"kaiops_other_*"}


def test_files_are_found():
    assert any(path.endswith(os.path.join("playbooks", "reproduce.yml")) for path in FILES)


def test_every_kaiops_name_read_by_playbooks_and_roles_is_in_the_vocabulary():
    missing = {}
    for path in FILES:
        with open(path) as handle:
            names = unknown_names(handle.read())
        if names:
            missing[os.path.relpath(path, REPO)] = sorted(names)
    assert not missing, "add these to module_utils/vocabulary.py VARIABLES: %s" % missing


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (3, 3),
        ("3", 3),
        (" 12\n", 12),
        ("-2", -2),
        ("3.0", None),
        (3.5, None),
        (None, None),
        ("", None),
    ],
)
def test_whole_reads_a_count_or_its_text_else_the_default(value, expected):
    assert whole(value) == expected
    assert whole(value, 0) == (0 if expected is None else expected)
