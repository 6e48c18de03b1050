# Copyright: kaiops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The change window's rules: the failed-gate policy, the chart to install, what an earlier run
of the same change left (an approved run, an interrupted one), the decision. Pure.

- ``read_policy``: the failed-gate policy of the change request, ``kaiops_rollout_on_failed_gate``:
  ``rollback`` (the default), ``pause`` (stop and report, nothing undone) or
  ``{policy: continue, decision: <why>, approved_by: <who>}``.
- the waves: Ansible's ``serial`` from ``kaiops_rollout_waves``, read by the vocabulary's
  ``read_waves`` (the request check of every playbook reads them by the same rule).
- ``chart``: the chart reference and version to install for a release, from
  ``kaiops_kai_chart_ref`` (``{version}`` in it replaced: a mirror or local packages; otherwise
  the release is the chart version of the reference, e.g. the official OCI chart).
- ``earlier_runs``: from the rollout reports and bundles already in the evidence store, the run
  that approved this change on this cluster (a repeated run then changes nothing) and the runs
  that were interrupted (kept, listed, and resumed from: their snapshot is the state to roll
  back to).
- ``rehearsal_of``, ``find_rehearsal``, ``rehearsal_gate``: the rollback rehearsal an approval
  needs - a rollback of this change's version pair (the target back to the version that ran
  before), done and verified, on record in the evidence store for the cluster or its declared
  group (``kaiops_rollout_rehearsal_group``), or a waiver ``{reason, approved_by}``.
- ``decide``: the cluster's decision from its record.

