# -*- coding: utf-8 -*-
# Copyright: kaiops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""GPU access under sharing: judge each case. Service layer, pure rules over records.

Each case has a rule in ``RULES`` (rules as data): ``rule(pods, context) -> (verdict,
observed, observations)`` over the records of ``gpu_access/records.py``. The expectation of
each case is declared by the caller (the role's vars) before the workloads run; a case without
a declared expectation is not judged. Verdicts:

- ``passed`` / ``failed``: the case's assertions held / did not;
- ``not_run``: the case did not run, with the reason. Never counted as passed.

Observations (what was seen, e.g. "no GPU present", the isolation in place) are kept apart from
verdicts in the report. ``cost_section`` puts the run's window through ``gpu_access/cost.py``.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.kaiops.runbooks.plugins.module_utils.errors import (
    STATUS_INVALID,
    KaiopsError,
)
from ansible_collections.kaiops.runbooks.plugins.module_utils.gpu_access import cost
from ansible_collections.kaiops.runbooks.plugins.module_utils.gpu_access.records import (
    parse_time,
)

PASSED, FAILED, NOT_RUN = "passed", "failed", "not_run"
NO_GPU = "no GPU present"
CASE_ORDER = (
    "whole_gpu",
    "concurrent",
    "fractional_sharing",
    "policy_denial",
    "contention",
    "isolation",
)
ISOLATION_CHOICES = ("none", "time-slicing", "mig", "mps")


def _completed(rec):
    """Problems that stop a probe pod from counting as a completed valid run."""
    problems = []
    if rec["phase"] != "Succeeded":
        problems.append(
            "%s ended %s%s"
            % (rec["name"], rec["phase"], " (%s)" % rec["reason"] if rec["reason"] else "")
        )
    if rec["probe"] is None:
        problems.append("%s printed no probe JSON line" % rec["name"])
    elif rec["probe"]["check_passed"] is not True:
        problems.append("%s: the probe's check did not pass" % rec["name"])
    return problems


def gpu_label(rec):
    """How the probe's access reads: GPU used, or no GPU present (never GPU access)."""
    probe = rec["probe"] or {}
    if probe.get("gpu_present") is True:
        return "GPU used (%s)" % ", ".join(d.get("name", "?") for d in probe.get("devices", []))
    return "%s (the check ran on the CPU: not GPU access)" % NO_GPU


def _device_problems(rec, count):
    problems = []
    if len(rec["devices"]) != count:
        problems.append(
            "%s saw %d device IDs in NVIDIA_VISIBLE_DEVICES (%r), expected %d"
            % (rec["name"], len(rec["devices"]), rec["visible"]["NVIDIA_VISIBLE_DEVICES"], count)
        )
    probe = rec["probe"] or {}
    if probe.get("gpu_present") is True:
        uuids = sorted(d.get("uuid") for d in probe.get("devices", []))
        wanted = sorted(d for d in rec["devices"] if d.startswith("GPU-"))
        if wanted and uuids != wanted:
            problems.append(
                "%s: the driver shows %s, NVIDIA_VISIBLE_DEVICES gave %s"
                % (rec["name"], uuids, wanted)
            )
    return problems


def overlap(records):
    """(overlapped, seconds) from the probes' started_at/finished_at."""
    spans = []
    for rec in records:
        probe = rec["probe"] or {}
        start, end = parse_time(probe.get("started_at")), parse_time(probe.get("finished_at"))
        if start is None or end is None:
            return False, None
        spans.append((start, end))
    if len(spans) < 2:
        return False, None
    seconds = (min(e for _unused, e in spans) - max(s for s, _unused in spans)).total_seconds()
    return seconds > 0, round(seconds, 3)


def _by_case(pods, case):
    return sorted((p for p in pods if p["case"] == case), key=lambda p: p["name"] or "")


def _not_run(reason):
    return NOT_RUN, "not run: " + reason, []


def _missing(case, context):
    reason = context.get("skipped", {}).get(case)
    return _not_run(reason or "no workload of this case was found")


def rule_whole_gpu(pods, context):
    recs = _by_case(pods, "whole_gpu")
    if not recs:
        return _missing("whole_gpu", context)
    rec = recs[0]
    problems = _completed(rec) + _device_problems(rec, 1)
    observed = "%s: %s, devices %s, check %s" % (
        rec["name"],
        rec["phase"],
        rec["devices"] or "none",
        "passed" if (rec["probe"] or {}).get("check_passed") else "not passed",
    )
    observations = ["observation: %s" % gpu_label(rec)]
    return (FAILED if problems else PASSED), _with(observed, problems), observations


