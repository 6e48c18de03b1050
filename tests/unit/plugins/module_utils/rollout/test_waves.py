"""rollout/waves.py and the vocabulary's wave computation: each cluster's wave (the batches
Ansible's serial makes, checked against Ansible's own code), the failure budget (the canary allows
none), clusters not started, and the report's fleet view."""

from types import SimpleNamespace

import pytest
from ansible.executor.playbook_executor import PlaybookExecutor
from conftest import PATCHED, PRE, THRESHOLDS

from ansible_collections.kaiops.runbooks.plugins.filter.serial import serial
from ansible_collections.kaiops.runbooks.plugins.module_utils.rollout import change_runner as CR
from ansible_collections.kaiops.runbooks.plugins.module_utils.rollout import pipeline
from ansible_collections.kaiops.runbooks.plugins.module_utils.rollout import waves as W
from ansible_collections.kaiops.runbooks.plugins.module_utils.rollout.report import (
    build,
    render_markdown,
)
from ansible_collections.kaiops.runbooks.plugins.module_utils.vocabulary import (
    canary_first,
    canary_hosts,
    serial_list,
    wave_batches,
    wave_numbers,
)
from plugins.module_utils.rollout.test_change import figures
from plugins.module_utils.rollout.test_change_runner import step

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


# ---------------------------------------------------------------- a named canary group

GROUPS = {"all": ["c1", "c2", "c3", "c4"], "canary": ["c3"], "pair": ["c2", "c4"], "none": []}


def ansible_play(folder, pattern, groups, serial_value):
    """The play's hosts and batches as ansible-playbook makes them for a host pattern, over an
    inventory of ``groups`` (hosts of "all" ungrouped, in order)."""
    import yaml
    from ansible.inventory.manager import InventoryManager
    from ansible.parsing.dataloader import DataLoader

    children = {n: {"hosts": {h: None for h in hs}} for n, hs in groups.items() if n != "all"}
    data = {"all": {"hosts": {h: None for h in groups["all"]}, "children": children}}
    path = folder / "hosts.yml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    inventory = InventoryManager(loader=DataLoader(), sources=[str(path)])
    executor = PlaybookExecutor.__new__(PlaybookExecutor)
    executor._inventory = inventory
    play = SimpleNamespace(hosts=pattern, order=None, serial=serial_value)
    return [h.name for h in inventory.get_hosts(pattern)], [
        [h.name for h in batch] for batch in executor._get_serialized_batches(play)
    ]


@pytest.mark.parametrize(
    "canary, waves, batches",
    [
        ("canary", [1], [["c3"], ["c1"], ["c2"], ["c4"]]),
        ("pair", [2], [["c2", "c4"], ["c1", "c3"]]),
        ("canary", ["50%"], [["c3"], ["c1", "c2"], ["c4"]]),
        ("", [1, 3], [["c1"], ["c2", "c3", "c4"]]),
        ("nosuch", [1, 3], [["c1"], ["c2", "c3", "c4"]]),
        ("canary:all", [1, 3], [["c1"], ["c2", "c3", "c4"]]),  # not a group's name: no canary
    ],
)
def test_a_canary_group_is_the_first_wave_ansible_makes_and_the_rollout_records(
    tmp_path, canary, waves, batches
):
    pattern = canary_first(canary)
    hosts, made = ansible_play(tmp_path, pattern, GROUPS, serial(waves, canary, GROUPS))
    assert made == batches
    assert wave_batches(serial_list(waves, len(canary_hosts(canary, GROUPS))), hosts) == batches


@pytest.mark.parametrize(
    "name, hosts, play, problem",
    [
        ("canary", ["c3"], ["c3", "c1", "c2"], None),
        ("canary", ["c3"], ["c1", "c3", "c2"], "did not put the canary group 'canary' first"),
        ("canary", ["c3", "c9"], ["c3", "c9"], None),
        ("canary", ["c3", "c9"], ["c3", "c1"], "leaves out: c9"),
        ("none", [], ["c1"], "no cluster in group 'none'"),
        ("nosuch", None, ["c1"], "no cluster in group 'nosuch'"),
        ("canary:all", None, ["c1"], "cannot be an inventory group's name"),
        (["canary"], None, ["c1"], "cannot be an inventory group's name"),
    ],
)
def test_canary_problem_names_what_is_wrong_and_the_fix(name, hosts, play, problem):
    found, fix = W.canary_problem(name, hosts, play)
    if problem is None:
        assert (found, fix) == (None, None)
    else:
        assert problem in found and fix


