# -*- coding: utf-8 -*-
# Copyright: kaiops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the probe pods say, as records: pure functions over the pods and logs the role read.

The role reads the probe pods, their logs and their nodes with kubernetes.core (the reads of
this feature); ``pod_record`` turns one pod and its log into what the rules and the report need.
Times come from the API and from the probe's own JSON, never from the polling that waited.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
from datetime import datetime, timezone

CASE_LABEL = "kaiops.dev/gpu-access-case"
# NVIDIA container runtime values that give a container no GPU device.
NO_DEVICE_VALUES = (None, "", "void", "none")


def parse_time(value):
    """An aware datetime from an RFC 3339 string, or None."""
    if not value:
        return None
    text = str(value).strip()
    if text.endswith("Z"):
        text = text[:-1] + "+00:00"
    try:
        parsed = datetime.fromisoformat(text)
    except ValueError:
        return None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=timezone.utc)


def parse_probe_log(text):
    """The probe's JSON object (schema kaiops.gpuprobe/v1): the last JSON line of the log."""
    for line in reversed((text or "").splitlines()):
        line = line.strip()
        if not line.startswith("{"):
            continue
        try:
            data = json.loads(line)
        except ValueError:
            continue
        if isinstance(data, dict) and data.get("schema") == "kaiops.gpuprobe/v1":
            return data
    return None


def device_ids(value):
    """Device IDs in an NVIDIA_VISIBLE_DEVICES value; [] for unset, empty, void or none."""
    if value in NO_DEVICE_VALUES or str(value).strip().lower() in ("void", "none"):
        return []
    return [part.strip() for part in str(value).split(",") if part.strip()]


def _condition_time(pod, kind):
    for cond in (pod.get("status") or {}).get("conditions") or []:
        if cond.get("type") == kind and cond.get("status") == "True":
            return cond.get("lastTransitionTime")
    return None


def pod_record(pod, log_text):
    """What the report needs of one probe pod: identity, timeline, exit, probe output.

    Times come from the API (creationTimestamp, PodScheduled, the container's terminated
    state) and from the probe's own JSON; never from the polling that waited for them.
    """
    meta = pod.get("metadata") or {}
    spec = pod.get("spec") or {}
    status = pod.get("status") or {}
    statuses = status.get("containerStatuses") or []
    state = (statuses[0].get("state") or {}) if statuses else {}
    term = state.get("terminated") or {}
    container = (spec.get("containers") or [{}])[0]
    limits = (container.get("resources") or {}).get("limits") or {}
    annotations = meta.get("annotations") or {}
    probe = parse_probe_log(log_text)
    visible = (probe or {}).get("visible") or {}
    return {
        "name": meta.get("name"),
        "namespace": meta.get("namespace"),
        "case": (meta.get("labels") or {}).get(CASE_LABEL),
        "node": spec.get("nodeName"),
        "scheduler": spec.get("schedulerName", "default-scheduler"),
        "gpu_request": limits.get("nvidia.com/gpu"),
        "gpu_fraction": annotations.get("gpu-fraction"),
        "phase": status.get("phase"),
        "reason": term.get("reason") or status.get("reason"),
        "exit_code": term.get("exitCode"),
        "submitted_at": meta.get("creationTimestamp"),
        "scheduled_at": _condition_time(pod, "PodScheduled"),
        "started_at": term.get("startedAt") or (state.get("running") or {}).get("startedAt"),
        "finished_at": term.get("finishedAt"),
        "probe": None
        if probe is None
        else {
            "started_at": probe.get("started_at"),
            "finished_at": probe.get("finished_at"),
            "gpu_present": probe.get("gpu_present"),
            "mode": probe.get("mode"),
            "note": probe.get("note"),
            "gpu_detail": probe.get("gpu_detail"),
            "devices": probe.get("devices") or [],
            "check_passed": (probe.get("check") or {}).get("passed"),
            "computed_on": (probe.get("check") or {}).get("computed_on"),
            "alloc": probe.get("alloc") or {},
            "exit_code": probe.get("exit_code"),
            "error": probe.get("error"),
        },
        "visible": {
            "NVIDIA_VISIBLE_DEVICES": visible.get("NVIDIA_VISIBLE_DEVICES"),
            "GPU_PORTION": visible.get("GPU_PORTION"),
            "configmap": visible.get("configmap"),
        },
        "devices": device_ids(visible.get("NVIDIA_VISIBLE_DEVICES")),
    }
