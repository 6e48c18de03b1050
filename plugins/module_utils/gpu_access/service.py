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
verdicts in the report. An *outsider* is a workload outside the policy (the ``OUTSIDERS`` cases);
``outsider_devices`` lists every way one obtained a device through the tested path, and the
summary fails the run when any did. ``cost_section`` puts the run's window through
``cost.py``.

The context a rule reads: ``skipped`` and ``not_selected``; ``fraction``; ``nodes`` (those the
probes ran on); ``plan`` (``plan.build_plan``: enforcement, candidate nodes, contention figures,
queues); ``admission`` ({case: {rejected, message}} from the submission); ``expected_reasons``
({pod: KAI reason}); ``outsider_queues`` ({pod: queue}); ``expected_isolation``;
``require_block_visible_devices``; ``kai_scheduler``.
"""

import json
from decimal import Decimal, InvalidOperation

from ansible_collections.kaiops.runbooks.plugins.module_utils import cost
from ansible_collections.kaiops.runbooks.plugins.module_utils.errors import (
    STATUS_INVALID,
    KaiopsError,
)
from ansible_collections.kaiops.runbooks.plugins.module_utils.gpu_access.records import (
    MEMORY_LIMIT_ENV,
    SHARING_ENV,
    device_ids,
    held_reasons,
)
from ansible_collections.kaiops.runbooks.plugins.module_utils.k8s.objects import parse_time
from ansible_collections.kaiops.runbooks.plugins.module_utils.kai.facts import (
    NODE_LABELS,
    node_sharing,
)

PASSED, FAILED, NOT_RUN = "passed", "failed", "not_run"
NO_GPU = "no GPU present"
CASE_ORDER = (
    "whole_gpu",
    "concurrent",
    "fractional",
    "fractional_sharing",
    "contention",
    "policy_queue",
    "policy_visible_devices",
    "policy_whole_limit",
    "policy_denial",
    "isolation",
)
# The cases whose workloads are outside the policy: none of them may obtain a device.
OUTSIDERS = ("policy_queue", "policy_visible_devices", "policy_whole_limit", "policy_denial")
WHOLE_LIMIT_MESSAGE = "cannot have both GPU fraction request and whole GPU resource request/limit"
OUTSIDER_FAILURE = "an outsider obtained a device through the tested path"


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


def _dec(value):
    """A Decimal from a portion or figure as text, or None."""
    if value is None or isinstance(value, bool):
        return None
    try:
        return Decimal(str(value).strip())
    except (InvalidOperation, ValueError):
        return None


def _show(value):
    return "unset" if value is None else repr(value)


# ------------------------------------------------------------------ fractional access (KAI)


def _configmap_problems(rec, kai):
    """The ConfigMap the pod spec takes the sharing env from: one, named after the pod's
    annotation, seen while the pod ran, with data equal to what the container saw."""
    name, visible = rec["name"], rec["visible"]
    refs = {k: (rec.get("spec_env", {}).get(k) or {}).get("configmap") for k in SHARING_ENV}
    cm = kai.get("configmap")
    problems = []
    if not cm or any(refs[k] != cm for k in SHARING_ENV):
        problems.append(
            "%s: its pod spec does not take %s from one ConfigMap (%s)"
            % (name, ", ".join(SHARING_ENV), refs)
        )
    if not cm:
        return problems
    prefix = (rec.get("annotations") or {}).get("runai/shared-gpu-configmap")
    if prefix and not cm.startswith(prefix + "-"):
        problems.append(
            "%s: ConfigMap %s is not named after its runai/shared-gpu-configmap %s"
            % (name, cm, prefix)
        )
    data = kai.get("configmap_data")
    if not kai.get("configmap_seen"):
        return problems + ["%s: ConfigMap %s was not seen while the pod ran" % (name, cm)]
    if not data:
        return problems + ["%s: ConfigMap %s has no data" % (name, cm)]
    for key in SHARING_ENV:
        if str(data.get(key)) != str(visible.get(key)):
            problems.append(
                "%s: its container saw %s=%s, ConfigMap %s has %s"
                % (name, key, _show(visible.get(key)), cm, _show(data.get(key)))
            )
    return problems


def _reservation_problems(rec, kai):
    """The reservation pod of the pod's GPU group holds the device its container saw."""
    reservation = kai.get("reservation") or {}
    if not reservation.get("device"):
        return [
            "%s: no reservation pod with %s was seen for GPU group %s"
            % (rec["name"], "run.ai/reserve_for_gpu_index", kai.get("gpu_group"))
        ]
    if rec["devices"] != [reservation["device"]]:
        return [
            "%s: its container saw devices %s, its reservation pod %s holds %s"
            % (rec["name"], rec["devices"], reservation.get("name"), reservation["device"])
        ]
    return []


