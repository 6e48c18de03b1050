"""module_utils/gpu_access/waiter.py: the stage conditions (rules as data, over observations) and
the watch loop, with the clock, the wall clock and the sleep passed in; no cluster."""

import pytest

from ansible_collections.kaiops.runbooks.plugins.module_utils.errors import KaiopsError
from ansible_collections.kaiops.runbooks.plugins.module_utils.gpu_access import waiter


def pod(phase, node="kaiops-node"):
    return {"phase": phase, "node": node}


def snap(pods, pod_groups=None):
    return {"pods": pods, "pod_groups": pod_groups or {}}


def held(reason):
    """A PodGroup as observed (records.case_snapshot) with KAI's condition for ``reason``:
    the condition's own reason is always Unschedulable."""
    return {
        "reasons": [
            {
                "type": "UnschedulableOnNodePool",
                "reason": "Unschedulable",
                "message": "%s: m." % reason if reason else "m.",
                "reasons": [{"reason": reason, "message": "m"}] if reason else [],
                "specific_reasons": [reason] if reason else [],
            }
        ]
    }


HELD_MISSING = snap({"a": pod("Pending", None)}, {"a": held("QueueDoesNotExist")})
HELD_OVER = snap({"a": pod("Pending", None)}, {"a": held("OverLimit")})
HELD_UNSPECIFIED = snap({"a": pod("Pending", None)}, {"a": held(None)})


@pytest.mark.parametrize(
    ("stage", "observation", "reasons", "met"),
    [
        ("running", snap({"a": pod("Running"), "b": pod("Pending")}), None, False),
        ("running", snap({"a": pod("Running"), "b": pod("Succeeded")}), None, True),
        ("ended", snap({"a": pod("Running"), "b": pod("Succeeded")}), None, False),
        ("ended", snap({"a": pod("Failed"), "b": pod("Succeeded")}), None, True),
        ("ended", snap({}), None, True),
        ("decided", snap({"a": pod("Pending", None)}), None, False),
        ("decided", HELD_MISSING, None, True),
        ("decided", HELD_MISSING, {"a": "OverLimit"}, False),
        ("decided", HELD_OVER, {"a": "OverLimit"}, True),
        ("decided", HELD_UNSPECIFIED, None, True),
        ("decided", HELD_UNSPECIFIED, {"a": "OverLimit"}, False),
        ("decided", HELD_UNSPECIFIED, {"a": "Unschedulable"}, False),
        ("decided", snap({"a": pod("Pending")}), {"a": "OverLimit"}, True),
        ("bound_ended", snap({"a": pod("Pending", None), "b": pod("Running")}), None, False),
        ("bound_ended", snap({"a": pod("Pending", None), "b": pod("Succeeded")}), None, True),
    ],
)  # fmt: skip
def test_conditions(stage, observation, reasons, met):
    assert waiter.CONDITIONS[stage](observation, reasons) is met


class Clock:
    def __init__(self):
        self.t = 0.0
        self.sleeps = []

    def __call__(self):
        return self.t

    def sleep(self, seconds):
        self.sleeps.append(seconds)
        self.t += seconds

    def now(self):
        return "T+%.0f" % self.t


def reader(sequence):
    """read() returning each observation in turn, then the last one again."""
    state = {"i": 0}

    def read():
        item = sequence[min(state["i"], len(sequence) - 1)]
        state["i"] += 1
        return {"pods": {k: dict(v) for k, v in item.items()}, "pod_groups": {}}

    return read


def test_watch_keeps_one_observation_per_stage_and_when_all_ran_together():
    clock = Clock()
    read = reader(
        [
            {"a": pod("Pending", None), "b": pod("Pending", None)},
            {"a": pod("Running"), "b": pod("Running")},
            {"a": pod("Running"), "b": pod("Succeeded")},
            {"a": pod("Succeeded"), "b": pod("Succeeded")},
        ]
    )
    out = waiter.watch(read, ["running", "ended"], 60, 2, clock, clock.now, clock.sleep)
    assert [(s["stage"], s["met"], s["polls"], s["seen_at"]) for s in out] == [
        ("running", True, 2, "T+2"),
        ("ended", True, 2, "T+4"),
    ]
    assert out[0]["all_running"] is True and out[1]["all_running"] is False
    assert out[1]["all_running_seen_at"] == "T+2"
    assert clock.sleeps == [2, 2]


def test_watch_stops_at_the_deadline_and_records_that_the_stage_was_not_reached():
    clock = Clock()
    read = reader([{"a": pod("Pending", None)}])
    out = waiter.watch(read, ["running", "ended"], 5, 2, clock, clock.now, clock.sleep)
    assert [(s["stage"], s["met"]) for s in out] == [("running", False), ("ended", False)]
    assert clock.t == 5 and clock.sleeps == [2, 2, 1]
    assert out[0]["all_running_seen_at"] is None and out[1]["polls"] == 1


def test_watch_refuses_unknown_stages_before_reading():
    with pytest.raises(KaiopsError, match="unknown stages \\['soon'\\]"):
        waiter.watch(lambda: {}, ["soon"], 5, 1, Clock(), str, None)
