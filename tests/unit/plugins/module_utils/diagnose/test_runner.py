"""module_utils/diagnose/runner.py: the runner's result (the diagnosis, unchanged)."""

import pytest
from conftest import ExitJson
from fakeapi import FakeClient

from ansible_collections.kaiops.runbooks.plugins.module_utils.diagnose import runner
from plugins.module_utils.diagnose.test_client import objects
from plugins.module_utils.scan.test_pending import BASE, LOCAL, NOW

PARAMS = {
    "cluster": "fake",
    "kai_namespace": "kai-scheduler",
    "reservation_namespace": "kai-resource-reservation",
    "scheduler_name": "kai-scheduler",
    "namespaces": [],
    "read_logs": True,
    "log_lines": 300,
    "log_since_s": 600,
    "kubeconfig": None,
    "context": None,
    "request_timeout": 5,
}


def test_runner_returns_the_diagnosis_unchanged(fake_module):
    module = fake_module(dict(PARAMS))

    def factory(_kubeconfig, _context, _timeout):
        return FakeClient(objects(LOCAL), served=BASE["served"], logs=BASE["logs"])

    with pytest.raises(ExitJson) as done:
        runner.run_diagnose_info(module, client_factory=factory, now=lambda: NOW)
    result = done.value.result
    assert result["changed"] is False
    assert result["diagnosis"]["pending"] == sum(len(c["expected"]) for c in LOCAL)
    assert result["diagnosis"]["status"] == "ok"