def _portion_problems(rec, context):
    """GPU_PORTION is the requested fraction and RUNAI_NUM_OF_GPUS agrees with it."""
    name, visible = rec["name"], rec["visible"]
    problems = []
    portion, wanted = _dec(visible.get("GPU_PORTION")), _dec(context.get("fraction", "0.5"))
    if portion is None or portion != wanted:
        problems.append(
            "%s: GPU_PORTION %s, expected %s" % (name, _show(visible.get("GPU_PORTION")), wanted)
        )
    if _dec(visible.get("RUNAI_NUM_OF_GPUS")) != portion:
        problems.append(
            "%s: RUNAI_NUM_OF_GPUS %s differs from GPU_PORTION %s"
            % (name, _show(visible.get("RUNAI_NUM_OF_GPUS")), _show(visible.get("GPU_PORTION")))
        )
    return problems


def fraction_checks(rec, context):
    """Problems of one fraction pod: what its container saw, the ConfigMap its pod spec names,
    that ConfigMap's data and its reservation pod's device must agree, with the requested
    portion, and its check must have passed."""
    problems = _completed(rec) + _device_problems(rec, 1)
    kai = rec.get("kai") or {}
    scheduler = context.get("kai_scheduler", "kai-scheduler")
    if rec.get("scheduler") != scheduler:
        problems.append(
            "%s was scheduled by %s, not %s" % (rec["name"], rec.get("scheduler"), scheduler)
        )
    return (
        problems
        + _configmap_problems(rec, kai)
        + _reservation_problems(rec, kai)
        + _portion_problems(rec, context)
    )


def _fraction_observed(rec):
    kai = rec.get("kai") or {}
    visible = rec["visible"]
    reservation = kai.get("reservation") or {}
    return (
        "%s: %s on %s (%s); its container saw NVIDIA_VISIBLE_DEVICES=%s, GPU_PORTION=%s, "
        "RUNAI_NUM_OF_GPUS=%s; its pod spec takes them from ConfigMap %s (data %s); GPU group %s, "
        "reservation pod %s device %s; check %s"
        % (
            rec["name"],
            rec["phase"],
            rec["node"],
            rec.get("scheduler"),
            _show(visible.get("NVIDIA_VISIBLE_DEVICES")),
            _show(visible.get("GPU_PORTION")),
            _show(visible.get("RUNAI_NUM_OF_GPUS")),
            kai.get("configmap"),
            kai.get("configmap_data"),
            kai.get("gpu_group"),
            reservation.get("name"),
            reservation.get("device"),
            "passed" if (rec["probe"] or {}).get("check_passed") else "not passed",
        )
    )


def rule_fractional(pods, context):
    recs = _by_case(pods, "fractional")
    if not recs:
        return _missing("fractional", context)
    problems = []
    for rec in recs:
        problems += fraction_checks(rec, context)
    if len(recs) != 1:
        problems.append("expected 1 workload, found %d" % len(recs))
    observed = "; ".join(_fraction_observed(r) for r in recs)
    observations = ["observation: %s: %s" % (r["name"], gpu_label(r)) for r in recs]
    return (FAILED if problems else PASSED), _with(observed, problems), observations


def rule_fractional_sharing(pods, context):
    recs = _by_case(pods, "fractional_sharing")
    if not recs:
        return _missing("fractional_sharing", context)
    problems = []
    for rec in recs:
        problems += fraction_checks(rec, context)
    if len(recs) != 2:
        problems.append("expected 2 workloads, found %d" % len(recs))
    together = next((r["kai"]["running_together_at"] for r in recs if r.get("kai")), None)
    if together is None:
        problems.append("the workloads were never seen Running at the same time")
    groups = {(r.get("kai") or {}).get("gpu_group") for r in recs}
    if len(groups) != 1 or None in groups:
        problems.append("the workloads are not in one GPU group: %s" % sorted(map(str, groups)))
    devices = {d for rec in recs for d in rec["devices"]}
    if len(devices) != 1:
        problems.append("the workloads did not share one device: %s" % sorted(devices))
    portions = [_dec(r["visible"]["GPU_PORTION"]) for r in recs]
    total = sum(portions) if None not in portions else None
    if total is None or total > 1:
        problems.append("their portions add up to %s, more than one GPU" % total)
    overlapped, seconds = overlap(recs)
    if not overlapped:
        problems.append("the workloads did not overlap in time (overlap %s s)" % seconds)
    observed = (
        "%s; Running together at %s (API), probe overlap %s s; GPU groups %s, devices %s; "
        % (
            "; ".join(_fraction_observed(r) for r in recs),
            together,
            seconds,
            sorted(map(str, groups)),
            sorted(devices),
        )
    )
    observed += "portions %s = %s" % (" + ".join(str(p) for p in portions), total)
    observations = ["observation: %s: %s" % (r["name"], gpu_label(r)) for r in recs]
    return (FAILED if problems else PASSED), _with(observed, problems), observations


# ------------------------------------------------------------------ outsiders (the policy)


