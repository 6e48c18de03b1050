# Copyright: kaiops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The change window's acceptance gates, declared as data: a verification's figures against the
change request's thresholds. Pure.

Each declaration: ``name``, ``figure(figures)`` (what the report shows, a number where there is
one), ``unit`` of that number when it has one, ``threshold(thresholds)`` and
``rule(figures, thresholds) -> problem or None``. The figures are those of ``rollout/probes.py``
(from watch timestamps: a bind is a pod with a node, never an event). ``verify_gates`` judges
every declaration for one verification phase (``verify`` after the upgrade, ``rollback`` after a
rollback); each gate links the evidence. ``upgrade_gates`` judges the upgrade itself (the target
runs, every KAI Deployment rolled out).
"""

from ansible_collections.kaiops.runbooks.plugins.module_utils.rollout import probes as P
from ansible_collections.kaiops.runbooks.plugins.module_utils.rollout.gates import checked, gate


def _lat(figures, which, pct):
    return (figures.get(which) or {}).get(pct)


def _latency_problem(which, pct, limit_name, what):
    def rule(figures, thresholds):
        value = _lat(figures, which, pct)
        limit = thresholds.get(limit_name)
        stats = figures.get(which) or {}
        if value is None:
            return "%s: no probe got there (%s of %s)" % (what, stats.get("count"), stats.get("of"))
        if limit is None:
            return "%s: no threshold %s in the change request" % (what, limit_name)
        if value > limit:
            return "%s %.3f s is above %s %s s" % (what, value, limit_name, limit)
        return None

    return rule


def _count(figures, key):
    return (figures.get(key) or {}).get("count")


def _max_problem(key, limit_name, what):
    def rule(figures, thresholds):
        value, limit = _count(figures, key), thresholds.get(limit_name, 0)
        if value is None:
            return "%s: not measured" % what
        if value > limit:
            return "%s %s is above %s %s" % (what, value, limit_name, limit)
        return None

    return rule


def _completion_problem(figures, thresholds):
    comp = figures.get("completion") or {}
    limit = thresholds.get("completion_rate_min")
    rate = comp.get("rate")
    if rate is None:
        return "completion rate: no probe was submitted"
    if limit is not None and rate < limit:
        return "completion rate %.3f (%s of %s; failed %s, timed out %s) is below %s %s" % (
            rate,
            comp.get("completed"),
            comp.get("of"),
            comp.get("failed"),
            comp.get("timed_out"),
            "completion_rate_min",
            limit,
        )
    return None


def _failed_binds_problem(figures, thresholds):
    failed = figures.get("failed_bindrequests") or {}
    if failed.get("count"):
        reasons = "; ".join(
            "%s x%s" % (r, n) for r, n in sorted((failed.get("reasons") or {}).items())
        )
        return "%s BindRequests Failed during the window: %s" % (failed["count"], reasons)
    return None


def _requested(key):
    return lambda f: bool((f.get(key) or {}).get("requested"))


def _gang_problem(figures, thresholds):
    g = figures.get("gangs")
    window = figures.get("window_s")
    if not g:
        return "gang probe: not measured"
    if g.get("count", 0) < g["requested"]:
        return "gang probe: %s of %s gangs were submitted" % (g.get("count"), g["requested"])
    if g.get("bound", 0) < g["requested"]:
        return (
            "%s of %s gangs (PodGroup minMember %s) had every pod bound within %s s "
            "(%s of %s pods bound): KAI did not schedule the gang"
            % (
                g.get("bound"),
                g["requested"],
                g.get("size"),
                window,
                g.get("members_bound"),
                g.get("members"),
            )
        )
    return None


def _burst_problem(figures, thresholds):
    b = figures.get("burst") or {}
    if not b.get("node"):
        return "burst probe: no data (no KWOK node with GPUs to send it to)"
    free = b.get("node_free_gpus")
    if free is not None and b["requested"] * P.FRACTION > free:
        return (
            "burst probe: no data (%s had %s free GPUs when it began; %s pods of %s GPU need %s: "
            "lower kaiops_rollout_burst_probes)"
            % (b["node"], free, b["requested"], P.FRACTION, b["requested"] * P.FRACTION)
        )
    if b.get("of", 0) < b["requested"]:
        return "burst probe: %s of %s pods were submitted" % (b.get("of"), b["requested"])
    if b.get("bound", 0) < b["requested"]:
        return (
            "%s of %s burst pods (0.5 GPU each, created at once on %s, %s GPUs) bound within %s s"
            % (
                b.get("bound"),
                b["requested"],
                b.get("node"),
                b.get("node_gpus"),
                figures.get("window_s"),
            )
        )
    return None


def _portions_problem(figures, thresholds):
    d = figures.get("device_portions")
    if not d:
        return "portions per device: not measured"
    if not d.get("pods"):
        return "portions per device: no data (no probe pod held a shared GPU)"
    if d.get("unknown"):
        return "portions per device: no data (portion unreadable for %s)" % ", ".join(
            d["unknown"][:5]
        )
    if d.get("over"):
        return "; ".join(
            "device %s was given %s of a GPU at once (%s), above %s"
            % (o["device"], o["portion"], ", ".join(sorted(o["pods"])[:6]), d.get("limit"))
            for o in d["over"][:3]
        )
    return None


def _auth_problem(figures, thresholds):
    a = figures.get("auth_errors")
    if not a:
        return "API refusals: not measured"
    if a.get("unreadable"):
        return "API refusals: no data (logs not read: %s)" % "; ".join(a["unreadable"][:3])
    if not a.get("pods_read"):
        return "API refusals: no data (no KAI pod's log was read)"
    if a.get("count"):
        seen = ["%s: %s" % (x["pod"], x["line"]) for x in a.get("log_lines") or []]
        seen += ["event on %s: %s" % (x["object"], x["message"]) for x in a.get("events") or []]
        return "%s refusals (401/403) of KAI components during the window: %s" % (
            a["count"],
            " | ".join(seen[:3]),
        )
    return None


# A latency gate per threshold (named as it, without "_s"); rollbacks and baselines ease these.
LATENCY_FIGURES = {
    "bind_latency_p50_s": ("submit_to_bound", "p50_s"),
    "bind_latency_p95_s": ("submit_to_bound", "p95_s"),
    "ready_latency_p50_s": ("submit_to_running", "p50_s"),
    "ready_latency_p95_s": ("submit_to_running", "p95_s"),
}
LATENCY_TEXT = {  # a latency figure's words in the messages, and the fix when it is too slow
    "submit_to_bound": (
        "submit-to-bound",
        "find what delays binding (binder logs, BindRequests) or raise the threshold with the "
        "change owner",
    ),
    "submit_to_running": (
        "submit-to-Running",
        "find what delays the start (node, images, reservation pods)",
    ),
}


def _latency_gate(limit_name):
    which, pct = LATENCY_FIGURES[limit_name]
    what, fix = LATENCY_TEXT[which]
    threshold = "<= %s s (" + limit_name + ")"
    return {
        "name": limit_name[: -len("_s")],
        "unit": "s",
        "figure": lambda f: _lat(f, which, pct),
        "threshold": lambda t: threshold % t.get(limit_name),
        "rule": _latency_problem(which, pct, limit_name, "%s %s" % (what, pct[: -len("_s")])),
        "fix": fix,
    }


ACCEPTANCE_GATES = (
    *(_latency_gate(name) for name in LATENCY_FIGURES),
    {
        "name": "completion_rate",
        "figure": lambda f: (f.get("completion") or {}).get("rate"),
        "threshold": lambda t: (
            ">= %s (completion_rate_min; failed and timed-out probes count)"
            % t.get("completion_rate_min")
        ),
        "rule": _completion_problem,
        "fix": "read the probes' pods and BindRequests in the verification evidence",
    },
    {
        "name": "binder_restarts",
        "figure": lambda f: _count(f, "binder_restarts"),
        "threshold": lambda t: (
            "<= %s (binder_restarts_max; a replaced binder pod counts)"
            % t.get("binder_restarts_max", 0)
        ),
        "rule": _max_problem("binder_restarts", "binder_restarts_max", "binder restarts"),
        "fix": "read the binder's previous log in the verification evidence",
    },
    {
        "name": "failed_bindrequests",
        "figure": lambda f: _count(f, "failed_bindrequests"),
        "threshold": lambda t: (
            "0 (a failed bind of a probe is a regression; one that lost the binder's cache race "
            "and then bound is listed as retried, not counted)"
        ),
        "rule": _failed_binds_problem,
        "fix": "read the failed BindRequests' reasons in the verification evidence",
    },
    {
        "name": "stale_objects",
        "figure": lambda f: _count(f, "stale_objects"),
        "threshold": lambda t: (
            "<= %s (stale_objects_max; left by the probes, new since the change began, or a "
            "GPU group's second reservation pod during the window)" % t.get("stale_objects_max", 0)
        ),
        "rule": _max_problem("stale_objects", "stale_objects_max", "stale objects"),
        "fix": "see the stale objects listed in the verification evidence; recovery.yml cleans "
        "them (a separate step with its own owner)",
    },
    {
        "name": "gang_bound",
        "when": _requested("gangs"),
        "figure": lambda f: (f.get("gangs") or {}).get("bound"),
        "threshold": lambda t: (
            "every gang probe (a PodGroup of 2 fraction pods, minMember 2) "
            "has both pods bound within the window"
        ),
        "rule": _gang_problem,
        "fix": "read the gang's PodGroup status and the scheduler's log in the verification "
        "evidence; roll back (NVIDIA/aicr #2636: gangs stopped scheduling after an upgrade)",
    },
    {
        "name": "burst_bound",
        "when": _requested("burst"),
        "figure": lambda f: (f.get("burst") or {}).get("bound"),
        "threshold": lambda t: (
            "every burst pod (0.5 GPU each, created at once on one KWOK "
            "node) bound within the window"
        ),
        "rule": _burst_problem,
        "fix": "read the burst pods' BindRequests and the reservation pods (KAI-Scheduler #2153)",
    },
    {
        "name": "device_portions",
        "figure": lambda f: (f.get("device_portions") or {}).get("max"),
        "threshold": lambda t: (
            "<= 1.0 of a GPU per device at any moment (BindRequests' "
            "portions, devices from the reservation pods)"
        ),
        "rule": _portions_problem,
        "fix": "read the GPU groups and reservation pods in the verification evidence; roll "
        "back (KAI-Scheduler #2153: a burst packed past one GPU; or binds that were failing "
        "before the upgrade, retried while admission had no endpoint: remediate them first, "
        "docs/change-window.md)",
    },
    {
        "name": "auth_errors",
        "figure": lambda f: (f.get("auth_errors") or {}).get("count"),
        "threshold": lambda t: "0 (no KAI component logged or got a 401/403 during the window)",
        "rule": _auth_problem,
        "fix": "read the component's log and its service account's token and RBAC "
        "(KAI-Scheduler #1536, #1751); roll back",
    },
)


# After a rollback the old version is held to its own figures before the change: a latency may
# be the threshold, or no worse than before - x2 + 1 s, a busy cluster's jitter between two windows
# minutes apart (x1.5 + 0.5 s failed healthy rollbacks on the loaded lab: bind p50 1.6 s before
# the change, 3.7 s after the rollback to the same build), far below a binder that panics or
# waits out its 40 s reservation timeout. A request that ties its latencies to the baseline
# (latency_baseline_factor, _plus_s) widens it to those where they are wider: a site that declared
# its latency noisy is noisy after a rollback too (the lab: 4.4 s before, 7.2 s after). The
# completion rate may be the threshold or what it was before. Counts (restarts, failed binds,
# stale objects) keep their thresholds.
ROLLBACK_SLACK = {"factor": 2.0, "plus_s": 1.0}


def rollback_slack(thresholds):
    """(factor, plus_s) a rollback's latencies may exceed the baseline by: ROLLBACK_SLACK, or the
    request's latency_baseline_factor and _plus_s where they are wider."""
    factor = _seconds(thresholds.get("latency_baseline_factor"))
    plus = _seconds(thresholds.get("latency_baseline_plus_s")) if factor is not None else None
    return (
        max(ROLLBACK_SLACK["factor"], factor or 0.0),
        max(ROLLBACK_SLACK["plus_s"], plus or 0.0),
    )


