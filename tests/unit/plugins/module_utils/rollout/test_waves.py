"""rollout/waves.py and the vocabulary's wave computation: each cluster's wave (the batches
Ansible's serial makes, checked against Ansible's own code), the failure budget (the canary allows
none), clusters not started, and the report's fleet view."""

from types import SimpleNamespace

import pytest
from ansible.executor.playbook_executor import PlaybookExecutor

from ansible_collections.kaiops.runbooks.plugins.filter.serial import serial
from ansible_collections.kaiops.runbooks.plugins.module_utils.rollout import waves as W
from ansible_collections.kaiops.runbooks.plugins.module_utils.rollout.report import build
from ansible_collections.kaiops.runbooks.plugins.module_utils.vocabulary import (
    wave_batches,
    wave_numbers,
)

HOSTS = ["h1", "h2", "h3", "h4", "h5"]


def ansible_batches(value, hosts):
    """The batches ansible-playbook itself makes for the play's serial (the filter's)."""
    inventory = SimpleNamespace(get_hosts=lambda pattern, order=None: list(hosts))
    executor = PlaybookExecutor.__new__(PlaybookExecutor)
    executor._inventory = inventory
    return executor._get_serialized_batches(
        SimpleNamespace(hosts="all", order=None, serial=serial(value))
    )


def test_wave_numbers_for_canary_25_percent_then_the_rest_over_five_hosts():
    assert wave_batches([1, "25%", "100%"], HOSTS) == [["h1"], ["h2"], ["h3", "h4", "h5"]]
    assert wave_numbers([1, "25%", "100%"], HOSTS) == {"h1": 1, "h2": 2, "h3": 3, "h4": 3, "h5": 3}


@pytest.mark.parametrize(
    "waves",
    [[1, "25%", "100%"], [1, 2], [2], "40%", [1, "50%"], ["3", "10%"], [], None, "bad", [0]],
)
@pytest.mark.parametrize("count", [1, 3, 5, 7])
def test_wave_batches_are_the_batches_ansible_makes_of_the_serial(waves, count):
    hosts = ["h%d" % n for n in range(count)]
    assert wave_batches(waves, hosts) == ansible_batches(waves, hosts)


def test_wave_entry_records_wave_place_and_budget():
    change = {"waves": [1, 2], "failure_budget": 1}
    assert W.wave_entry(change, ["c3", "c1", "c2"], "c2") == {
        "wave": 2,
        "position": 2,
        "waves": 2,
        "budget": 1,
    }


WAVES_OF = {"a": 1, "b": 2, "c": 2, "d": 3, "e": 3}


@pytest.mark.parametrize(
    ("decisions", "budget", "wave", "reason"),
    [
        ({"a": "approved", "b": "rolled_back"}, 1, 3, None),
        (
            {"a": "approved", "b": "rolled_back", "c": "failed"},
            1,
            3,
            "not started: wave 2 spent its failure budget (2 failed / 1 allowed: b, c)",
        ),
        (
            {"a": "approved", "b": "rolled_back"},
            0,
            3,
            "not started: wave 2 spent its failure budget (1 failed / 0 allowed: b)",
        ),
        ({"a": "rolled_back"}, 5, 2, "not started: the canary (wave 1) failed on a"),
        # the canary's failure stops wave 3 too, whatever wave 2 did (it never started)
        (
            {"a": "paused", "b": "not_started", "c": "not_started"},
            5,
            3,
            "not started: the canary (wave 1) failed on a",
        ),
        ({"a": "rolled_back"}, 0, 1, None),  # nothing comes before the canary
        ({"a": "refused", "b": "not_approved"}, 0, 3, None),  # no change failed
    ],
    ids=["within-budget", "budget-spent", "default-budget", "canary", "canary-cascade",
         "canary-itself", "not-a-failure"],
)  # fmt: skip
def test_not_started_reason(decisions, budget, wave, reason):
    assert W.not_started_reason(wave, WAVES_OF, decisions, budget) == reason