def outsider_devices(rec, count_self_named=True):
    """Every way this outsider obtained a device through the tested path ([] when none).

    ``count_self_named`` False leaves out device IDs the pod named itself in its spec (a literal
    NVIDIA_VISIBLE_DEVICES): policy (b) reports those as seen, not as given.
    """
    found = []
    kai = rec.get("kai") or {}
    if kai.get("gpu_group"):
        found.append("GPU group %s" % kai["gpu_group"])
    br = kai.get("bind_request") or {}
    if br and (br.get("resource_type") == "Fraction" or (_dec(br.get("portion")) or 0) > 0):
        found.append(
            "BindRequest %s for %s GPU (%s)" % (br.get("name"), br.get("portion"), br.get("phase"))
        )
    reservation = kai.get("reservation") or {}
    if reservation.get("device"):
        found.append(
            "reservation pod %s holding %s" % (reservation.get("name"), reservation["device"])
        )
    data = kai.get("configmap_data") or {}
    if device_ids(data.get("NVIDIA_VISIBLE_DEVICES")):
        found.append(
            "ConfigMap %s naming %s" % (kai.get("configmap"), data["NVIDIA_VISIBLE_DEVICES"])
        )
    if rec.get("gpu_request") and rec.get("node"):
        found.append(
            "nvidia.com/gpu %s on %s from the device plugin" % (rec["gpu_request"], rec["node"])
        )
    if rec["devices"] and (count_self_named or not self_named(rec)):
        found.append(
            "devices %s in NVIDIA_VISIBLE_DEVICES=%r"
            % (rec["devices"], rec["visible"]["NVIDIA_VISIBLE_DEVICES"])
        )
    if (rec.get("probe") or {}).get("devices"):
        found.append(
            "the driver showed it %s"
            % [d.get("uuid") or d.get("name") for d in rec["probe"]["devices"]]
        )
    return found


def _outsider_problems(rec, count_self_named=True):
    got = outsider_devices(rec, count_self_named)
    if not got:
        return []
    return ["%s: %s (%s): %s" % (OUTSIDER_FAILURE, rec["name"], rec["case"], "; ".join(got))]


def admission_outcome(outcome):
    """A submission's outcome ({rejected, message}), the message reduced to the API server's own
    words (the Status body's message) when the client wrapped it."""
    adm = dict(outcome or {})
    text = adm.get("message") or ""
    start = text.find("{")
    if start >= 0:
        try:
            adm["message"] = json.loads(text[start:].strip()).get("message") or text
        except (ValueError, AttributeError):
            pass
    return adm


def _admission(context, case):
    return admission_outcome((context.get("admission") or {}).get(case))


def self_named(rec):
    """True when the pod's spec sets NVIDIA_VISIBLE_DEVICES itself, to what its container saw."""
    spec = (rec.get("spec_env") or {}).get("NVIDIA_VISIBLE_DEVICES") or {}
    return "value" in spec and spec["value"] == rec["visible"]["NVIDIA_VISIBLE_DEVICES"]


def allocated_devices(rec):
    """The devices the cluster gave the pod (the device plugin, KAI): not ones it named itself."""
    return [] if self_named(rec) else list(rec["devices"])


def _reasons_text(reasons):
    """A PodGroup's unschedulable reasons as read: specific reasons and the condition's."""
    return "; ".join(
        "%s (condition reason %s: %s)"
        % (
            ", ".join(r.get("specific_reasons") or []) or "no specific reason",
            r.get("reason"),
            r.get("message"),
        )
        for r in reasons
    )


def _held_problems(rec, want):
    """An outsider pod must stay Pending with KAI's expected reason on its PodGroup."""
    kai = rec.get("kai") or {}
    reasons = ((kai.get("pod_group") or {}).get("reasons")) or []
    got = held_reasons(kai.get("pod_group"))
    problems = []
    if rec["phase"] != "Pending":
        problems.append("%s did not stay Pending: %s" % (rec["name"], rec["phase"]))
    if want and want not in got:
        if got:
            carried = got
        elif reasons:
            carried = "no specific reason (condition reason %s)" % ", ".join(
                str(r.get("reason")) for r in reasons
            )
        else:
            carried = "no reason"
        problems.append(
            "%s: its PodGroup carries %s, expected KAI's reason %s" % (rec["name"], carried, want)
        )
    return problems + _outsider_problems(rec)


def rule_policy_queue(pods, context):
    recs = _by_case(pods, "policy_queue")
    expected = context.get("expected_reasons") or {}
    adm = _admission(context, "policy_queue")
    if not recs and not adm:
        return _missing("policy_queue", context)
    problems, parts = [], []
    by_name = {r["name"]: r for r in recs}
    for name in sorted(set(expected) | set(by_name)):
        rec = by_name.get(name)
        if rec is None:
            problems.append("%s was not created: %s" % (name, adm.get("message") or "no pod found"))
            continue
        problems += _held_problems(rec, expected.get(name))
        pod_group = (rec.get("kai") or {}).get("pod_group") or {}
        parts.append(
            "%s (queue %s): %s, node %s, PodGroup %s reasons %s; devices obtained: %s"
            % (
                name,
                (context.get("outsider_queues") or {}).get(name),
                rec["phase"],
                rec["node"] or "none",
                pod_group.get("name"),
                _reasons_text(pod_group.get("reasons") or []) or "none",
                "; ".join(outsider_devices(rec)) or "none",
            )
        )
    return (FAILED if problems else PASSED), _with("; ".join(parts), problems), []