def rule_concurrent(pods, context):
    recs = _by_case(pods, "concurrent")
    if not recs:
        return _missing("concurrent", context)
    problems = []
    for rec in recs:
        problems += _completed(rec) + _device_problems(rec, 1)
    if len(recs) != 2:
        problems.append("expected 2 workloads, found %d" % len(recs))
    devices = [d for rec in recs for d in rec["devices"]]
    if len(set(devices)) != len(devices):
        problems.append("the workloads shared a device: %s" % devices)
    overlapped, seconds = overlap(recs)
    if not overlapped:
        problems.append(
            "the workloads did not overlap in time (overlap %s s): concurrency not shown" % seconds
        )
    observed = "; ".join("%s: %s, devices %s" % (r["name"], r["phase"], r["devices"]) for r in recs)
    observed += "; overlap %s s" % seconds
    observations = []
    if not problems:
        observations.append(
            "observation: on this path (whole GPUs from the device plugin, no sharing) "
            "the two workloads got separate devices"
        )
    observations += ["observation: %s: %s" % (r["name"], gpu_label(r)) for r in recs]
    return (FAILED if problems else PASSED), _with(observed, problems), observations


def rule_fractional_sharing(pods, context):
    recs = _by_case(pods, "fractional_sharing")
    if not recs:
        return _missing("fractional_sharing", context)
    portion = str(context.get("fraction", "0.5"))
    problems = []
    for rec in recs:
        problems += _completed(rec) + _device_problems(rec, 1)
        if rec["visible"]["GPU_PORTION"] is None or str(rec["visible"]["GPU_PORTION"]) != portion:
            problems.append(
                "%s: GPU_PORTION %r, expected %s"
                % (rec["name"], rec["visible"]["GPU_PORTION"], portion)
            )
    if len(recs) != 2:
        problems.append("expected 2 workloads, found %d" % len(recs))
    devices = {d for rec in recs for d in rec["devices"]}
    if len(devices) != 1:
        problems.append("the workloads did not share one device: %s" % sorted(devices))
    overlapped, seconds = overlap(recs)
    if not overlapped:
        problems.append("the workloads did not overlap in time (overlap %s s)" % seconds)
    observed = "; ".join(
        "%s: %s, devices %s, GPU_PORTION %s, ConfigMap %s"
        % (
            r["name"],
            r["phase"],
            r["devices"],
            r["visible"]["GPU_PORTION"],
            r["visible"]["configmap"],
        )
        for r in recs
    )
    observations = ["observation: %s: %s" % (r["name"], gpu_label(r)) for r in recs]
    return (FAILED if problems else PASSED), _with(observed, problems), observations


def rule_policy_denial(pods, context):
    recs = _by_case(pods, "policy_denial")
    if not recs:
        return _missing("policy_denial", context)
    problems = []
    for rec in recs:
        if rec["probe"] is None:
            problems.append(
                "%s printed no probe JSON line: its access was not observed" % rec["name"]
            )
            continue
        if rec["devices"]:
            problems.append(
                "%s is outside the policy but saw devices %s (NVIDIA_VISIBLE_DEVICES=%r)"
                % (rec["name"], rec["devices"], rec["visible"]["NVIDIA_VISIBLE_DEVICES"])
            )
        if rec["probe"]["devices"]:
            problems.append("%s is outside the policy but the driver showed it a GPU" % rec["name"])
    observed = "; ".join(
        "%s (%s): %s, NVIDIA_VISIBLE_DEVICES=%s"
        % (
            r["name"],
            "GPU request %s" % r["gpu_request"] if r["gpu_request"] else "no GPU request",
            r["phase"],
            "unset"
            if r["visible"]["NVIDIA_VISIBLE_DEVICES"] is None
            else repr(r["visible"]["NVIDIA_VISIBLE_DEVICES"]),
        )
        for r in recs
    )
    observations = []
    if context.get("skipped", {}).get("policy_denial_queue"):
        observations.append(
            "observation: outsider in a KAI queue without access: not run: "
            + context["skipped"]["policy_denial_queue"]
        )
    return (FAILED if problems else PASSED), _with(observed, problems), observations


