# Copyright: kaiops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Plan of a reproduce run: the options checked and turned into builds and cases. No I/O.

Runs before anything touches a cluster: every bad option is named with its fix, all at
once. A build's exposure (whether it should fail the nil-data cases) comes from the
release facts, never from the build's implementation.
"""

import difflib
import re

from ansible_collections.kaiops.runbooks.plugins.module_utils.errors import (
    STATUS_INVALID,
    KaiopsError,
)
from ansible_collections.kaiops.runbooks.plugins.module_utils.kai.facts import chart
from ansible_collections.kaiops.runbooks.plugins.module_utils.probes.cases import (
    CASES,
    DEFAULT_CASES,
)

VAR = "kai_reproduce_"
WINDOW = (10, 600)
CONCURRENCY = (1, 100)
# A build named by its tag: matched whole, ASCII digits only (no newline after it).
TAG = re.compile(r"v[0-9]+\.[0-9]+\.[0-9]+\Z", re.ASCII)


def _nearest(name, known):
    close = difflib.get_close_matches(name, known, n=1)
    return " (did you mean %s?)" % close[0] if close else ""


def _case_problems(cases):
    return [
        "%scases: unknown case '%s'%s; use some of %s"
        % (VAR, case, _nearest(case, list(CASES)), ", ".join(CASES))
        for case in cases
        if case not in CASES
    ]


def _chart_problem(version, ref, params, path_exists):
    """Why a build cannot be installed from its chart, or None (also when nothing is installed)."""
    if not params.get("install"):
        return None
    if not params.get("chart_ref"):
        return (
            "%schart_ref is empty: set the chart each build installs from "
            "(kaiops_kai_chart_ref), or set %sinstall: false" % (VAR, VAR)
        )
    if (
        not ref.startswith(("oci://", "http://", "https://"))
        and "/" in ref
        and not path_exists(ref)
    ):
        return (
            "%sbuilds: %s is not installable - chart package %s does not exist "
            "(on the lab: make lab-up publishes the pair's charts)" % (VAR, version, ref)
        )
    return None


def _resolve_build(raw, params, facts, path_exists, problems):
    """One build named by tag or pre/patched, with its exposure from the release facts; None
    when it cannot be resolved. What is wrong is appended to ``problems``."""
    version = (params.get("pair") or {}).get(raw, raw)
    if not isinstance(version, str) or not TAG.match(version):
        problems.append(
            "%sbuilds: '%s' is not a release tag such as v0.16.14 (or pre/patched)" % (VAR, raw)
        )
        return None
    row = facts.get(version)
    if row is None:
        problems.append(
            "%sbuilds: %s has no row in meta/kai_releases.yml%s; add the release there first "
            "(its behaviour and source) or pick one of %s"
            % (VAR, version, _nearest(version, list(facts)), ", ".join(facts))
        )
        return None
    behaviour = (params.get("behaviours") or {}).get(row["configmap_write"]) or {}
    ref, chart_version = chart(params.get("chart_ref") or "", version)
    problem = _chart_problem(version, ref, params, path_exists)
    if problem:
        problems.append(problem)
    return {
        "version": version,
        "exposed": bool(behaviour.get("exposed")),
        "behaviour": row["configmap_write"],
        "behaviour_source": row.get("source"),
        "behaviour_ref": row.get("ref"),
        "chart_ref": ref,
        "chart_version": chart_version,
    }


def _builds(params, path_exists, problems):
    builds = params.get("builds") or []
    if not builds:
        problems.append(
            "%sbuilds is empty: name the builds to compare, e.g. [%s, %s]"
            % (
                VAR,
                (params.get("pair") or {}).get("pre", "v0.16.13"),
                (params.get("pair") or {}).get("patched", "v0.16.14"),
            )
        )
    facts = {r["version"]: r for r in params.get("releases") or []}
    resolved = [_resolve_build(raw, params, facts, path_exists, problems) for raw in builds]
    resolved = [b for b in resolved if b is not None]
    if len(set(b["version"] for b in resolved)) != len(resolved):
        problems.append(
            "%sbuilds names a build twice: each build runs once, in fresh namespaces" % VAR
        )
    return resolved


def _option_problems(params, cases, resolved):
    """The window, the concurrency, the override's reason, and recovery's pair of builds."""
    problems = []
    for name, (low, high) in (("window_s", WINDOW), ("concurrency", CONCURRENCY)):
        value = params.get(name)
        if not isinstance(value, int) or isinstance(value, bool) or not low <= value <= high:
            problems.append(
                "%s%s must be a whole number in %d..%d, got %r" % (VAR, name, low, high, value)
            )
    if params.get("allow_non_disposable") and not (params.get("override_reason") or "").strip():
        problems.append(
            "%sallow_non_disposable needs %soverride_reason: say why fixtures may be planted "
            "on a cluster not marked kaiops.dev/disposable=true (it is recorded)" % (VAR, VAR)
        )
    if "recovery" in cases and not any(b["exposed"] for b in resolved[:-1]):
        problems.append(
            "%scases has recovery, which needs an exposed build followed by another in %sbuilds "
            "(e.g. [pre, patched])" % (VAR, VAR)
        )
    return problems


def build_plan(params, path_exists):
    cases = params.get("cases") or list(DEFAULT_CASES)
    problems = _case_problems(cases)
    resolved = _builds(params, path_exists, problems)
    problems += _option_problems(params, cases, resolved)
    if problems:
        raise KaiopsError(
            "Invalid reproduce options: " + "; ".join(problems),
            status=STATUS_INVALID,
            details={"problems": problems},
        )
    ordered = [c for c in DEFAULT_CASES if c in cases and c != "recovery"]
    return {
        "builds": resolved,
        "cases": ordered,
        "recovery": "recovery" in cases,
        "window_s": params["window_s"],
        "concurrency": params["concurrency"],
        "override": {
            "allowed": bool(params.get("allow_non_disposable")),
            "reason": (params.get("override_reason") or "").strip() or None,
        },
    }
