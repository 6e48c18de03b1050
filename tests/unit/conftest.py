"""Shared fixtures: fixture paths, the fake API server, a fake AnsibleModule."""

import json
import os
import sys

import pytest
import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
FIXTURES = os.path.join(HERE, "fixtures")
# The shared helpers (this file, fakeapi.py, playbook_run.py) import by their bare names from any
# subfolder: this folder goes first on sys.path.
sys.path.insert(0, HERE)
# The tests mirror the code (tests/unit/plugins/module_utils/<pkg>/test_<file>.py, see
# test_layout.py), so basenames repeat (test_runner.py in several packages, test_kai_request.py
# for an action and a module). Every subfolder is a package (an empty __init__.py, as
# ansible-test's empty-init rule wants) and this folder is not: pytest's default import mode names
# each test module by its path from here (plugins.module_utils.rollout.test_runner), so no two
# clash, and a test imports another's helpers by that name. --import-mode=importlib would not need
# the files, but it imports conftest.py a second time for `from conftest import ...`, and
# ExitJson would then be two classes.

from fakeapi import FakeAPI, FakeClient  # noqa: E402

# KAI's release facts: the collection's one data file (tests read it, never restate it).
with open(os.path.join(REPO, "meta", "kai_releases.yml")) as _handle:
    RELEASES = yaml.safe_load(_handle)
AFFECTED_RANGE = RELEASES["affected_range"]
PRE, PATCHED = RELEASES["pair"]["pre"], RELEASES["pair"]["patched"]
# A complete, valid set of the rollout's thresholds (the lab inventory's values).
THRESHOLDS = {
    "bind_latency_p50_s": 2,
    "bind_latency_p95_s": 5,
    "ready_latency_p50_s": 5,
    "ready_latency_p95_s": 15,
    "completion_rate_min": 1.0,
    "binder_restarts_max": 0,
    "stale_objects_max": 0,
    "observation_window_s": 300,
}


def fixture_path(*parts):
    return os.path.join(FIXTURES, *parts)


@pytest.fixture
def cluster_fixture():
    """Path of a cluster fixture by name (tests/unit/fixtures/clusters/<name>.yml)."""
    return lambda name: fixture_path("clusters", name + ".yml")


@pytest.fixture
def fake_client(cluster_fixture):
    return lambda name, **kw: FakeClient.from_fixture(cluster_fixture(name), **kw)


@pytest.fixture
def fake_api(cluster_fixture):
    """Start FakeAPI servers from fixtures; all are stopped at teardown."""
    started = []

    def start(name=None, **kwargs):
        api = FakeAPI.from_fixture(cluster_fixture(name)) if name else FakeAPI(**kwargs)
        for key, value in kwargs.items():
            setattr(api, key, value)
        started.append(api.start())
        return api

    yield start
    for api in started:
        api.stop()


class ExitJson(Exception):
    def __init__(self, result):
        super().__init__("exit_json")
        self.result = result


class FailJson(Exception):
    def __init__(self, result):
        super().__init__(result.get("msg"))
        self.result = result


class FakeModule:
    """What the runner uses of AnsibleModule: params, check_mode, warn, exit/fail, get_bin_path."""

    def __init__(self, params, check_mode=False, bin_paths=None):
        self.params = params
        self.check_mode = check_mode
        self.warnings = []
        self._bin_paths = bin_paths or {}

    def warn(self, msg):
        self.warnings.append(msg)

    def exit_json(self, **result):
        json.dumps(result)  # a module result must serialize
        raise ExitJson(result)

    def fail_json(self, **result):
        raise FailJson(result)

    def get_bin_path(self, name):
        return self._bin_paths.get(name)


@pytest.fixture
def fake_module():
    return FakeModule
