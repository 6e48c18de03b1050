#!/usr/bin/env python3
"""Benchmark of the Pending classifier (plugins/module_utils/scan/pending.py): prints figures,
asserts nothing.

Builds a synthetic snapshot of N Pending pods that KAI schedules (default 1,000), spread over
every cause in turn, with their PodGroups, queues, BindRequests, reservation pods, ConfigMaps,
events, 64 eight-GPU nodes and a healthy KAI, plus as many bound pods (which the classifier must
skip). Then times ``classify`` (best and median of --repeat runs) and measures its peak memory
with tracemalloc (one run, apart from the timing, since tracing slows it down).

    python tools/diagnose_bench.py [--pods N] [--repeat R]

Run from the repository root with the venv's Python (the collection resolves through
collections/ansible_collections).
"""

import argparse
import datetime
import os
import statistics
import sys
import time
import tracemalloc

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "collections"))

from ansible_collections.kaiops.runbooks.plugins.module_utils.scan import pending  # noqa: E402

NOW = datetime.datetime(2026, 12, 1, 12, 0, tzinfo=datetime.timezone.utc)
KAI = "kai-scheduler"
RES = "kai-resource-reservation"


def stamp(seconds_ago):
    return (NOW - datetime.timedelta(seconds=seconds_ago)).strftime("%Y-%m-%dT%H:%M:%SZ")


def pod(ns, name, annotations=None, labels=None, gates=None, gpus=0, node=None, phase="Pending"):
    spec = {"schedulerName": KAI, "containers": [{"name": "main", "image": "busybox"}]}
    if gpus:
        spec["containers"][0]["resources"] = {"limits": {"nvidia.com/gpu": str(gpus)}}
    if gates:
        spec["schedulingGates"] = [{"name": g} for g in gates]
    if node:
        spec["nodeName"] = node
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": ns,
            "uid": "uid-%s-%s" % (ns, name),
            "creationTimestamp": stamp(60 + len(name) * 7),
            "annotations": dict(annotations or {}),
            "labels": dict(labels or {}),
        },
        "spec": spec,
        "status": {"phase": phase},
    }


def pod_group(ns, name, queue="default-queue", min_member=1, reason=None, message=None):
    obj = {
        "apiVersion": "scheduling.run.ai/v2alpha2",
        "kind": "PodGroup",
        "metadata": {"name": name, "namespace": ns},
        "spec": {"minMember": min_member, "queue": queue, "topologyConstraint": {}},
    }
    if reason:
        obj["status"] = {
            "schedulingConditions": [
                {
                    "type": "UnschedulableOnNodePool",
                    "reason": "Unschedulable",
                    "message": "%s: %s." % (reason, message),
                    "reasons": [{"reason": reason, "message": message}],
                }
            ]
        }
    return obj


def bind_request(ns, name, node, group, phase=None, reason=None):
    obj = {
        "apiVersion": "scheduling.run.ai/v1alpha2",
        "kind": "BindRequest",
        "metadata": {"name": name, "namespace": ns},
        "spec": {"podName": name, "selectedNode": node, "selectedGPUGroups": [group]},
    }
    if phase:
        obj["status"] = {"phase": phase, "reason": reason}
    return obj


def reservation(name, node, group, phase="Running", reason=None):
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": RES,
            "uid": "uid-" + name,
            "labels": {"app": "kai-resource-reservation", "runai-gpu-group": group},
        },
        "spec": {"nodeName": node},
        "status": {"phase": phase, "reason": reason},
    }


