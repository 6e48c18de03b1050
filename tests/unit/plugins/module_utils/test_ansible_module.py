"""module_utils/ansible_module.py: run_module turns KaiopsError into fail_json with its details,
and a missing library into a failure before the runner runs."""

import json

import pytest
from ansible.module_utils.testing import patch_module_args

from ansible_collections.kaiops.runbooks.plugins.module_utils import ansible_module
from ansible_collections.kaiops.runbooks.plugins.module_utils.errors import KaiopsError


def test_run_module_turns_kaiops_error_into_failure_with_details(capsys):
    def runner(_module):
        raise KaiopsError("Failed to x: y", status="forbidden", details={"files": ["a"]})

    with patch_module_args({}), pytest.raises(SystemExit) as done:
        ansible_module.run_module({}, runner)
    result = json.loads(capsys.readouterr().out)
    assert done.value.code == 1 and result["msg"] == "Failed to x: y"
    assert result["status"] == "forbidden" and result["files"] == ["a"]


def test_run_module_fails_on_a_missing_library_before_the_runner(capsys):
    with patch_module_args({}), pytest.raises(SystemExit) as done:
        ansible_module.run_module(
            {}, lambda _m: pytest.fail("runner ran"), libraries=[("kubernetes", False, "nope")]
        )
    result = json.loads(capsys.readouterr().out)
    assert done.value.code == 1 and "kubernetes" in result["msg"]