def rollback_thresholds(thresholds, baseline):
    """The thresholds a rollback's verification is held to, and which were eased by the baseline
    ({name: (figure before, factor, plus_s)})."""
    out, eased = dict(thresholds), {}
    if not baseline:
        return out, eased
    factor, plus = rollback_slack(thresholds)
    for name, (which, pct) in LATENCY_FIGURES.items():
        before = _lat(baseline, which, pct)
        limit = thresholds.get(name)
        if before is None or limit is None:
            continue
        allowed = round(before * factor + plus, 3)
        if allowed > limit:
            out[name], eased[name] = allowed, (before, factor, plus)
    rate = (baseline.get("completion") or {}).get("rate")
    limit = thresholds.get("completion_rate_min")
    if rate is not None and limit is not None and rate < limit:
        out["completion_rate_min"], eased["completion_rate_min"] = rate, (rate, None, None)
    return out, eased


def baseline_thresholds(thresholds, baseline):
    """The verification's latency limits when the request ties them to this run's baseline.

    A site whose latencies are noisy (the lab, on a shared 2-CPU machine, measured bind p50 from
    1.6 to 2.5 s across runs) sets ``latency_baseline_factor`` (and ``latency_baseline_plus_s``):
    each latency limit is then at least the baseline's figure, measured in the same run before
    the change on the version that ran, times the factor plus the seconds; the written threshold
    stays the floor. A baseline figure that was not measured leaves the written threshold alone,
    and says so: no data never eases a gate. Returns (thresholds, {name: how it was set})."""
    factor = _seconds(thresholds.get("latency_baseline_factor"))
    if factor is None:
        return thresholds, {}
    plus = _seconds(thresholds.get("latency_baseline_plus_s")) or 0.0
    out, notes = dict(thresholds), {}
    for name, (which, pct) in LATENCY_FIGURES.items():
        limit = _seconds(thresholds.get(name))
        if limit is None:
            continue
        before = _lat(baseline or {}, which, pct)
        if before is None:
            notes[name] = " - the baseline was not measured: the written threshold alone"
            continue
        derived = round(before * factor + plus, 3)
        out[name] = max(limit, derived)
        notes[name] = " - from this run's baseline: %s s x%s + %s s = %s s (written %s s)" % (
            before,
            factor,
            plus,
            derived,
            limit,
        )
    return out, notes


