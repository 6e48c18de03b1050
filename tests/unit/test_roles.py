"""roles/*: every entry point has an argument spec whose defaults match defaults/main.yml."""

import glob
import os

import pytest
import yaml
from conftest import REPO

ROLES = sorted(glob.glob(os.path.join(REPO, "roles", "*")))


def load(path):
    with open(path) as handle:
        return yaml.safe_load(handle) or {}


@pytest.mark.parametrize("role", ROLES, ids=[os.path.basename(r) for r in ROLES])
def test_role_argument_specs_match_defaults(role):
    name = os.path.basename(role)
    specs = load(os.path.join(role, "meta", "argument_specs.yml"))["argument_specs"]
    defaults = load(os.path.join(role, "defaults", "main.yml"))
    entry_points = {
        os.path.splitext(os.path.basename(p))[0]
        for p in glob.glob(os.path.join(role, "tasks", "*.yml"))
    }
    assert "main" in specs and set(specs) <= entry_points
    options = specs["main"]["options"]
    assert set(options) == set(defaults), "argument_specs and defaults/main.yml list different vars"
    for var, spec in options.items():
        assert var.startswith(name + "_"), var
        assert spec.get("default") == defaults[var], var
        assert spec.get("description"), var