def rule_contention(pods, context):
    recs = _by_case(pods, "contention")
    if not recs:
        return _missing("contention", context)
    problems = []
    for rec in recs:
        problems += _completed(rec)
    overlapped, seconds = overlap(recs)
    observed = "; ".join(
        "%s: %s, devices %s, requested %s MiB, allocated %s MiB on device: %s"
        % (
            r["name"],
            r["phase"],
            r["devices"],
            (r["probe"] or {}).get("alloc", {}).get("requested_mib"),
            (r["probe"] or {}).get("alloc", {}).get("allocated_mib"),
            (r["probe"] or {}).get("alloc", {}).get("on_device"),
        )
        for r in recs
    )
    observed += "; overlap %s s" % seconds
    observations = []
    on_device = [bool((r["probe"] or {}).get("alloc", {}).get("on_device")) for r in recs]
    if not any(on_device):
        observations.append(
            "observation: memory contention not observable without a GPU "
            "(alloc.on_device is false: no device memory was allocated)"
        )
    else:
        for r in recs:
            alloc = (r["probe"] or {}).get("alloc", {})
            observations.append(
                "observation: %s got %s of %s MiB (satisfied %s%s)"
                % (
                    r["name"],
                    alloc.get("allocated_mib"),
                    alloc.get("requested_mib"),
                    alloc.get("satisfied"),
                    ", error: %s" % alloc["error"] if alloc.get("error") else "",
                )
            )
    shared = {d for r in recs for d in r["devices"]}
    if len(recs) > 1 and len(shared) == sum(len(r["devices"]) for r in recs):
        observations.append(
            "observation: the probes held separate devices, so they did not contend for one "
            "device's memory"
        )
    if not overlapped:
        observations.append("observation: the probes did not overlap in time")
    return (FAILED if problems else PASSED), _with(observed, problems), observations


def observed_isolation(nodes, records):
    """The isolation the deployment enforces, read from node labels: (mechanism, detail)."""
    fake = any((r["probe"] or {}).get("gpu_present") is False and r["devices"] for r in records)
    mechanisms, details = set(), []
    for node in nodes:
        labels = (node.get("metadata") or {}).get("labels") or {}
        name = (node.get("metadata") or {}).get("name")
        if labels.get("run.ai/fake.gpu") == "true":
            fake = True
        mig = labels.get("nvidia.com/mig.strategy")
        sharing = labels.get("nvidia.com/gpu.sharing-strategy")
        replicas = labels.get("nvidia.com/gpu.replicas")
        if mig in ("single", "mixed"):
            mechanisms.add("mig")
        if sharing == "time-slicing" or (replicas or "1") not in ("0", "1"):
            mechanisms.add("time-slicing")
        if sharing == "mps" or labels.get("nvidia.com/mps.capable") == "true":
            mechanisms.add("mps")
        details.append(
            "%s: mig.strategy=%s, gpu.sharing-strategy=%s, gpu.replicas=%s, fake.gpu=%s"
            % (
                name,
                mig or "unset",
                sharing or "unset",
                replicas or "unset",
                labels.get("run.ai/fake.gpu", "unset"),
            )
        )
    if fake:
        return "none", "none: fake devices (%s)" % "; ".join(details or ["no node read"])
    if not mechanisms:
        return "none", "none (%s)" % "; ".join(details or ["no node read"])
    if len(mechanisms) > 1:
        return "mixed", "%s (%s)" % ("+".join(sorted(mechanisms)), "; ".join(details))
    mech = mechanisms.pop()
    return mech, "%s (%s)" % (mech, "; ".join(details))


def rule_isolation(pods, context):
    if context.get("skipped", {}).get("isolation"):
        return _not_run(context["skipped"]["isolation"])
    expected = context.get("expected_isolation", "none")
    mechanism, detail = observed_isolation(context.get("nodes") or [], pods)
    observations = ["observation: isolation enforced: %s" % detail]
    problems = []
    if mechanism != expected:
        problems.append("asked to enforce %s, the deployment enforces %s" % (expected, mechanism))
    observed = "assertion: kai_gpu_access_expected_isolation=%s; enforced: %s" % (
        expected,
        mechanism,
    )
    return (FAILED if problems else PASSED), _with(observed, problems), observations


def _with(observed, problems):
    return observed if not problems else observed + ". FAILED: " + "; ".join(problems)


RULES = {
    "whole_gpu": rule_whole_gpu,
    "concurrent": rule_concurrent,
    "fractional_sharing": rule_fractional_sharing,
    "policy_denial": rule_policy_denial,
    "contention": rule_contention,
    "isolation": rule_isolation,
}


def evaluate(declared, pods, context):
    """Judge every declared case. ``declared``: [{id, title, expectation}] in run order."""
    results = []
    for case in declared:
        case_id = case.get("id")
        if case_id not in RULES:
            raise KaiopsError(
                "Failed to judge case %r: no rule for it (known: %s)" % (case_id, ", ".join(RULES)),
                status=STATUS_INVALID,
            )
        if not case.get("expectation"):
            raise KaiopsError(
                "Failed to judge case %s: its expectation was not declared" % case_id,
                status=STATUS_INVALID,
            )
        if case_id in context.get("not_selected", ()):
            verdict, observed, observations = _not_run("not selected (kai_gpu_access_cases)")
        else:
            verdict, observed, observations = RULES[case_id](pods, context)
        results.append(
            {
                "id": case_id,
                "title": case.get("title", case_id),
                "expectation": case["expectation"],
                "observed": observed,
                "observations": observations,
                "verdict": verdict,
            }
        )
    return results