ON_OFF = {True: "on", False: "off", None: "unknown"}


def _setting_text(setting):
    """One enforcement setting of the plan and where it was read: 'on (kai-config=true; ...)'."""
    return "%s (%s)" % (
        ON_OFF[setting.get("enabled")],
        "; ".join(setting.get("sources") or ["not read"]),
    )


def _enforced_text(setting):
    text = "blockNvidiaVisibleDevices " + _setting_text(setting)
    if setting.get("note"):
        text += ": " + setting["note"]
    return text


def _visible_devices_rejected(adm, setting):
    """(observed, problems) when admission rejected the pod naming devices itself."""
    observed = "blockNvidiaVisibleDevices enforced: rejected by admission: %s" % adm.get("message")
    problems = []
    if setting.get("enabled") is False:
        problems.append(
            "admission rejected it although the cluster reads %s" % _enforced_text(setting)
        )
    return observed, problems


def _visible_devices_admitted(rec, setting):
    """(observed, problems, observations) when admission let the pod naming devices through."""
    named = rec["visible"]["NVIDIA_VISIBLE_DEVICES"]
    observed = (
        "blockNvidiaVisibleDevices not enforced: admitted, %s on %s (%s), no GPU request; its "
        "container sees NVIDIA_VISIBLE_DEVICES=%s%s; devices from KAI or the driver: %s"
        % (
            rec["phase"],
            rec["node"],
            rec.get("scheduler"),
            _show(named),
            ", which it named itself" if self_named(rec) else "",
            "; ".join(outsider_devices(rec, count_self_named=False)) or "none",
        )
    )
    problems, observations = [], []
    if rec["probe"] is None:
        problems.append(
            "%s printed no probe JSON line: what it sees was not observed" % rec["name"]
        )
    if setting.get("enabled") is True:
        problems.append(
            "blockNvidiaVisibleDevices is on but admission let %s through" % rec["name"]
        )
    problems += _outsider_problems(rec, count_self_named=False)
    if rec["devices"]:
        observations.append(
            "observation: %s sees devices %s that it named itself: with "
            "blockNvidiaVisibleDevices off, admission lets a pod without a GPU request name "
            "devices; on a node whose container runtime honours NVIDIA_VISIBLE_DEVICES that "
            "is GPU access outside KAI" % (rec["name"], rec["devices"])
        )
    observations.append("observation: %s: %s" % (rec["name"], gpu_label(rec)))
    return observed, problems, observations


def rule_policy_visible_devices(pods, context):
    recs = _by_case(pods, "policy_visible_devices")
    adm = _admission(context, "policy_visible_devices")
    if not recs and not adm:
        return _missing("policy_visible_devices", context)
    setting = ((context.get("plan") or {}).get("enforcement") or {}).get(
        "block_nvidia_visible_devices"
    ) or {}
    if adm.get("rejected"):
        enforced = "on"
        observed, problems = _visible_devices_rejected(adm, setting)
        observations = []
    elif recs:
        enforced = "off"
        observed, problems, observations = _visible_devices_admitted(recs[0], setting)
    else:
        return _not_run("the pod was neither created nor rejected")
    observations.insert(
        0,
        "observation: the cluster enforces blockNvidiaVisibleDevices: %s (admission %s the pod; "
        "configured: %s)"
        % (enforced, "rejected" if enforced == "on" else "admitted", _enforced_text(setting)),
    )
    if context.get("require_block_visible_devices") and enforced != "on":
        problems.append(
            "kai_gpu_access_require_block_visible_devices is true but the cluster does not block "
            "NVIDIA_VISIBLE_DEVICES"
        )
    return (FAILED if problems else PASSED), _with(observed, problems), observations


def rule_policy_whole_limit(pods, context):
    recs = _by_case(pods, "policy_whole_limit")
    adm = _admission(context, "policy_whole_limit")
    if not recs and not adm:
        return _missing("policy_whole_limit", context)
    problems = []
    if adm.get("rejected"):
        observed = "rejected by admission: %s" % adm.get("message")
        if WHOLE_LIMIT_MESSAGE not in (adm.get("message") or ""):
            problems.append("rejected, but not with KAI's message %r" % WHOLE_LIMIT_MESSAGE)
    else:
        observed = "admitted: " + "; ".join(
            "%s: %s on %s, GPU request %s, fraction %s"
            % (r["name"], r["phase"], r["node"], r["gpu_request"], r["gpu_fraction"])
            for r in recs
        )
        problems.append("admission let a fraction request with a whole-GPU limit through")
        for rec in recs:
            problems += _outsider_problems(rec)
    return (FAILED if problems else PASSED), _with(observed, problems), []


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
        "%s (%s, %s): %s, NVIDIA_VISIBLE_DEVICES=%s"
        % (
            r["name"],
            "GPU request %s" % r["gpu_request"] if r["gpu_request"] else "no GPU request",
            r.get("scheduler"),
            r["phase"],
            "unset"
            if r["visible"]["NVIDIA_VISIBLE_DEVICES"] is None
            else repr(r["visible"]["NVIDIA_VISIBLE_DEVICES"]),
        )
        for r in recs
    )
    return (FAILED if problems else PASSED), _with(observed, problems), []