def test_a_named_canary_is_a_request_gate_and_its_size_the_first_wave():
    record = {"gates": [], "steps": [{"step": "request", "status": "done"}]}
    canary = {"name": "pair", "hosts": ["c2", "c4"], "play": ["c2", "c4", "c1", "c3"]}
    out = pipeline.add_policy(record, None, [1], canary)
    gates = {g["gate"]: g for g in out["gates"]}
    assert gates["canary_group"]["passed"] and gates["canary_group"]["figure"] == "pair: c2, c4"
    assert out["change"]["waves"] == [2, 1]
    assert out["change"]["canary"] == {"group": "pair", "clusters": ["c2", "c4"]}
    assert W.wave_entry(out["change"], canary["play"], "c4")["wave"] == 1
    assert W.wave_entry(out["change"], canary["play"], "c1")["wave"] == 2
    empty = pipeline.add_policy(record, None, [1], {"name": "none", "hosts": [], "play": ["c1"]})
    bad = [g for g in empty["gates"] if not g["passed"]]
    assert [g["gate"] for g in bad] == ["canary_group"] and bad[0]["fix"]
    assert empty["request_well_formed"] is False and empty["change"]["waves"] == [1]
    assert "canary" not in empty["change"]
    none = pipeline.add_policy(record, None, [1, 2], {"name": "", "hosts": None, "play": ["c1"]})
    assert "canary_group" not in {g["gate"] for g in none["gates"]}
    assert none["change"]["waves"] == [1, 2]


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


# -------------------------------------------------------------------------------------------------
# Issue 21 item 2: the soak after a passing verification and the progress deadline per cluster.
#
# The progress deadline is a pure function of the record's times and a given clock reading
# (``rollout/waves.py``); the soak's verification is judged by the same acceptance gates under the
# stage ``soak``, and both are answered by the failed-gate policy at the decision.


def change(deadline=60, started_at=1000.0, soak=False):
    out = {"progress_deadline_s": deadline, "upgrade": {"status": "done"}}
    if started_at is not None:
        out["upgrade"]["started_at"] = started_at
    if soak:
        out["figures"] = {"verify": figures(), "soak": figures()}
    return out


@pytest.mark.parametrize("deadline", [0, None, "0"])
def test_progress_gate_is_none_without_a_deadline(deadline):
    assert W.progress_gate(change(deadline=deadline), 99999.0) is None


@pytest.mark.parametrize(
    ("started_at", "decided_at", "passed", "figure"),
    [
        (1000.0, 1059.9, True, 59.9),
        (1000.0, 1060.0, True, 60.0),  # on the deadline is in time
        (1000.0, 1060.2, False, 60.2),
        ("1000.0", 1030.0, True, 30.0),  # the role's set_fact gives the start as text
        (1000.0, 5000.0, False, 4000.0),
    ],
)
def test_progress_gate_measures_the_upgrades_start_to_the_decision(
    started_at, decided_at, passed, figure
):
    found = W.progress_gate(change(started_at=started_at), decided_at)
    assert (found["gate"], found["stage"], found["passed"]) == (
        "progress_deadline",
        "verify",
        passed,
    )
    assert found["figure"] == figure and found["unit"] == "s"
    assert "<= 60 s" in found["threshold"]
    if passed:
        assert found["message"] == "" and found["fix"] == ""
    else:
        assert "over the progress deadline of 60 s" in found["message"]
        assert "kaiops_rollout_progress_deadline_s" in found["fix"]


@pytest.mark.parametrize(
    ("started_at", "decided_at"),
    [
        (None, 1100.0),
        ("not a time", 1100.0),
        (1000.0, None),
        (float("nan"), 1100.0),
        (1200.0, 1100.0),
    ],
)
def test_progress_gate_fails_on_no_data(started_at, decided_at):
    found = W.progress_gate(change(started_at=started_at), decided_at)
    assert found["passed"] is False and found["figure"] == "no data"
    assert "no data is not a pass" in found["message"]


def test_progress_gate_is_judged_under_the_soak_after_a_soak():
    assert W.progress_gate(change(soak=True), 1010.0)["stage"] == "soak"


# ---------------------------------------------------------------- the soak's verification


def upgraded(**extra):
    """The record of a change whose target runs, before its verification."""
    return {
        "cluster": "lab",
        "request": {"kai_version": PATCHED, "thresholds": THRESHOLDS},
        "gates": [],
        "steps": [],
        "evidence": [],
        "change": dict(
            {
                "before": {"version": PRE, "revision": 40},
                "upgrade": {"status": "done", "started_at": 1000.0},
                "policy": {"policy": "rollback", "source": "default"},
                "soak_s": 300,
            },
            **extra,
        ),
    }


