"""recovery.yml uses diagnose.yml's classification: kai_recovery_info returns each Pending pod
KAI schedules with the cause the shared classifier (scan/pending.py) gives it, and recovery.md
shows it per pod."""

import pytest
from conftest import ExitJson
from fakeapi import FakeClient

from ansible_collections.kaiops.runbooks.plugins.module_utils.recovery.report import (
    build,
    render_markdown,
)
from ansible_collections.kaiops.runbooks.plugins.module_utils.recovery.runner import (
    run_recovery_info,
)
from plugins.module_utils.diagnose.test_client import objects
from plugins.module_utils.scan.test_pending import BASE, LOCAL, NOW, causes_of, cluster

PARAMS = {
    "cluster": "c1",
    "kubeconfig": None,
    "context": None,
    "request_timeout": 5,
    "kai_namespace": "kai-scheduler",
    "binder_deployment": "binder",
    "namespaces": [],
    "reservation_namespace": "kai-resource-reservation",
    "min_age_s": 300,
    "window_s": 0,
    "window_rule": {},
    "baseline": None,
    "interventions": [],
    "observe_started_at": None,
}


def recovery_facts(fake_module, params):
    client = FakeClient(objects(LOCAL), served=BASE["served"], logs=BASE["logs"])
    with pytest.raises(ExitJson) as done:
        run_recovery_info(fake_module(params), client_factory=lambda *a: client, now=lambda: NOW)
    return done.value.result


def test_recovery_gives_each_pending_pod_the_cause_diagnose_gives(fake_module):
    result = recovery_facts(fake_module, dict(PARAMS))
    diagnosed, _raw = cluster(LOCAL)
    assert causes_of(result["pending"]) == causes_of(diagnosed)
    assert [r["cause"] for r in result["pending"]["by_cause"]] == [
        r["cause"] for r in diagnosed["by_cause"]
    ]
    # recovery reads no component log: it says so
    assert any("log" in note for note in result["pending"]["notes"])


def test_recovery_does_not_classify_again_at_each_observation_poll(fake_module):
    result = recovery_facts(fake_module, dict(PARAMS, baseline=[], observe_started_at=1.0))
    assert "pending" not in result and "observation" in result


def test_recovery_md_shows_the_cause_per_pending_pod(fake_module):
    result = recovery_facts(fake_module, dict(PARAMS))
    entry = dict(result, status="ok", interventions=[], observation={}, inventory={})
    markdown = render_markdown(build({"c1": entry}, "2026-12-01T12:00:00Z"))
    assert "### Pending pods KAI schedules, by cause" in markdown
    assert "| case-nilmap/nil-0 | `bind_nil_map`: BindRequest nil-0 `status.reason`" in markdown
    assert "step `delete_dataless_configmaps`" in markdown