def _rollback_notes(eased):
    """How a rollback's eased thresholds read in the gate's threshold column."""
    return {
        name: " - as before the change"
        if name == "completion_rate_min"
        else " - no worse than before the change (%s: %s, x%s + %s s)" % (name, before, f, plus)
        for name, (before, f, plus) in eased.items()
    }


def verify_gates(stage, figures, thresholds, evidence=None, baseline=None):
    """One gate per acceptance declaration for one verification (stage verify or rollback).

    ``baseline``: the figures before the change. The verification after the upgrade is held to
    ``baseline_thresholds`` (only when the request ties its latencies to the baseline), a
    rollback's to ``rollback_thresholds``; each threshold so set says how."""
    thresholds = thresholds if isinstance(thresholds, dict) else {}
    if stage == "rollback":
        thresholds, eased = rollback_thresholds(thresholds, baseline)
        notes = _rollback_notes(eased)
    else:
        thresholds, notes = baseline_thresholds(thresholds, baseline)
    link = evidence or figures.get("evidence")
    out = []
    for decl in ACCEPTANCE_GATES:
        if decl.get("when") and not decl["when"](figures):
            continue  # a probe the change request turned off (its figures say so)
        problem = decl["rule"](figures, thresholds)
        text = decl["threshold"](thresholds)
        names = [n for n in notes if "(%s" % n in text]
        if names:
            text += notes[names[0]]
        record = checked(stage, decl["name"], decl["figure"](figures), text, problem, decl["fix"])
        record["evidence"] = link
        if decl.get("unit"):
            record["unit"] = decl["unit"]
        out.append(record)
    return out