The change window's inventory names (waves, failed-gate policy, probes...) are in the one
vocabulary (``module_utils/vocabulary.py``) with every other name.
"""

import copy

from ansible_collections.kaiops.runbooks.plugins.module_utils.kai import facts
from ansible_collections.kaiops.runbooks.plugins.module_utils.kai.identify import release_version
from ansible_collections.kaiops.runbooks.plugins.module_utils.rollout.gates import gate
from ansible_collections.kaiops.runbooks.plugins.module_utils.rollout.request import read_waiver
from ansible_collections.kaiops.runbooks.plugins.module_utils.vocabulary import type_name, whole

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


def chart(chart_ref, version):
    """(chart_ref, chart_version) to install ``version`` (kai/facts.chart), the official chart
    when no reference is given."""
    return facts.chart(chart_ref or OFFICIAL_CHART, version)


# ---------------------------------------------------------------- earlier runs of the change


def _origin_after(run, entry, change, version, origin):
    """The origin once a complete run is read: its state before an upgrade to another version,
    none when it rolled back, else the origin as it was."""
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
    return origin


def _approval_after(run, report, entry, change, version, approved):
    """The approved run once a complete run is read: it, when it verified and approved
    ``version`` on the cluster; none when it did something else on the cluster."""
    if (
        run.get("verified")
        and report.get("kind") == "rollout"
        and report.get("kai_version") == version
        and entry.get("decision") == "approved"
    ):
        after = change.get("after") or {}
        return {
            "bundle": run["bundle"],
            "revision": after.get("revision"),
            "version": after.get("version"),
            "gates": [g for g in entry.get("gates") or [] if g.get("stage") == "verify"],
        }
    if entry:
        return None  # a later run on this cluster changed or refused something
    return approved


def _interrupted_run(run):
    return {
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
            origin = _origin_after(run, entry, change, version, origin)
            approved = _approval_after(run, report, entry, change, version, approved)
            continue
        if run.get("snapshot") is None:
            continue  # it did not get as far as this cluster's snapshot
        item = _interrupted_run(run)
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
    return whole(value)


# v0.16.13 from a chart app version such as v0.16.13+standin: the one reading (kai/identify).
app_version = release_version


# ---------------------------------------------------------------- the rollback rehearsal

# The step and the gate (stage ``approval``) that an approval needs: a rehearsed rollback.
APPROVAL_STEP = "approval"
APPROVAL_STAGE = "approval"
REHEARSAL_GATE = "rollback_rehearsal"
NOT_REHEARSED = "not approved: rollback not rehearsed"
REHEARSAL_FIX = (
    "rehearse the rollback: ansible-playbook playbooks/rollback.yml -e "
    "kaiops_rollout_rollback_bundle=<this run's bundle> (%s back to %s, verified), then run the "
    "rollout again; or set kaiops_rollout_rehearsal_waiver: {reason: <why>, approved_by: <who>}"
)


def rehearsal_pair(record):
    """The version pair a rehearsal must have rolled back for this change: from the change's
    target (``request.kai_version``) to the version that ran before it (``change.before``)."""
    change = record.get("change") or {}
    return {
        "from": app_version((record.get("request") or {}).get("kai_version")),
        "to": app_version((change.get("before") or {}).get("version")),
        # a rehearsal on another implementation (the lab's stand-in for KAI) does not count
        "implementation": record.get("implementation_label"),
    }


def rehearsal_of(report, name):
    """What the cluster ``name``'s entry of a rollout report.json rehearsed, or None when it has
    no rollback: ``{cluster, operation, from, to, decision, status, verified, time_to_restore_s,
    time_to_verified_s, passed, problem}``.

    ``from`` is the version the rollback started on: for ``playbooks/rollback.yml`` what the
    cluster ran when it began (its ``current_version``), for a rollout that rolled back after a
    failed gate what its upgrade left running (``change.after``). ``to`` is what runs after the
    rollback (its ``version``, read from the components), which must be the version recorded
    before that change. Passed: decision ``rolled_back``, the rollback ``done`` and its
    verification passed.
    """
    entry = ((report or {}).get("clusters") or {}).get(name) or {}
    change = entry.get("change") or {}
    rollback = change.get("rollback") or {}
    if (report or {}).get("kind") != "rollout" or not rollback:
        return None
    by_rollback_yml = change.get("operation") == "rollback"
    start = (change.get("after") or {}).get("version")
    if by_rollback_yml:
        start = entry.get("current_version") or start
    out = {
        "cluster": name,
        "operation": "rollback.yml"
        if by_rollback_yml
        else "rollout rolled back after a failed gate",
        "from": app_version(start),
        "to": app_version(rollback.get("version")),
        "decision": entry.get("decision"),
        "status": rollback.get("status"),
        "verified": rollback.get("verified"),
        "time_to_restore_s": rollback.get("time_to_restore_s"),
        "time_to_verified_s": rollback.get("time_to_verified_s"),
        "generated_at": report.get("generated_at"),
        "implementation": entry.get("implementation_label"),
    }
    recorded = app_version((change.get("before") or {}).get("version"))
    problems = _rehearsal_problems(entry.get("decision"), rollback, out["to"], recorded)
    out["passed"] = not problems
    out["problem"] = "; ".join(problems) or None
    return out


def _rehearsal_problems(decision, rollback, runs_after, recorded):
    """Why a rollback on record does not count as a rehearsal (none: it does)."""
    problems = []
    if decision != "rolled_back":
        problems.append("decision %s" % decision)
    if rollback.get("status") != "done":
        problems.append("rollback %s" % (rollback.get("status") or "not done"))
    if rollback.get("verified") is not True:
        problems.append("its verification did not pass")
    if recorded and runs_after != recorded:
        problems.append("it runs %s after it, not the recorded %s" % (runs_after, recorded))
    return problems


def _members(report, cluster, group, peers):
    """The clusters of a report that count for ``cluster``: itself first, then the clusters of
    its declared group (named in the inventory, or recorded with that group)."""
    names = sorted(report.get("clusters") or {})
    own = [n for n in names if n == cluster]
    others = []
    if group:
        for name in names:
            if name == cluster:
                continue
            entry = report["clusters"][name] or {}
            recorded = ((entry.get("change") or {}).get("rehearsal_pair") or {}).get("group")
            if name in (peers or ()) or recorded == group:
                others.append(name)
    return own, others


def find_rehearsal(runs, cluster, pair, group=None, peers=()):
    """The newest passed rehearsal of ``pair`` for the cluster, and the runs of that pair that
    did not count.

    ``runs``: the rollout bundles of the evidence store, oldest first (``rollout/client.py``
    ``find_rollout_runs``): a ``playbooks/rollback.yml`` run, or a rollout that rolled back after
    a failed gate. One on the cluster itself is cited before one on another cluster of its
    declared ``group`` (``peers``: the inventory's clusters of that group). A bundle counts only
    when it is complete and its manifest verifies. Returns ``(cited or None, rejected)``; the
    cited one carries its ``bundle`` and, when it ran on another cluster, the ``group``.
    """
    own, grouped, rejected = [], [], []
    if not pair.get("from") or not pair.get("to"):
        return None, rejected
    for run in runs:
        report = run.get("report") or {}
        if report.get("kind") != "rollout":
            continue
        mine, others = _members(report, cluster, group, peers)
        for name in mine + others:
            found = rehearsal_of(report, name)
            if not found or (found["from"], found["to"]) != (pair["from"], pair["to"]):
                continue
            found["bundle"] = run["bundle"]
            ran_on, runs_on = found.get("implementation"), pair.get("implementation")
            if found["passed"] and ran_on and runs_on and ran_on != runs_on:
                found["passed"] = False
                found["problem"] = "rehearsed on %s, this change runs on %s" % (ran_on, runs_on)
            if name != cluster:
                found["group"] = group
            if found["passed"] and not run.get("verified"):
                found["passed"] = False
                found["problem"] = "bundle status %s or its manifest does not verify" % (
                    run.get("status"),
                )
            if found["passed"]:
                (own if name == cluster else grouped).append(found)
            else:
                rejected.append({k: found[k] for k in ("bundle", "cluster", "problem")})
    cited = (own or grouped or [None])[-1]
    return cited, rejected[-5:]


def waiver_given(record):
    """The rehearsal waiver of the request, when the request gate's reading takes it."""
    waiver, problem = read_waiver((record.get("request") or {}).get("rehearsal_waiver"))
    return None if problem else waiver


def rehearsed(record):
    """True when the record cites a passed rehearsal of its own version pair."""
    found = (record.get("change") or {}).get("rehearsal") or {}
    pair = rehearsal_pair(record)
    return bool(
        found.get("passed")
        and pair["from"]
        and (found.get("from"), found.get("to")) == (pair["from"], pair["to"])
    )


def pair_text(cluster, pair):
    return "%s %s -> %s" % (cluster, pair.get("from") or "-", pair.get("to") or "-")


def rehearsal_gate(record):
    """The approval's gate: a passed rehearsal of the version pair on record, or a waiver."""
    cluster = record.get("cluster")
    change = record.get("change") or {}
    pair = rehearsal_pair(record)
    found = change.get("rehearsal") or {}
    waiver = waiver_given(record)
    threshold = (
        "a rollback %s -> %s on record, done and verified (the cluster, or its rehearsal group), "
        "or a waiver {reason, approved_by}" % (pair["from"] or "-", pair["to"] or "-")
    )
    if rehearsed(record):
        figure = "%s: %s%s, time to restore %s s, verified" % (
            found.get("bundle"),
            pair_text(found.get("cluster"), found),
            " (group %s)" % found["group"] if found.get("group") else "",
            found.get("time_to_restore_s"),
        )
        return _gate(REHEARSAL_GATE, figure, threshold, True)
    if waiver:
        figure = "waived: %s (approved by %s)" % (waiver["reason"], waiver["approved_by"])
        return _gate(REHEARSAL_GATE, figure, threshold, True)
    none = "none on record for %s" % pair_text(cluster, pair)
    return _gate(
        REHEARSAL_GATE,
        none,
        threshold,
        False,
        "%s (%s)" % (NOT_REHEARSED, none),
        REHEARSAL_FIX % (pair["from"] or "the target", pair["to"] or "the version before"),
    )


def _gate(name, figure, threshold, passed, message="", fix=""):
    return gate(APPROVAL_STAGE, name, figure, threshold, passed, message, fix)


def copy_record(record):
    """A copy of a cluster's record to add to, with its gates, steps and evidence lists: the
    caller's record is never changed."""
    out = copy.deepcopy(record or {})
    for key in ("gates", "steps", "evidence"):
        out.setdefault(key, [])
    return out


def add_rehearsal(record, cited, rejected=(), group=None, peers=()):
    """The rehearsal found for the record's version pair (``find_rehearsal``); when the change
    got as far as an approval (the target runs, every verification gate passed, not a repeated
    run), the approval's gate and step and the waiver it used. The record is copied."""
    out = copy_record(record)
    change = out.setdefault("change", {})
    change["rehearsal_pair"] = dict(
        rehearsal_pair(out), cluster=out.get("cluster"), group=group or None, peers=list(peers)
    )
    change["rehearsal"] = cited
    change["rehearsals_rejected"] = list(rejected)
    due = (
        change.get("operation") != "rollback"
        and not change.get("prior")
        and decide(out) in ("approved", "not_approved")
    )
    if due:
        if not rehearsed(out) and waiver_given(out):
            change["rehearsal_waiver"] = waiver_given(out)
        out["gates"].append(rehearsal_gate(out))
        out["steps"].append(approval_step(out))
        if rehearsed(out):
            out["evidence"].append("../%s/report.md" % cited["bundle"])
    if "decision" in out:
        out["decision"] = decide(out)
    return out


def approval_step(record):
    """The approval step: what the approval rests on, or why the change is not approved."""
    gate_record = rehearsal_gate(record)
    if gate_record["passed"]:
        reason = "approved on the rollback rehearsal %s" % gate_record["figure"]
        if gate_record["figure"].startswith("waived"):
            reason = "approved without a rehearsal on record: %s" % gate_record["figure"]
    else:
        reason = gate_record["message"]
    return {"step": APPROVAL_STEP, "status": "done", "reason": reason}


# ---------------------------------------------------------------- decision

PREFLIGHT_STAGES = ("request", "cluster", "snapshot", "governance")
# The stages whose failed gate the failed-gate policy answers: the upgrade, the verification and
# the soak's verification (with the progress deadline, judged under the last of the two).
CHANGE_GATE_STAGES = ("upgrade", "verify", "soak")
DECISIONS = (
    "refused",
    "proceed",
    "approved",
    "not_approved",
    "rolled_back",
    "rollback_failed",
    "paused",
    "continued",
    "failed",
    "not_started",
)


def failed_in(gates, stages):
    return [g for g in gates if not g.get("passed") and g.get("stage") in stages]


def decide(record):
    """The cluster's decision from its record.

    - ``refused``: a gate of the request or the preflight failed (nothing changed);
    - ``proceed``: preflight passed and no change step ran (``--check``, or the run stopped);
    - ``approved``: the target runs, every verification gate passed and a rollback rehearsal of
      the version pair is on record (``change.rehearsal``) or waived (``request.rehearsal_waiver``);
      or the earlier approved run this one stands on;
    - ``not_approved``: the target runs and every verification gate passed, but no rollback of
      the version pair was rehearsed and nothing waives it;
    - on a failed verification gate or a failed upgrade, by the policy: ``rolled_back`` (the
      rollback's verification passed), ``rollback_failed``, ``paused``, ``continued``;
    - ``failed``: a change step failed and nothing decided it;
    - ``not_started``: an earlier wave failed more than it allows (``rollout/waves.py``).
    """
    gates = record.get("gates") or []
    change = record.get("change") or {}
    if failed_in(gates, PREFLIGHT_STAGES):
        return "refused"
    if change.get("prior"):
        return "approved"
    if change.get("not_started"):
        return "not_started"
    if not change.get("upgrade") and not change.get("rollback"):
        return "failed" if change.get("error") else "proceed"
    verify_failed = failed_in(gates, CHANGE_GATE_STAGES)
    verified = any(g.get("stage") == "verify" for g in gates)
    if not verify_failed and verified and not change.get("error"):
        return "approved" if rehearsed(record) or waiver_given(record) else "not_approved"
    return _by_policy(change, gates, verify_failed)


def _by_policy(change, gates, verify_failed):
    """The decision of a change whose verification or upgrade failed: what the failed-gate
    policy did about it."""
    rollback = change.get("rollback") or {}
    policy = (change.get("policy") or {}).get("policy") or "rollback"
    if rollback:
        if rollback.get("status") == "done" and not failed_in(gates, ("rollback",)):
            return "rolled_back"
        return "rollback_failed"
    if policy == "pause":
        return "paused"
    upgraded = (change.get("upgrade") or {}).get("status") == "done"
    if policy == "continue" and verify_failed and upgraded:
        return "continued"
    return "failed"


def next_action(record):
    """What the role does after verification: ``none``, ``rollback``, ``pause``, ``continue``."""
    gates = record.get("gates") or []
    change = record.get("change") or {}
    failed = failed_in(gates, CHANGE_GATE_STAGES)
    if not failed and not change.get("error"):
        return "none"
    policy = (change.get("policy") or {}).get("policy") or "rollback"
    upgraded = (change.get("upgrade") or {}).get("status") == "done"
    if policy == "continue" and not upgraded:
        return "rollback"  # there is nothing to continue with: the target never ran
    return policy
