# -*- coding: utf-8 -*-
# Copyright: kaiops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The change window's rules: the failed-gate policy, the waves, the chart to install, what an
earlier run of the same change left (an approved run, an interrupted one), the decision. Pure.

- ``read_policy``: the failed-gate policy of the change request, ``kaiops_rollout_on_failed_gate``:
  ``rollback`` (the default), ``pause`` (stop and report, nothing undone) or
  ``{policy: continue, decision: <why>, approved_by: <who>}``.
- ``read_waves``: Ansible's ``serial`` from ``kaiops_rollout_waves`` (one cluster at a time by
  default; e.g. ``[1, "25%", "100%"]``: a canary, a quarter, the rest).
- ``chart``: the chart reference and version to install for a release, from
  ``kaiops_kai_chart_ref`` (``{version}`` in it replaced: a mirror or local packages; otherwise
  the release is the chart version of the reference, e.g. the official OCI chart).
- ``earlier_runs``: from the rollout reports and bundles already in the evidence store, the run
  that approved this change on this cluster (a repeated run then changes nothing) and the runs
  that were interrupted (kept, listed, and resumed from: their snapshot is the state to roll
  back to).
- ``decide``: the cluster's decision from its record.

The change window's inventory names (waves, failed-gate policy, probes...) are in the one
vocabulary (``module_utils/vocabulary.py``) with every other name.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.kaiops.runbooks.plugins.module_utils.vocabulary import type_name

OFFICIAL_CHART = "oci://ghcr.io/kai-scheduler/kai-scheduler/kai-scheduler"

POLICIES = ("rollback", "pause", "continue")
POLICY_THRESHOLD = "rollback (default), pause, or {policy: continue, decision, approved_by}"
POLICY_FIX = (
    "set kaiops_rollout_on_failed_gate to rollback, pause, or {policy: continue, decision: <why>, "
    "approved_by: <who>}"
)
DEFAULT_POLICY = {"policy": "rollback", "source": "default"}


def read_policy(value):
    """(policy {policy, decision?, approved_by?, source}, problem or None)."""
    if value in (None, "", {}):
        return dict(DEFAULT_POLICY), None
    if isinstance(value, str):
        name = value.strip()
        if name == "continue":
            return None, (
                "failed-gate policy continue needs a recorded decision and approver: "
                "{policy: continue, decision: <why>, approved_by: <who>}"
            )
        if name in POLICIES:
            return {"policy": name, "source": "change request"}, None
        return None, "failed-gate policy %r is not one of %s" % (value, ", ".join(POLICIES))
    if not isinstance(value, dict):
        return None, "failed-gate policy must be a name or a mapping, got %s" % type_name(value)
    unknown = sorted(set(value) - {"policy", "decision", "approved_by"})
    if unknown:
        return None, "failed-gate policy has unknown keys %s (policy, decision, approved_by)" % (
            ", ".join(unknown)
        )
    name = value.get("policy")
    if name not in POLICIES:
        return None, "failed-gate policy %r is not one of %s" % (name, ", ".join(POLICIES))
    out = {"policy": name, "source": "change request"}
    if name == "continue":
        missing = [f for f in ("decision", "approved_by") if not str(value.get(f) or "").strip()]
        if missing:
            return None, "failed-gate policy continue has no %s (both decision and approved_by)" % (
                " and no ".join(missing)
            )
    for field in ("decision", "approved_by"):
        if str(value.get(field) or "").strip():
            out[field] = str(value[field]).strip()
    return out, None


def policy_text(policy):
    if not policy:
        return "-"
    text = policy["policy"]
    if policy.get("decision"):
        text += ": %s" % policy["decision"]
    if policy.get("approved_by"):
        text += " (approved by %s)" % policy["approved_by"]
    if policy.get("source") == "default":
        text += " (default)"
    return text


PERCENT = re.compile(r"^\s*(100|[1-9][0-9]?)\s*%\s*$")


def read_waves(value):
    """(serial list, problem or None): one cluster at a time by default."""
    if value in (None, "", []):
        return [1], None
    items = value if isinstance(value, list) else [value]
    out = []
    for item in items:
        if isinstance(item, bool):
            return None, "wave %r is neither a number of clusters nor a percentage" % (item,)
        if isinstance(item, int) and item >= 1:
            out.append(item)
        elif isinstance(item, str) and item.strip().isdigit() and int(item) >= 1:
            out.append(int(item))
        elif isinstance(item, str) and PERCENT.match(item):
            out.append(item.replace(" ", ""))
        else:
            return None, "wave %r is neither a number of clusters (1 or more) nor a percentage" % (
                item,
            )
    return out, None


def chart(chart_ref, version):
    """(chart_ref, chart_version) to install ``version``: ``{version}`` in the reference is
    replaced (a mirror path or a local package); otherwise the version is the chart version."""
    ref = chart_ref or OFFICIAL_CHART
    if "{version}" in ref:
        return ref.replace("{version}", version), None
    return ref, version


# ---------------------------------------------------------------- earlier runs of the change