# ------------------------------------------------------------------ bounded contention


def _oom(alloc):
    return "OUT_OF_MEMORY" in (alloc.get("error") or "").upper() or (
        alloc.get("on_device") and not alloc.get("satisfied")
    )


def contention_outcome(recs):
    """What happened to the two allocations, in words: the record the case keeps."""
    allocs = [(r, (r["probe"] or {}).get("alloc") or {}) for r in recs]
    failed = [r["name"] for r in recs if r["phase"] == "Failed" or r["reason"] == "OOMKilled"]
    if not any(a.get("on_device") for _rec, a in allocs):
        text = (
            "not observable without a GPU: no device memory was allocated (%s); on fake GPUs "
            "the contention exists only as the declared figures" % NO_GPU
        )
    else:
        short = [r["name"] for r, a in allocs if _oom(a)]
        if not short:
            text = "both ran and got all the memory they asked for"
        elif len(short) == len(allocs):
            text = "both got less than they asked for (out of memory): %s" % ", ".join(short)
        else:
            text = "one got less than it asked for (out of memory): %s" % ", ".join(short)
    if failed:
        text += "; ended Failed: %s" % ", ".join(failed)
    return text


def _contention_problems(recs, devices, overlapped, seconds):
    """Why the case did not show contention: a pod not ended or silent, not two pods, not one
    device, or no overlap in time."""
    problems = []
    for rec in recs:
        if rec["phase"] not in ("Succeeded", "Failed"):
            problems.append("%s did not end within the timeout: %s" % (rec["name"], rec["phase"]))
        if rec["probe"] is None and rec["phase"] == "Succeeded":
            problems.append(
                "%s printed no probe JSON line: what it got was not recorded" % rec["name"]
            )
    if len(recs) != 2:
        problems.append("expected 2 workloads, found %d" % len(recs))
    if len(devices) != 1:
        problems.append(
            "the workloads did not share one device (%s): no contention" % sorted(devices)
        )
    if not overlapped:
        problems.append(
            "the workloads did not hold their memory at the same time (overlap %s s)" % seconds
        )
    return problems


def _contention_declared(figures):
    alloc = figures.get("alloc_mib")
    memory = figures.get("device_memory_mib")
    portion = figures.get("portion_mib")
    declared = "declared: each asks %s MiB (%s)" % (alloc, figures.get("basis"))
    if memory and portion is not None and alloc is not None:
        declared += (
            ", over its portion of %s MiB by %s MiB; together %s MiB, over the %s MiB device "
            "by %s MiB"
            % (
                portion,
                alloc - portion,
                2 * alloc,
                memory,
                2 * alloc - memory,
            )
        )
    return declared


def _contention_pod_text(r):
    alloc = (r["probe"] or {}).get("alloc") or {}
    return (
        "%s: %s (exit %s%s), started %s, finished %s, allocated %s of %s MiB on device %s, "
        "held %s s%s"
        % (
            r["name"],
            r["phase"],
            r["exit_code"],
            ", " + r["reason"] if r["reason"] else "",
            r["started_at"],
            r["finished_at"],
            alloc.get("allocated_mib"),
            alloc.get("requested_mib"),
            alloc.get("on_device"),
            alloc.get("held_seconds"),
            ", error: " + alloc.get("error") if alloc.get("error") else "",
        )
    )


def rule_contention(pods, context):
    recs = _by_case(pods, "contention")
    if not recs:
        return _missing("contention", context)
    figures = (context.get("plan") or {}).get("contention") or {}
    devices = {d for r in recs for d in r["devices"]}
    overlapped, seconds = overlap(recs)
    problems = _contention_problems(recs, devices, overlapped, seconds)
    outcome = contention_outcome(recs)
    observed = "%s; %s; device %s, overlap %s s; outcome: %s" % (
        _contention_declared(figures),
        "; ".join(_contention_pod_text(r) for r in recs),
        sorted(devices),
        seconds,
        outcome,
    )
    observations = ["observation: contention: %s" % outcome]
    if not any(((r["probe"] or {}).get("alloc") or {}).get("on_device") for r in recs):
        observations.append(
            "observation: memory contention not observable without a GPU: the figures above are "
            "declared, not measured"
        )
    return (FAILED if problems else PASSED), _with(observed, problems), observations


# ------------------------------------------------------------------ isolation


def _node_mechanisms(nodes):
    mechanisms, details, fake = set(), [], False
    for node in nodes or []:
        labels = (node.get("metadata") or {}).get("labels") or {}
        name = (node.get("metadata") or {}).get("name")
        if labels.get(NODE_LABELS["fake_gpu"]) == "true":
            fake = True
        mig = labels.get(NODE_LABELS["mig_strategy"])
        sharing = labels.get(NODE_LABELS["sharing_strategy"])
        replicas = labels.get(NODE_LABELS["replicas"])
        mechanisms |= node_sharing(labels)
        details.append(
            "node %s: mig.strategy=%s, gpu.sharing-strategy=%s, gpu.replicas=%s, fake.gpu=%s"
            % (
                name,
                mig or "unset",
                sharing or "unset",
                replicas or "unset",
                labels.get(NODE_LABELS["fake_gpu"], "unset"),
            )
        )
    return mechanisms, details, fake