def cluster(decision, wave, position, gates=(), not_started=None, budget=1):
    change = {"wave": wave, "position": position, "failure_budget": budget, "duration_s": 12.5}
    change["before"] = {"version": "v0.16.13", "revision": 2}
    if decision == "rolled_back":
        change["rollback"] = {"version": "v0.16.13", "revision": 4}
    elif decision == "approved":
        change["after"] = {"version": "v0.16.14", "revision": 3}
    if not_started:
        change["not_started"] = not_started
    return {
        "decision": decision,
        "gates": list(gates) or [{"stage": "request", "gate": "owner", "passed": True}],
        "steps": [],
        "evidence": ["snapshots/before-change-x/index.json"],
        "change": change,
    }


def test_fleet_rows_in_wave_order_budget_per_wave_and_clusters_not_started():
    failing = {"stage": "verify", "gate": "bind_latency_p95_s", "passed": False,
               "evidence": "probes/verify-b.json"}  # fmt: skip
    why = "not started: wave 2 spent its failure budget (2 failed / 1 allowed: b, c)"
    clusters = {
        "a": cluster("approved", 1, 0),
        "b": cluster("rolled_back", 2, 1, gates=[failing]),
        "c": cluster("failed", 2, 2),
        "d": cluster("not_started", 3, 4, not_started=why),
        "e": cluster("not_started", 3, 3, not_started=why),
    }
    view = W.fleet(clusters)
    assert [(r["wave"], r["cluster"]) for r in view["rows"]] == [
        (1, "a"), (2, "b"), (2, "c"), (3, "e"), (3, "d")
    ]  # fmt: skip
    assert view["decision"] == "not_approved"
    assert [c["cluster"] for c in view["not_approved"]] == ["b", "c", "e", "d"]
    rows = {r["cluster"]: r for r in view["rows"]}
    assert (rows["a"]["before"], rows["a"]["after"]) == ("v0.16.13", "v0.16.14")
    assert (rows["b"]["after"], rows["b"]["failed_gates"]) == ("v0.16.13", ["bind_latency_p95_s"])
    assert rows["b"]["evidence"] == "probes/verify-b.json"
    assert rows["d"]["after"] is None and rows["d"]["reason"] == why
    assert [(w["wave"], len(w["failed"]), w["allowed"], w["spent"]) for w in view["waves"]] == [
        (1, 0, 0, False),
        (2, 2, 1, True),
        (3, 0, 1, False),
    ]
    assert view["not_started"] == [
        {"cluster": "e", "wave": 3, "reason": why},
        {"cluster": "d", "wave": 3, "reason": why},
    ]


def test_fleet_is_approved_only_when_every_cluster_is():
    assert (
        W.fleet({"a": cluster("approved", 1, 0), "b": cluster("approved", 2, 1)})["decision"]
        == "approved"
    )
    assert W.fleet({"a": cluster("proceed", 1, 0)})["decision"] == "not_approved"
    assert W.fleet({"a": {"decision": "refused", "gates": []}}) is None  # no wave recorded


def test_report_carries_the_fleet_and_a_not_started_cluster_is_never_passed():
    from ansible_collections.kaiops.runbooks.plugins.module_utils.rollout.report import (
        junit_suites,
        render_markdown,
    )

    why = "not started: the canary (wave 1) failed on a"
    clusters = {
        "a": cluster("rolled_back", 1, 0),
        "b": cluster("not_started", 2, 1, not_started=why),
    }
    report = build({"kai_version": "v0.16.14"}, clusters, "2026-12-06T00:00:00Z", run_id="r")
    assert report["decision"] == "rolled_back"
    assert report["clusters"]["b"]["decision"] == "not_started"
    assert report["fleet"]["not_started"] == [{"cluster": "b", "wave": 2, "reason": why}]
    fleet_suite = [s for s in junit_suites(report) if s["name"] == "rollout fleet"][0]
    cases = {c["name"]: c for c in fleet_suite["cases"]}
    assert cases["wave 1 budget"]["failure"]["message"] == "wave 1: 1 failed / 0 allowed"
    assert cases["not started:b"]["skipped"] == why
    assert report["clusters"]["b"]["reasons"] == [why]
    markdown = render_markdown(report)
    assert "Fleet decision: **NOT_APPROVED** - not approved: a ROLLED_BACK, b NOT_STARTED." in (
        markdown
    )
    assert "| 2 | b | v0.16.13 | unchanged | **NOT_STARTED** |" in markdown
    assert "wave 1 (canary) 1/0 **spent**; wave 2 0/1" in markdown
    assert "Not started: b (wave 2: %s)." % why in markdown