def _seconds(value):
    try:
        return float(value)
    except (TypeError, ValueError):
        return None


def _running_version_gate(stage, version, expected_version):
    ok = version == expected_version
    return checked(
        stage,
        "running_version",
        version or "unreadable",
        expected_version,
        None if ok else "the binder runs %s, not %s" % (version, expected_version),
        "read the Helm release and the binder image",
    )


def _rolled_out_gate(stage, identity, expected_version, rolled_out_s, timeout_s, reasons):
    """Every component at the version and rolled out, within the bound (a figure over it fails)."""
    took, bound = _seconds(rolled_out_s), _seconds(timeout_s)
    rolled = bool(identity.get("all_rolled_out")) and identity.get("version") == expected_version
    in_time = rolled and took is not None and bound is not None and took <= bound
    why = list(reasons or [])
    if rolled and not in_time:
        why.append("rolled out after %s s, over the bound of %s s" % (rolled_out_s, timeout_s))
    return checked(
        stage,
        "rolled_out",
        "%s s" % rolled_out_s if rolled else "not rolled out after %s s" % rolled_out_s,
        "every KAI component Deployment runs %s and is rolled out (observed generation, "
        "updated and available replicas), kai-config's conditions current for its "
        "generation, within %s s" % (expected_version, timeout_s),
        None if in_time else "; ".join(why) or "KAI did not finish rolling out",
        "read kai-config's status conditions, the operator's log and the component "
        "Deployments' conditions",
    )


