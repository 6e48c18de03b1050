# Copyright: kaiops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The change window's waves over a fleet, as pure functions (no I/O, no clock).

- Each cluster's wave comes from the waves of the change request and the play's host order by the
  vocabulary's ``wave_numbers`` - the computation the ``serial`` filter hands Ansible - and is
  recorded in the cluster's record (``change.wave``).
- ``canary_problem``: a named canary group (``kaiops_rollout_canary``) is judged as a request
  gate: a group of the inventory with clusters, all of them in this run, and put first in the
  play (the name is play-level); its clusters are then wave 1 (``vocabulary.serial_list``).
- ``not_started_reason``: the first wave is the canary and allows no failure; every later wave
  allows ``failure_budget`` failed clusters (each rolled back alone, by the failed-gate policy).
  When an earlier wave failed more than it allows, the cluster is not started (decision
  ``not_started``), never reported as passed (Open Cluster Management's RolloutStrategy:
  mandatory decision groups first, MaxFailures default 0).
- ``progress_gate``: the progress deadline (Open Cluster Management's ``ProgressDeadline``): a
  cluster's change, from the start of its upgrade to its decision, took no longer than the
  request's ``progress_deadline_s``; times not recorded ("no data") fail it, never pass it. The
  clock reading of the decision is given, never read here.
- ``fleet``: the report's fleet view - the fleet's decision, one row per cluster in wave order,
  the budget used per wave and the clusters not started.
"""

import math

from ansible_collections.kaiops.runbooks.plugins.module_utils.rollout.gates import checked
from ansible_collections.kaiops.runbooks.plugins.module_utils.vocabulary import (
    GROUP_NAME,
    wave_numbers,
)

# A cluster whose change ended so has failed in its wave (counted against the wave's budget).
FAILED = ("rolled_back", "rollback_failed", "paused", "failed")
NOT_STARTED = "not_started"
# How every reason a cluster was not started begins (the start module records it as such).
NOT_STARTED_TEXT = "not started: "


def wave_entry(change, hosts, cluster):
    """The record's ``wave`` entry for ``cluster``: its wave among the play's ``hosts`` (in their
    order) by the change's waves, its place in that order, how many waves and the budget."""
    numbers = wave_numbers(change.get("waves"), hosts)
    return {
        "wave": numbers[cluster],
        "position": hosts.index(cluster),
        "waves": max(numbers.values()),
        "budget": change.get("failure_budget") or 0,
    }


CANARY_THRESHOLD = "an inventory group with clusters, all in this run, given with -e"


def canary_problem(name, canary_hosts, hosts):
    """(problem, fix) of the canary group ``name`` whose clusters are ``canary_hosts`` (inventory
    order; None for no such group), for a play of ``hosts`` (in its order); (None, None) when
    it holds."""
    if not isinstance(name, str) or not GROUP_NAME.match(name):
        return (
            "kaiops_rollout_canary %r cannot be an inventory group's name" % (name,),
            "name the canary's inventory group: letters, digits and _, not starting with a digit",
        )
    if not canary_hosts:
        return (
            "the inventory has no cluster in group %r (kaiops_rollout_canary)" % name,
            "name a group with at least one cluster (ansible-inventory --graph lists them)",
        )
    missing = [h for h in canary_hosts if h not in hosts]
    if missing:
        return (
            "the canary group %r has clusters this run leaves out: %s" % (name, ", ".join(missing)),
            "run with every cluster of the canary group (--limit), or name another group",
        )
    if list(hosts[: len(canary_hosts)]) != list(canary_hosts):
        return (
            "the play did not put the canary group %r first: kaiops_rollout_canary is play-level"
            % name,
            "give kaiops_rollout_canary with -e (an inventory's value does not order the play)",
        )
    return None, None


def allowed(wave, failure_budget):
    """Failed clusters that wave ``wave`` may have before the waves after it do not start."""
    return 0 if wave == 1 else int(failure_budget or 0)


def _failed_in(wave, waves_of, decisions):
    return sorted(h for h, w in waves_of.items() if w == wave and decisions.get(h) in FAILED)


def not_started_reason(wave, waves_of, decisions, failure_budget):
    """Why a cluster of ``wave`` does not start, or None: the first earlier wave whose failed
    clusters (by ``decisions``, name -> decision) are more than it allows."""
    for earlier in range(1, wave or 0):
        failed = _failed_in(earlier, waves_of, decisions)
        limit = allowed(earlier, failure_budget)
        if len(failed) <= limit:
            continue
        if earlier == 1:
            return NOT_STARTED_TEXT + "the canary (wave 1) failed on %s" % ", ".join(failed)
        return (
            NOT_STARTED_TEXT
            + "wave %d spent its failure budget (%d failed / %d allowed: %s)"
            % (
                earlier,
                len(failed),
                limit,
                ", ".join(failed),
            )
        )
    return None


def _seconds(value):
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return None if math.isnan(number) else number  # NaN is no reading


def progress_gate(change, decided_at):
    """The gate ``progress_deadline`` of a cluster's ``change`` decided at ``decided_at`` (the
    controller's wall clock, seconds), or None when the request set no deadline. Its stage is
    the last verification that ran (``soak`` after a soak, else ``verify``); its figure the
    seconds from the start of the upgrade (``change.upgrade.started_at``) to the decision."""
    deadline = int(_seconds(change.get("progress_deadline_s")) or 0)
    if deadline <= 0:
        return None
    stage = "soak" if (change.get("figures") or {}).get("soak") else "verify"
    started = _seconds((change.get("upgrade") or {}).get("started_at"))
    now = _seconds(decided_at)
    threshold = "<= %d s from the start of the upgrade to the decision (progress_deadline_s)"
    if started is None or now is None or now < started:
        out = checked(
            stage,
            "progress_deadline",
            "no data",
            threshold % deadline,
            "the times of the upgrade's start and of the decision were not both recorded: no "
            "data is not a pass",
            "read the change's steps (did the upgrade start?) and run the change again",
        )
    else:
        took = round(now - started, 1)
        late = took > deadline
        out = checked(
            stage,
            "progress_deadline",
            took,
            threshold % deadline,
            "the change took %s s, over the progress deadline of %d s" % (took, deadline)
            if late
            else None,
            "find the slow step in the change's steps (upgrade, rollout wait, verification, "
            "soak) or raise kaiops_rollout_progress_deadline_s with the change owner",
        )
    out["unit"] = "s"
    return out


def _versions(cluster):
    """(version before, version after) of a cluster's change; after is None when nothing ran."""
    change = cluster.get("change") or {}
    before = (change.get("before") or {}).get("version") or cluster.get("current_version")
    rollback = change.get("rollback") or {}
    if rollback.get("version") or rollback.get("revision"):
        return before, rollback.get("version") or "unreadable"
    return before, (change.get("after") or {}).get("version")


def _evidence(name, cluster):
    """The file a reader opens first for a cluster: its failing gate's evidence, else the snapshot
    of its state before the change, else its first file, else its section of report.md."""
    failing = [
        g["evidence"]
        for g in cluster.get("gates") or []
        if not g.get("passed") and g.get("evidence")
    ]
    files = cluster.get("evidence") or []
    snapshot = "snapshots/before-change-%s/index.json" % name
    own = [f for f in files if name in f]
    if failing:
        return failing[0]
    if snapshot in files:
        return snapshot
    return (own or files or ["report.md#cluster-%s" % name])[0]


def _row(name, cluster):
    change = cluster.get("change") or {}
    before, after = _versions(cluster)
    failing = [g["gate"] for g in cluster.get("gates") or [] if not g.get("passed")]
    return {
        "wave": change.get("wave"),
        "cluster": name,
        "before": before,
        "after": after,
        "decision": cluster["decision"],
        "failed_gates": failing,
        "duration_s": change.get("duration_s"),
        "evidence": _evidence(name, cluster),
        "reason": change.get("not_started"),
    }


def _budget(rows, failure_budget):
    out = []
    for wave in sorted({r["wave"] for r in rows}):
        in_wave = [r for r in rows if r["wave"] == wave]
        failed = [r["cluster"] for r in in_wave if r["decision"] in FAILED]
        limit = allowed(wave, failure_budget)
        out.append(
            {
                "wave": wave,
                "canary": wave == 1,
                "clusters": [r["cluster"] for r in in_wave],
                "failed": failed,
                "allowed": limit,
                "spent": len(failed) > limit,
                "not_started": sum(1 for r in in_wave if r["decision"] == NOT_STARTED),
            }
        )
    return out


def fleet(clusters):
    """The fleet view of a report's clusters (name -> the report's cluster), or None when no
    cluster recorded a wave (rollback.yml, a request refused before the change play)."""
    waved = {n: c for n, c in clusters.items() if (c.get("change") or {}).get("wave")}
    if not waved:
        return None

    def order(name):  # wave, then the play's host order
        return waved[name]["change"]["wave"], waved[name]["change"].get("position", 0), name

    rows = [_row(n, waved[n]) for n in sorted(waved, key=order)]
    rows += [_row(n, c) for n, c in sorted(clusters.items()) if n not in waved]
    budget = max(c["change"].get("failure_budget") or 0 for c in waved.values())
    not_approved = [r for r in rows if r["decision"] != "approved"]
    return {
        "decision": "approved" if not not_approved else "not_approved",
        "not_approved": [
            {"cluster": r["cluster"], "decision": r["decision"]} for r in not_approved
        ],
        "failure_budget": budget,
        "rows": rows,
        "waves": _budget([r for r in rows if r["wave"]], budget),
        "not_started": [
            {"cluster": r["cluster"], "wave": r["wave"], "reason": r["reason"]}
            for r in rows
            if r["decision"] == NOT_STARTED
        ],
    }