def soaked(soak_figures):
    record = pipeline.add_figures(upgraded(), "verify", figures(), THRESHOLDS)
    assert all(g["passed"] for g in record["gates"])
    return pipeline.add_figures(record, "soak", soak_figures, THRESHOLDS)


def test_a_soak_is_verified_on_the_version_under_test():
    assert CR.verify_inputs(upgraded(), "soak")["version"] == PATCHED


def test_a_regressed_gate_at_the_end_of_the_soak_decides_rollback(fake_module):
    record = soaked(figures(bound=(3.0, 9.0)))
    soak_gates = [g for g in record["gates"] if g["stage"] == "soak"]
    assert {g["gate"] for g in soak_gates if not g["passed"]} == {
        "bind_latency_p50",
        "bind_latency_p95",
    }
    steps = {s["step"]: s for s in record["steps"]}
    assert "after a soak of 300 s, failed: bind_latency_p50" in steps["soak"]["reason"]
    decided = step(fake_module, record=record, decision={}, wall=lambda: 1100.0)
    assert decided["action"] == "rollback" and decided["passed"] is False
    reason = {s["step"]: s for s in decided["record"]["steps"]}["decision"]["reason"]
    assert reason.startswith("failed gates bind_latency_p50, bind_latency_p95: policy rollback")


def test_a_soak_that_held_leaves_the_change(fake_module):
    decided = step(fake_module, record=soaked(figures()), decision={}, wall=lambda: 1100.0)
    assert decided["action"] == "none"


def test_a_pause_policy_answers_a_regressed_soak_too(fake_module):
    record = soaked(figures(restarts=2))
    record["change"]["policy"] = {"policy": "pause", "source": "request"}
    decided = step(fake_module, record=record, decision={}, wall=lambda: 1100.0)
    assert decided["action"] == "pause" and decided["decision"] == "paused"


# ---------------------------------------------------------------- the deadline at the decision


@pytest.mark.parametrize(("now", "action"), [(1059.0, "none"), (1061.0, "rollback")])
def test_the_decision_judges_the_progress_deadline_by_its_clock(fake_module, now, action):
    record = pipeline.add_figures(upgraded(progress_deadline_s=60), "verify", figures(), THRESHOLDS)
    decided = step(fake_module, record=record, decision={}, wall=lambda: now)
    assert decided["action"] == action
    gate = [g for g in decided["record"]["gates"] if g["gate"] == "progress_deadline"]
    assert [(g["stage"], g["figure"], g["passed"]) for g in gate] == [
        ("verify", round(now - 1000.0, 1), action == "none")
    ]


def test_no_deadline_adds_no_gate(fake_module):
    record = pipeline.add_figures(upgraded(), "verify", figures(), THRESHOLDS)
    decided = step(fake_module, record=record, decision={}, wall=lambda: 99999.0)
    assert decided["action"] == "none"
    assert "progress_deadline" not in {g["gate"] for g in decided["record"]["gates"]}


def test_the_policy_entry_records_soak_and_deadline_only_when_set(fake_module):
    rec = upgraded()
    del rec["change"]["soak_s"]
    out = step(fake_module, record=rec, policy={"soak_s": 0, "progress_deadline_s": 0})
    assert "soak_s" not in out["record"]["change"]
    out = step(fake_module, record=rec, policy={"soak_s": 600, "progress_deadline_s": 1800})
    assert (out["record"]["change"]["soak_s"], out["record"]["change"]["progress_deadline_s"]) == (
        600,
        1800,
    )


# ---------------------------------------------------------------- the report


def test_the_report_shows_the_soaks_gates_and_figures_beside_the_verifications():
    record = soaked(figures(bound=(3.0, 9.0)))
    record["change"]["figures"]["baseline"] = dict(figures(), version=PRE)
    record["change"]["figures"]["verify"]["version"] = PATCHED
    record["decision"] = "rolled_back"
    report = build({"kai_version": PATCHED}, {"lab": record}, "2026-12-06T00:00:00Z", run_id="r")
    markdown = render_markdown(report)
    assert "| lab | soak | bind_latency_p50 | 3.0" in markdown
    assert "| lab | verify | bind_latency_p50 | 0.5" in markdown
    assert "| After (%s) | After a soak of 300 s |" % PATCHED in markdown
    assert "| submit-to-bound p50 (s) | 0.5 | 0.5 | 3.0 |" in markdown