def _enforcement_detail(enforcement):
    """What KAI's configuration says of GPU sharing and HAMi-core, and where it was read."""
    return "KAI: GPU sharing %s, HAMi-core %s" % (
        _setting_text(enforcement.get("gpu_sharing") or {}),
        _setting_text(enforcement.get("hami_core") or {}),
    )


def _fractions_detail(fractions, limited, mps):
    portions = ", ".join(
        "%s GPU_PORTION %s on %s" % (r["name"], r["visible"]["GPU_PORTION"], r["devices"])
        for r in fractions
    )
    return "fraction pods: %s; %s set %s; %s annotated mps" % (
        portions,
        ", ".join(limited) or "none",
        MEMORY_LIMIT_ENV,
        ", ".join(mps) or "none",
    )


def _isolation_result(mechanisms, details, fake):
    """(mechanism, detail) from the mechanisms found: none, one, or "mixed"."""
    detail = "; ".join(details or ["nothing read"])
    if fake:
        detail += (
            "; fake devices: no process runs on a GPU here, so this is what the configuration "
            "would enforce on real GPUs"
        )
    if not mechanisms:
        return "none", ("none: fake devices (%s)" if fake else "none (%s)") % detail
    if len(mechanisms) > 1:
        return "mixed", "%s (%s)" % ("+".join(sorted(mechanisms)), detail)
    mech = next(iter(mechanisms))
    return mech, "%s (%s)" % (mech, detail)


def observed_isolation(nodes, records, plan=None):
    """The isolation the cluster enforces, as (mechanism, detail): from KAI's configuration, the
    fraction pods' env and the nodes' labels. Mechanisms: mig, mps, hami-core (a memory limit
    per fraction), time-slicing (KAI fractions or the device plugin share a device with no
    memory limit), none; "mixed" when several apply."""
    mechanisms, details, fake = _node_mechanisms(nodes)
    fake = fake or any(
        (r["probe"] or {}).get("gpu_present") is False and r["devices"] for r in records
    )
    enforcement = (plan or {}).get("enforcement") or {}
    fractions = [r for r in records if r.get("gpu_fraction") and r["probe"] is not None]
    limited = [r["name"] for r in fractions if MEMORY_LIMIT_ENV in (r.get("spec_env") or {})]
    mps = [r["name"] for r in fractions if (r.get("annotations") or {}).get("mps") == "true"]
    if enforcement:
        details.append(_enforcement_detail(enforcement))
    if fractions:
        details.append(_fractions_detail(fractions, limited, mps))
    mechanisms |= _fraction_mechanisms(enforcement, limited, mps)
    return _isolation_result(mechanisms, details, fake)


def _fraction_mechanisms(enforcement, limited, mps):
    """What isolates KAI's fractions: MPS where they ask for it, HAMi-core where it is on or a
    fraction has a memory limit, else time slicing where GPU sharing is on."""
    found = {"mps"} if mps else set()
    if (enforcement.get("hami_core") or {}).get("enabled") or limited:
        found.add("hami-core")
    elif (enforcement.get("gpu_sharing") or {}).get("enabled") and not mps:
        found.add("time-slicing")
    return found


def rule_isolation(pods, context):
    if context.get("skipped", {}).get("isolation"):
        return _not_run(context["skipped"]["isolation"])
    expected = context.get("expected_isolation", "none")
    mechanism, detail = observed_isolation(context.get("nodes") or [], pods, context.get("plan"))
    observations = ["observation: isolation enforced: %s" % detail]
    if mechanism == "time-slicing":
        observations.append(
            "observation: time slicing does not isolate memory: workloads sharing a device can "
            "take each other's memory"
        )
    problems = []
    if mechanism != expected:
        problems.append("asked to enforce %s, the deployment enforces %s" % (expected, mechanism))
    observed = "assertion: kai_gpu_access_expected_isolation=%s; enforced (observed): %s" % (
        expected,
        mechanism,
    )
    return (FAILED if problems else PASSED), _with(observed, problems), observations


def _with(observed, problems):
    return observed if not problems else observed + ". FAILED: " + "; ".join(problems)