def _agreement_gate(stage, found):
    """Helm, the operator, kai-config and the components naming one version (kai/identify)."""
    return gate(
        stage,
        "agreement",
        "; ".join(found) or "helm, operator, kai-config and components agree",
        "helm's release, the operator, kai-config and every component name one version",
        not found,
        "; ".join(found),
        ""
        if not found
        else "run the supported downgrade or upgrade again to one version (helm upgrade to "
        "the chart version, or uninstall and install); never helm rollback KAI's chart",
    )


def _helm_release_gate(stage, helm_status):
    deployed = helm_status == "deployed"
    return checked(
        stage,
        "helm_release",
        helm_status or "unknown",
        "deployed",
        None if deployed else "the Helm release is %s, not deployed" % (helm_status or "unknown"),
        "read helm history; downgrade by uninstall and install of the recorded version",
    )


def upgrade_gates(
    stage,
    identity,
    expected_version,
    rolled_out_s,
    timeout_s,
    evidence=None,
    helm_status=None,
    reasons=None,
):
    """The version that runs after the upgrade (or the downgrade), read from the components; the
    rollout within its bound (KAI's operator: every component at the version, rolled out, and
    kai-config's conditions current for its generation; a figure over the bound fails); helm and
    the components agreeing (kai/identify findings) and, when given, the Helm release's status."""
    identity = identity or {}
    gates = [
        _running_version_gate(stage, identity.get("version"), expected_version),
        _rolled_out_gate(stage, identity, expected_version, rolled_out_s, timeout_s, reasons),
        _agreement_gate(stage, list(identity.get("findings") or [])),
    ]
    if helm_status is not None:
        gates.append(_helm_release_gate(stage, helm_status))
    for g in gates:
        g["evidence"] = evidence
    return gates


def kept_gate(before, after, evidence=None):
    """What a downgrade must keep (CRDs, queues, SchedulingShards, PodGroups, the reservation
    namespace), by name before and after it; "no data" after the downgrade fails."""
    from ansible_collections.kaiops.runbooks.plugins.module_utils.rollout.restore import lost

    counts = ", ".join("%s %d" % (k, len(v)) for k, v in sorted((before or {}).items()))
    if after is None:
        gone, ok = {}, False
        message = "what the downgrade must keep could not be read after it"
    else:
        gone = lost(before, after)
        ok = not gone
        message = "; ".join("%s gone: %s" % (k, ", ".join(v)) for k, v in gone.items())
    out = checked(
        "rollback",
        "kept",
        "all kept (%s)" % counts if ok else "lost: %s" % (message or "unknown"),
        "every KAI CRD, queue, SchedulingShard, PodGroup and the reservation namespace present "
        "before the downgrade is present after it",
        None if ok else message,
        "recreate them from the snapshot before the change (snapshots/) and "
        "read KAI's operator log",
    )
    out["evidence"] = evidence
    return out
