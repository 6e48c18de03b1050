"""The rollout modules: argument specs match DOCUMENTATION; EXAMPLES and RETURN are YAML."""

import pytest
import yaml
from test_modules import compare, documented_options, load

MODULES = ["kai_preflight_gates", "kai_rollout_report", "kai_helm_snapshot"]


@pytest.mark.parametrize("name", MODULES)
def test_rollout_module_argspec_matches_documentation(name):
    module = load(name)
    compare(module.argspec(), documented_options(module), name)


@pytest.mark.parametrize("name", MODULES)
def test_rollout_module_examples_and_return_are_yaml(name):
    module = load(name)
    assert yaml.safe_load(module.EXAMPLES)
    assert yaml.safe_load(module.RETURN)