RULES = {
    "whole_gpu": rule_whole_gpu,
    "concurrent": rule_concurrent,
    "fractional": rule_fractional,
    "fractional_sharing": rule_fractional_sharing,
    "policy_queue": rule_policy_queue,
    "policy_visible_devices": rule_policy_visible_devices,
    "policy_whole_limit": rule_policy_whole_limit,
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
        outsiders = []
        if case_id in OUTSIDERS and verdict != NOT_RUN:
            count_self = case_id != "policy_visible_devices"
            outsiders = [
                {"pod": r["name"], "devices": outsider_devices(r, count_self)}
                for r in _by_case(pods, case_id)
                if outsider_devices(r, count_self)
            ]
        results.append(
            {
                "id": case_id,
                "title": case.get("title", case_id),
                "expectation": case["expectation"],
                "observed": observed,
                "observations": observations,
                "verdict": verdict,
                "outsiders_with_devices": outsiders,
            }
        )
    return results


# ---------------------------------------------------------------------------------- cost


def _seconds(start, end):
    a, b = parse_time(start), parse_time(end)
    if a is None or b is None:
        return None
    return round((b - a).total_seconds(), 3)


def queue_age(pods, window_end, outsiders):
    """How long submitted work waited (submission to its container's start; never started: to
    the window's end), for the eligible workloads; the outsiders are held back by the policy on
    purpose and are counted apart."""
    waits, never = [], []
    for rec in pods:
        if rec["case"] in outsiders or not (rec["gpu_request"] or rec["gpu_fraction"]):
            continue
        if rec["started_at"]:
            waited = _seconds(rec["submitted_at"], rec["started_at"])
        else:
            waited = _seconds(rec["submitted_at"], window_end)
            never.append(rec["name"])
        if waited is not None:
            waits.append(max(waited, 0.0))
    held = sorted(r["name"] for r in pods if r["case"] in outsiders and not r["started_at"])
    if not waits:
        return {
            "count": 0,
            "p50_s": None,
            "max_s": None,
            "never_started": never,
            "held_by_policy": held,
        }
    waits.sort()
    return {
        "count": len(waits),
        "p50_s": waits[len(waits) // 2],
        "max_s": waits[-1],
        "never_started": never,
        "held_by_policy": held,
    }


def reservation_held(pods, window_end):
    """GPU-seconds held by reservation pods of failed binds: a reservation pod holds a whole
    GPU from its creation until it was last seen (or the window's end) while the bind fails."""
    held, names = Decimal(0), []
    for rec in pods:
        kai = rec.get("kai") or {}
        reservation = kai.get("reservation") or {}
        if not kai.get("bind_failed") or not reservation.get("created_at"):
            continue
        until = kai.get("last_seen_at") or window_end
        seconds = _seconds(reservation["created_at"], until)
        if seconds and seconds > 0:
            held += Decimal(str(seconds))
            names.append(reservation.get("name"))
    return held, names


def _gpu_pool(pods, nodes):
    """The GPUs of the run: the devices probes were given, then each node's unused ones."""
    alloc_by_node = {}
    for node in nodes:
        name = (node.get("metadata") or {}).get("name")
        try:
            alloc_by_node[name] = int(
                ((node.get("status") or {}).get("allocatable") or {}).get("nvidia.com/gpu", 0)
            )
        except (TypeError, ValueError):
            alloc_by_node[name] = 0
    pool = []
    for rec in pods:
        for dev in allocated_devices(rec):
            gid = "%s/%s" % (rec["node"], dev)
            if rec["node"] and gid not in pool:
                pool.append(gid)
    for node, count in sorted(alloc_by_node.items()):
        seen = [g for g in pool if g.startswith(str(node) + "/")]
        pool += ["%s/unused-%d" % (node, i) for i in range(max(count - len(seen), 0))]
    return pool


def _pod_workload(rec, pool, outsiders):
    """A probe that held devices, or eligible work that never started, as a cost workload
    (None for the others)."""
    kai = rec.get("kai") or {}
    eligible = rec["case"] not in outsiders and (rec["gpu_request"] or rec["gpu_fraction"])
    portion = rec["visible"]["GPU_PORTION"] or rec["gpu_fraction"] or "1"
    if allocated_devices(rec) and rec["started_at"] and rec["node"]:
        # Work whose bind failed first waited in the failure window: that wait is loss.
        return cost.Workload(
            name=rec["name"],
            gpus=["%s/%s" % (rec["node"], d) for d in allocated_devices(rec)],
            portion=portion,
            start=rec["started_at"],
            end=rec["finished_at"],
            submitted=rec["submitted_at"] if kai.get("bind_failed") and eligible else None,
        )
    if eligible and not rec["started_at"] and pool and rec["submitted_at"]:
        # eligible work that never started: it would have held its portion of a GPU
        gpus = [_held_gpu(rec, pool)]
        return cost.Workload(
            name=rec["name"], gpus=gpus, portion=portion, submitted=rec["submitted_at"]
        )
    return None


def _held_gpu(rec, pool):
    """The GPU eligible work that never started would have held a portion of: the one its
    reservation pod names, else the pool's first."""
    kai = rec.get("kai") or {}
    reservation = kai.get("reservation") or {}
    device = reservation.get("device")
    node = kai.get("node") or rec["node"] or reservation.get("node")
    gid = "%s/%s" % (node, device)
    return gid if device and gid in pool else pool[0]


def _hours_as_seconds(hours):
    return str(cost.q(hours * cost.SECONDS_PER_HOUR, "0.001"))


def _cost_figures(report, pods, window, pool, completed, outsiders):
    """The report's figures with seconds, queue age and the reservation-held capacity."""
    held_s, held_pods = reservation_held(pods, window[1])
    figures = report.as_dict()
    figures["busy_gpu_seconds"] = _hours_as_seconds(report.busy_gpu_hours)
    figures["available_gpu_seconds"] = _hours_as_seconds(report.available_gpu_hours)
    figures["lost_busy_gpu_seconds"] = _hours_as_seconds(report.lost_busy_gpu_hours)
    figures["reservation_held_gpu_hours"] = str(held_s / cost.SECONDS_PER_HOUR)
    figures["reservation_held_gpu_seconds"] = str(cost.q(held_s, "0.001"))
    figures["reservation_pods_of_failed_binds"] = held_pods
    figures["queue_age"] = queue_age(pods, window[1], outsiders)
    figures["window_start"], figures["window_end"] = window
    figures["gpu_pool"] = pool
    figures["completed_valid_jobs"] = completed
    figures["computed"] = True
    return figures


def _queue_age_text(ages):
    return (
        "Queue age (submission to start, counted apart from busy time): %s over %d eligible "
        "workloads%s%s."
        % (
            "p50 %.3f s, max %.3f s" % (ages["p50_s"], ages["max_s"]) if ages["count"] else "none",
            ages["count"],
            "; never started: " + ", ".join(ages["never_started"]) if ages["never_started"] else "",
            "; held back by the policy on purpose (not queue age, not loss): "
            + ", ".join(ages["held_by_policy"])
            if ages["held_by_policy"]
            else "",
        )
    )


def _cost_text(report, figures, no_gpu):
    """The lines after the cost module's section: window, failure window, held capacity,
    queue age (and the CPU note when no probe saw a GPU)."""
    failure = (
        "Failure window: work that could not start when submitted (a failed bind, or never "
        "started) counts from its submission: %s; busy GPU-seconds lost %s."
        % (", ".join(report.delayed_workloads) or "none", figures["lost_busy_gpu_seconds"])
        if report.delayed_workloads
        else "Failure window: none in this run (every eligible workload started and no bind "
        "failed): the time from submission to start is queue age below, not loss."
    )
    extra = [
        "Window: %s to %s (the run's own window: from the declaration of the expectations to the "
        "report). GPU pool: %s. Busy time is each probe container's lifetime (started to finished, "
        "from its container status) times its portion (1 for a whole GPU, GPU_PORTION for a "
        "fraction) on the devices it was given; exact figures are in gpu_access.json (busy %s "
        "GPU-seconds of %s available)."
        % (
            figures["window_start"],
            figures["window_end"],
            ", ".join(figures["gpu_pool"]),
            figures["busy_gpu_seconds"],
            figures["available_gpu_seconds"],
        ),
        "",
        failure,
        "",
        "GPU capacity held idle by reservation pods of failed binds: %s GPU-seconds (%s; a "
        "reservation pod holds a whole GPU for as long as its bind keeps failing)."
        % (
            figures["reservation_held_gpu_seconds"],
            ", ".join(figures["reservation_pods_of_failed_binds"]) or "no failed bind",
        ),
        "",
        _queue_age_text(figures["queue_age"]),
        "",
    ]
    if no_gpu:
        extra += [
            "These GPU-hours are allocations of devices with %s: the probes computed on the "
            "CPU. Completed valid jobs here are probe runs whose CPU check passed." % NO_GPU,
            "",
        ]
    return "\n".join(extra)


def cost_section(pods, nodes, window_start, window_end, rate, outsiders=OUTSIDERS):
    """cost.compute_report over the run's window for the probe pods that held devices, with
    queue age, the failure window's loss and the capacity held by reservation pods apart."""
    pool = _gpu_pool(pods, nodes)
    workloads = [w for w in (_pod_workload(r, pool, outsiders) for r in pods) if w is not None]
    completed = sum(
        1 for r in pods if allocated_devices(r) and r["case"] not in outsiders and not _completed(r)
    )
    if not pool:
        return {"computed": False, "reason": "no GPU was allocated to a probe in this run"}, None
    report = cost.compute_report(cost.Window(window_start, window_end, pool), workloads, rate)
    figures = _cost_figures(report, pods, (window_start, window_end), pool, completed, outsiders)
    no_gpu = not any((r["probe"] or {}).get("gpu_present") for r in pods)
    markdown = cost.render_markdown(
        report, completed_valid_jobs=completed, title="Utilisation and cost of this run's window"
    )
    return figures, markdown + "\n" + _cost_text(report, figures, no_gpu)


def summarize(results, require_sharing):
    counts = {PASSED: 0, FAILED: 0, NOT_RUN: 0}
    for res in results:
        counts[res["verdict"]] += 1
    failed = [r["id"] for r in results if r["verdict"] == FAILED]
    reasons = ["case %s failed" % r["id"] for r in results if r["verdict"] == FAILED]
    outsiders = [
        "%s (%s): %s" % (o["pod"], r["id"], "; ".join(o["devices"]))
        for r in results
        for o in r.get("outsiders_with_devices") or []
    ]
    if outsiders:
        reasons.append("%s: %s" % (OUTSIDER_FAILURE, " | ".join(outsiders)))
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
        "outsiders_with_devices": outsiders,
        "outcome": "failed" if reasons else "passed",
        "reasons": reasons,
    }