def plant(snap, i, cause):
    """One Pending pod (sometimes two objects more) whose planted cause is ``cause``."""
    ns, name = "team-%d" % (i % 50), "p-%d" % i
    pg = "pg-%s" % name
    frac = {"gpu-fraction": "0.5", "runai/shared-gpu-configmap": name + "-abcdefg-shared-gpu"}
    ann = dict(frac, **{"pod-group-name": pg})
    node, group = "node-%d" % (i % 64), "g-%d" % i
    if cause == "scheduling_gated":
        snap["pods"].append(pod(ns, name, ann, gates=["hold"]))
    elif cause == "not_seen_by_kai":
        snap["pods"].append(pod(ns, name, frac))
        return
    elif cause == "gpu_sharing_rejected":
        snap["pods"].append(pod(ns, name, {"gpu-fraction": "0.5", "pod-group-name": pg}))
    else:
        snap["pods"].append(pod(ns, name, ann, gpus=16 if cause == "no_gpu_fits" else 0))
    reasons = {
        "queue_over_limit": ("OverLimit", "team quota has reached the allowable limit of GPUs"),
        "queue_missing": ("QueueDoesNotExist", "Queue 'nope' does not exist"),
    }
    reason, message = reasons.get(cause, (None, None))
    snap["podgroups"].append(
        pod_group(
            ns,
            pg,
            queue="nope" if cause == "queue_missing" else "default-queue",
            min_member=3 if cause == "gang_waiting" else 1,
            reason=reason,
            message=message,
        )
    )
    failures = {
        "bind_nil_map": "Internal Error: assignment to entry in nil map",
        "bind_failed_other": 'ConfigMap "x" not found',
    }
    if cause in failures:
        snap["bindrequests"].append(bind_request(ns, name, node, group, "Failed", failures[cause]))
    elif cause == "reservation_pod_failing":
        snap["bindrequests"].append(bind_request(ns, name, node, group))
        snap["reservation_pods"].append(
            reservation("gpu-reservation-%d" % i, node, group, "Failed", "UnexpectedAdmissionError")
        )
    elif cause == "duplicate_reservation":
        snap["bindrequests"].append(bind_request(ns, name, node, group))
        for suffix in ("a", "b"):
            snap["reservation_pods"].append(
                reservation("gpu-reservation-%d-%s" % (i, suffix), node, "old-" + group)
            )


def snapshot(n):
    snap = {key: [] for key in ("pods", "podgroups", "bindrequests", "reservation_pods", "events")}
    snap["queues"] = [
        {"metadata": {"name": q}, "spec": {"resources": {"gpu": {"limit": -1}}}}
        for q in ("default-parent-queue", "default-queue")
    ]
    snap["nodes"] = [
        {"metadata": {"name": "node-%d" % i}, "status": {"allocatable": {"nvidia.com/gpu": "8"}}}
        for i in range(64)
    ]
    snap["configmaps"] = []
    snap["components"] = {
        "deployments": [
            {"metadata": {"name": d, "namespace": KAI}, "status": {"readyReplicas": 1}}
            for d in ("admission", "binder", "kai-scheduler-default", "pod-grouper")
        ],
        "pods": [],
        "logs": {},
    }
    snap["sharing"] = {"enabled": True}
    causes = [c["id"] for c in pending.CAUSES if c["id"] != "kai_component_down"] + ["unknown"]
    snap["planted"] = {}  # namespace/name -> the cause planted (read by main, not by classify)
    for i in range(n):
        plant(snap, i, causes[i % len(causes)])
        snap["planted"]["team-%d/p-%d" % (i % 50, i)] = causes[i % len(causes)]
        snap["pods"].append(pod("team-%d" % (i % 50), "bound-%d" % i, node="node-%d" % (i % 64)))
    return snap


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pods", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args(argv)
    snap = snapshot(args.pods)
    times = []
    for _ in range(args.repeat):
        started = time.perf_counter()
        found = pending.classify(snap, NOW)
        times.append(time.perf_counter() - started)
    tracemalloc.start()
    pending.classify(snap, NOW)
    _current, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    print(
        "pending pods classified: %d (of %d pods in the snapshot)"
        % (len(found["pods"]), len(snap["pods"]))
    )
    agree = sum(
        1
        for p in found["pods"]
        if snap["planted"].get("%s/%s" % (p["pod"]["namespace"], p["pod"]["name"])) == p["cause"]
    )
    print("as planted: %d of %d" % (agree, len(snap["planted"])))
    print("by cause: %s" % ", ".join("%s %d" % (r["cause"], r["count"]) for r in found["by_cause"]))
    print(
        "classify: best %.1f ms, median %.1f ms over %d runs (%.1f us per pod)"
        % (
            1000 * min(times),
            1000 * statistics.median(times),
            len(times),
            1e6 * statistics.median(times) / max(1, len(found["pods"])),
        )
    )
    print("peak memory during classify (tracemalloc): %.2f MiB" % (peak / 1048576.0))
    print("python %s" % sys.version.split()[0])


if __name__ == "__main__":
    main()