# ---------------------------------------------------------------------------------- cost


def cost_section(pods, nodes, window_start, window_end, rate):
    """cost.compute_report over the run's window for the probe pods that held devices."""
    alloc_by_node = {}
    for node in nodes:
        name = (node.get("metadata") or {}).get("name")
        try:
            alloc_by_node[name] = int(
                ((node.get("status") or {}).get("allocatable") or {}).get("nvidia.com/gpu", 0)
            )
        except (TypeError, ValueError):
            alloc_by_node[name] = 0
    pool, workloads = [], []
    for rec in pods:
        for dev in rec["devices"]:
            gid = "%s/%s" % (rec["node"], dev)
            if gid not in pool:
                pool.append(gid)
    for node, count in sorted(alloc_by_node.items()):
        seen = [g for g in pool if g.startswith(str(node) + "/")]
        pool += ["%s/unused-%d" % (node, i) for i in range(max(count - len(seen), 0))]
    for rec in pods:
        if not rec["devices"] or not rec["started_at"]:
            continue
        portion = rec["visible"]["GPU_PORTION"] or "1"
        workloads.append(
            cost.Workload(
                name=rec["name"],
                gpus=["%s/%s" % (rec["node"], d) for d in rec["devices"]],
                portion=portion,
                start=rec["started_at"],
                end=rec["finished_at"],
            )
        )
    completed = sum(1 for r in pods if r["devices"] and not _completed(r))
    if not pool:
        return {"computed": False, "reason": "no GPU was allocated to a probe in this run"}, None
    report = cost.compute_report(cost.Window(window_start, window_end, pool), workloads, rate)
    figures = report.as_dict()
    figures["busy_gpu_seconds"] = str(
        cost.q(report.busy_gpu_hours * cost.SECONDS_PER_HOUR, "0.001")
    )
    figures["available_gpu_seconds"] = str(
        cost.q(report.available_gpu_hours * cost.SECONDS_PER_HOUR, "0.001")
    )
    figures["window_start"] = window_start
    figures["window_end"] = window_end
    figures["gpu_pool"] = pool
    figures["completed_valid_jobs"] = completed
    figures["computed"] = True
    no_gpu = not any((r["probe"] or {}).get("gpu_present") for r in pods)
    markdown = cost.render_markdown(
        report, completed_valid_jobs=completed, title="Utilisation and cost of this run's window"
    )
    extra = [
        "Window: %s to %s (the run's own window: from the declaration of the expectations to the "
        "report). GPU pool: %s. Busy time is each probe container's lifetime (started to finished, "
        "from its container status) on the devices it was given; exact figures are in "
        "gpu_access.json (busy %s GPU-seconds of %s available). This run has no failure "
        "window: the time from submission to start is startup latency (in the workloads "
        "table), not counted as loss."
        % (
            window_start,
            window_end,
            ", ".join(pool),
            figures["busy_gpu_seconds"],
            figures["available_gpu_seconds"],
        ),
        "",
    ]
    if no_gpu:
        extra += [
            "These GPU-hours are allocations of devices with %s: the probes computed on the "
            "CPU. Completed valid jobs here are probe runs whose CPU check passed." % NO_GPU,
            "",
        ]
    return figures, markdown + "\n" + "\n".join(extra)


def summarize(results, require_sharing):
    counts = {PASSED: 0, FAILED: 0, NOT_RUN: 0}
    for res in results:
        counts[res["verdict"]] += 1
    failed = [r["id"] for r in results if r["verdict"] == FAILED]
    reasons = ["case %s failed" % r["id"] for r in results if r["verdict"] == FAILED]
    sharing = [r for r in results if r["id"] == "fractional_sharing"]
    if require_sharing and (not sharing or sharing[0]["verdict"] != PASSED):
        reasons.append(
            "kai_gpu_access_require_sharing is true but fractional sharing %s"
            % (sharing[0]["observed"] if sharing else "was not declared")
        )
    return {
        "cases": len(results),
        "passed": counts[PASSED],
        "failed": counts[FAILED],
        "not_run": counts[NOT_RUN],
        "failed_cases": failed,
        "outcome": "failed" if reasons else "passed",
        "reasons": reasons,
    }
