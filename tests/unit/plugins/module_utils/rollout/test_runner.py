"""rollout/runner.refused_by_request: a rollout or rollback refused on its request alone is a
refused run (the bundle's status), one that read a cluster or changed one is not."""

from ansible_collections.kaiops.runbooks.plugins.module_utils.rollout.runner import (
    refused_by_request,
)


def cluster(decision="refused", stages=("request",), ran=()):
    steps = [{"step": "request", "status": "done"}] + [
        {"step": s, "status": "done" if s in ran else "not_run"}
        for s in ("inventory", "snapshot", "upgrade")
    ]
    gates = [{"stage": s, "gate": s, "passed": False} for s in stages]
    return {"decision": decision, "gates": gates, "steps": steps}


def test_every_cluster_refused_on_its_request_is_a_refused_run():
    assert refused_by_request({"clusters": {"c1": cluster(), "c2": cluster()}})


def test_a_cluster_that_was_read_or_changed_is_not():
    read = cluster(ran=("inventory",))
    assert not refused_by_request({"clusters": {"c1": cluster(), "c2": read}})
    assert not refused_by_request({"clusters": {"c1": cluster(stages=("request", "preflight"))}})
    assert not refused_by_request({"clusters": {"c1": cluster(decision="proceed")}})


def test_no_cluster_is_no_refusal():
    assert not refused_by_request({"clusters": {}})