def earlier_runs(cluster, version, runs, current):
    """The approved run a repeated run stands on, the interrupted runs since, and the origin.

    ``runs``: the rollout bundles of the evidence store, oldest first, each ``{bundle, status,
    verified, report (report.json or None), snapshot (release.json of the cluster's helm
    snapshot or None), snapshot_folder, baseline (figures or None), last_task}``
    (``rollout/client.py``). ``current``: ``{version, revision}`` of the cluster now. Returns:

    - ``approved``: the newest complete, verified run whose report approved ``version`` on the
      cluster at the revision that runs now (None when there is none, or the cluster changed
      since);
    - ``interrupted``: the runs after the last complete one that did not end (status
      ``interrupted`` or ``running``), with what they recorded;
    - ``origin``: when the cluster runs ``version`` already, the newest run that recorded the
      state before the change to it (revision, version, snapshot): what a rollback returns to.
    """
    approved, interrupted, origin = None, [], None
    for run in runs:
        report = run.get("report") or {}
        entry = (report.get("clusters") or {}).get(cluster) or {}
        change = entry.get("change") or {}
        if run.get("status") == "complete":
            interrupted = []  # a complete run after them supersedes them
            before = change.get("before") or {}
            if change.get("upgrade") and before.get("version") not in (None, version):
                origin = {
                    "bundle": run["bundle"],
                    "status": "complete",
                    "before": {k: before.get(k) for k in ("revision", "chart", "version")},
                    "snapshot": before.get("snapshot"),
                    "baseline": (change.get("figures") or {}).get("baseline"),
                }
            if entry.get("decision") in ("rolled_back",):
                origin = None  # it went back: nothing of that change runs now
            if (
                run.get("verified")
                and report.get("kind") == "rollout"
                and report.get("kai_version") == version
                and entry.get("decision") == "approved"
            ):
                after = change.get("after") or {}
                approved = {
                    "bundle": run["bundle"],
                    "revision": after.get("revision"),
                    "version": after.get("version"),
                    "gates": [g for g in entry.get("gates") or [] if g.get("stage") == "verify"],
                }
            elif entry:
                approved = None  # a later run on this cluster changed or refused something
            continue
        if run.get("snapshot") is None:
            continue  # it did not get as far as this cluster's snapshot
        item = {
            "bundle": run["bundle"],
            "status": run.get("status"),
            "before": {
                "revision": run["snapshot"].get("revision"),
                "chart": run["snapshot"].get("chart"),
                "version": app_version(run["snapshot"].get("app_version")),
            },
            "snapshot": run.get("snapshot_folder"),
            "baseline": run.get("baseline"),
            "last_task": run.get("last_task"),
        }
        interrupted.append(item)
        if item["before"]["version"] != version:
            origin = item
    if approved and (
        str(approved["revision"]) != str(current.get("revision"))
        or current.get("version") != version
    ):
        approved = None
    if current.get("version") != version:
        origin = None
    if origin and origin.get("snapshot") and not origin["snapshot"].startswith(origin["bundle"]):
        origin = dict(origin, snapshot="%s/%s" % (origin["bundle"], origin["snapshot"]))
    return {"approved": approved, "interrupted": interrupted, "origin": origin}


def revision(value):
    """A Helm revision as a number (helm_info gives text), or None."""
    try:
        return int(str(value).strip())
    except (TypeError, ValueError):
        return None


def app_version(text):
    """v0.16.13 from a chart app version such as v0.16.13+standin."""
    if not text:
        return None
    text = str(text).split("+", 1)[0]
    return text if text.startswith("v") else "v" + text


# ---------------------------------------------------------------- decision

PREFLIGHT_STAGES = ("request", "cluster", "snapshot", "governance")
DECISIONS = (
    "refused",
    "proceed",
    "approved",
    "rolled_back",
    "rollback_failed",
    "paused",
    "continued",
    "failed",
)


def failed_in(gates, stages):
    return [g for g in gates if not g.get("passed") and g.get("stage") in stages]


def decide(record):
    """The cluster's decision from its record.

    - ``refused``: a gate of the request or the preflight failed (nothing changed);
    - ``proceed``: preflight passed and no change step ran (``--check``, or the run stopped);
    - ``approved``: the target runs and every verification gate passed (in this run, or in the
      earlier run this one stands on);
    - on a failed verification gate or a failed upgrade, by the policy: ``rolled_back`` (the
      rollback's verification passed), ``rollback_failed``, ``paused``, ``continued``;
    - ``failed``: a change step failed and nothing decided it.
    """
    gates = record.get("gates") or []
    change = record.get("change") or {}
    if failed_in(gates, PREFLIGHT_STAGES):
        return "refused"
    if change.get("prior"):
        return "approved"
    if not change.get("upgrade") and not change.get("rollback"):
        return "failed" if change.get("error") else "proceed"
    verify_failed = failed_in(gates, ("upgrade", "verify"))
    verified = any(g.get("stage") == "verify" for g in gates)
    if not verify_failed and verified and not change.get("error"):
        return "approved"
    rollback = change.get("rollback") or {}
    policy = (change.get("policy") or {}).get("policy") or "rollback"
    if rollback:
        if rollback.get("status") == "done" and not failed_in(gates, ("rollback",)):
            return "rolled_back"
        return "rollback_failed"
    if policy == "pause":
        return "paused"
    if policy == "continue" and verify_failed and change.get("upgrade", {}).get("status") == "done":
        return "continued"
    return "failed"


def next_action(record):
    """What the role does after verification: ``none``, ``rollback``, ``pause``, ``continue``."""
    gates = record.get("gates") or []
    change = record.get("change") or {}
    failed = failed_in(gates, ("upgrade", "verify"))
    if not failed and not change.get("error"):
        return "none"
    policy = (change.get("policy") or {}).get("policy") or "rollback"
    upgraded = (change.get("upgrade") or {}).get("status") == "done"
    if policy == "continue" and not upgraded:
        return "rollback"  # there is nothing to continue with: the target never ran
    return policy
