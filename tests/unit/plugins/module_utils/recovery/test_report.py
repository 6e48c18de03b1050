"""module_utils/recovery/report.py: prevention kept apart from remediation; the Markdown."""

import jinja2
import pytest
from conftest import AFFECTED_RANGE, PATCHED, PRE

from ansible_collections.kaiops.runbooks.plugins.module_utils.recovery.report import (
    build,
    prevention,
    render_markdown,
    unrecovered_acted_on,
)


def inventory(installed=True, version=PRE, in_range=True):
    return {
        "kai": {"installed": installed, "version": version},
        "exposure": {
            "affected_range": AFFECTED_RANGE,
            "version_in_range": in_range,
            "verdict": "exposed",
        },
    }


@pytest.mark.parametrize(
    "inv, starts",
    [
        (inventory(), "NOT prevented: binder %s is in the affected range" % PRE),
        (inventory(version=PATCHED, in_range=False), "prevented: binder %s is outside" % PATCHED),
        (
            inventory(installed=False, version=None, in_range=None),
            "not assessable: KAI is not installed",
        ),
        (
            inventory(version=None, in_range=None),
            "unknown: the binder image has no readable version tag",
        ),
        ({}, "not assessed: the KAI inventory could not be read"),
    ],
)
def test_prevention_line(inv, starts):
    assert prevention(inv)["line"].startswith(starts)


def test_prevention_names_the_fix_and_takes_the_range_from_the_release_facts():
    line = prevention(inventory(), affected_range=">=9.9.9", fixed_version=PATCHED)["line"]
    assert line.startswith(
        "NOT prevented: binder %s is in the affected range %s" % (PRE, AFFECTED_RANGE)
    )
    assert "upgrading the binder to %s or later does (rollout.yml)" % PATCHED in line
    bare = {
        "kai": {"installed": True, "version": "v1.0.0"},
        "exposure": {"version_in_range": False},
    }
    assert (
        "outside the affected range >=9.9.9" in prevention(bare, affected_range=">=9.9.9")["line"]
    )


def entry(outcomes, interventions):
    return {
        "status": "ok",
        "findings": [
            {
                "id": o["finding"],
                "classification": "nil_map_panic",
                "evidence": ["e"],
                "since": None,
            }
            for o in outcomes
        ],
        "interventions": interventions,
        "observation": {"outcomes": outcomes, "window_s": 30, "watched": True},
        "inventory": inventory(),
    }


def test_unrecovered_counts_only_what_an_applied_intervention_acted_on():
    outcomes = [
        {"finding": "a", "verdict": "not_recovered", "why": "w"},
        {"finding": "b", "verdict": "not_recovered", "why": "w"},
        {"finding": "c", "verdict": "recovered", "why": "w"},
    ]
    interventions = [
        {
            "id": "x:001",
            "step": "delete_orphan_configmaps",
            "outcome": "deleted",
            "findings": ["a", "c"],
            "target": {"kind": "ConfigMap", "name": "n"},
        },
        {
            "id": "x:002",
            "step": "delete_orphan_configmaps",
            "outcome": "conflict",
            "findings": ["b"],
            "target": {"kind": "ConfigMap", "name": "m"},
        },
    ]
    assert unrecovered_acted_on(entry(outcomes, interventions)) == ["a"]


def test_report_separates_prevention_and_remediation():
    outcomes = [
        {"finding": "a", "verdict": "recovered", "why": "gone", "at": "2026-11-30T12:00:00Z"}
    ]
    interventions = [
        {
            "id": "x:001",
            "step": "delete_orphan_configmaps",
            "outcome": "deleted",
            "findings": ["a"],
            "reason": "DELETE accepted",
            "target": {"kind": "ConfigMap", "namespace": "team-a", "name": "n"},
            "recorded_seq": 1,
            "recorded_at": "t1",
            "applied_seq": 2,
            "applied_at": "t2",
            "snapshot": "interventions/x/001.json",
        }
    ]
    report = build({"x": entry(outcomes, interventions)}, "2026-11-30T12:00:00Z", run_id="r1")
    md = render_markdown(report)
    assert "- **Prevention of recurrence**: NOT prevented: binder %s" % PRE in md
    assert (
        "- **Remediation of existing damage**: 1 finding(s) (nil_map_panic 1); "
        "1 intervention(s) applied (delete_orphan_configmaps); recovered 1" in md
    )
    assert (
        "| x:001 | delete_orphan_configmaps | ConfigMap team-a/n | #1 t1 | #2 t2 "
        "| deleted: DELETE accepted |" in md
    )
    assert report["summary"]["interventions_applied"] == 1
    assert report["summary"]["unrecovered_after_intervention"] == []


def test_report_names_a_refused_cluster_as_failed():
    report = build({"x": {"status": "refused", "error": "Refusing x"}, "y": {"status": "ok"}}, "t")
    assert report["summary"]["failed"] == ["x"]
    assert "**REFUSED**: Refusing x" in render_markdown(report)


def test_render_markdown_fails_on_an_intervention_without_an_outcome():
    # the template reads the outcome from the intervention: one without it fails the rendering
    # (StrictUndefined) instead of printing "| x:001 | ... | : - |" as if nothing was recorded
    intervention = {
        "id": "x:001",
        "step": "delete_orphan_configmaps",
        "findings": [],
        "target": {"kind": "ConfigMap", "namespace": "team-a", "name": "n"},
    }
    report = build({"x": entry([], [intervention])}, "t")
    with pytest.raises(jinja2.UndefinedError, match="outcome"):
        render_markdown(report)
