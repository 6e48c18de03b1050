# Copyright: kaiops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The reproduce matrix as data: each case's workloads, and what it expects of a build.

Shared: reproduce runs the cases; the rollout's verification submits the same fraction pod
(``pod_manifest``) as its probes; the request check of every playbook knows the case names.

A build's expectation comes from the release table (meta/kai_releases.yml): a release
whose ConfigMap-write behaviour is `exposed` is expected to fail the nil-data cases with
the nil-map panic, every other release to bind them. Expectations are declared (and
written to the evidence) before a case runs; outcomes are checked against them.
"""

NIL_MAP = "assignment to entry in nil map"
CAPABILITY_KEYS = ("NVIDIA_VISIBLE_DEVICES", "RUNAI_NUM_OF_GPUS", "GPU_PORTION")
STALE = dict((k, "stale") for k in CAPABILITY_KEYS)

# Fixture ConfigMap contents: None = no ConfigMap; "omitted" / "empty" = a pod-owned
# ConfigMap with no data, written without `data` or with `data: {}`.
NO_CONFIGMAP = None

# Each workload: name, the ConfigMap planted before the gate lifts, the pod's shape.
# layout: "single" (one container), "second" (fraction container at index 1, named by the
# gpu-fraction-container-name annotation), "init" (an init container named by it).
CASES = {
    "nil_data": {
        "title": "reported edge: an existing pod-owned capabilities ConfigMap with nil data",
        "workloads": [
            {"name": "edge-omitted", "configmap": "omitted", "layout": "single"},
            {"name": "edge-empty", "configmap": "empty", "layout": "single"},
        ],
        "edge": True,
    },
    "normal_update": {
        "title": "normal update: an existing ConfigMap with stale values and an unrelated key",
        "workloads": [{"name": "update", "configmap": "stale", "layout": "single"}],
        "edge": False,
    },
    "creation": {
        "title": "creation path: no ConfigMap; the probe runs to completion",
        "workloads": [
            {"name": "create", "configmap": NO_CONFIGMAP, "layout": "single", "probe": True}
        ],
        "edge": False,
    },
    "repeat": {
        "title": "repeat: a second pod joins the first one's GPU group; then the case again",
        "workloads": [
            {"name": "first", "configmap": NO_CONFIGMAP, "layout": "single"},
            {"name": "second", "configmap": NO_CONFIGMAP, "layout": "single", "after": "first"},
        ],
        "edge": False,
        "rerun": True,
    },
    "variants": {
        "title": "variants: the nil-data edge on a container at index 1 and on an init container",
        "workloads": [
            {"name": "edge-second", "configmap": "omitted", "layout": "second"},
            {"name": "edge-init", "configmap": "omitted", "layout": "init"},
        ],
        "edge": True,
    },
    "recovery": {
        "title": "recovery: work left Pending by the edge on the pre-patch build, then the fix",
        "workloads": [{"name": "stuck", "configmap": "omitted", "layout": "single"}],
        "edge": True,
        "two_phase": True,
    },
    "concurrency": {
        "title": "concurrency: simultaneous fraction submissions, failures classified by cause",
        "workloads": [],  # made at run time: `concurrency` pods, no fixture
        "edge": False,
    },
}

MINIMAL = ("nil_data", "normal_update", "creation", "repeat", "variants")
DEFAULT_CASES = MINIMAL + ("recovery", "concurrency")


def expectation(case, exposed):
    """What a build must show in a case: 'reproduces' (the nil-map failure) or 'binds'."""
    return "reproduces" if CASES[case]["edge"] and exposed else "binds"


def declared(case, build):
    """The declaration written before a case runs, in words a change board reads."""
    expect = expectation(case, build["exposed"])
    if expect == "reproduces":
        what = (
            "every fixture pod stays Pending with no node; a BindRequest is Failed with a "
            "reason containing '%s', again on a retry; the binder is not restarted" % NIL_MAP
        )
    elif case == "recovery":
        what = (
            "the work the pre-patch build left Pending binds on the patched build within the "
            "window, with no manual step"
        )
    elif case == "concurrency":
        what = "every submission binds; each failure is classified by cause"
    else:
        what = (
            "every pod gets a node; the capabilities ConfigMap holds the three keys; "
            "the binder is not restarted"
        )
        if case == "normal_update":
            what += "; the unrelated key is kept"
        if case == "creation":
            what += "; the ConfigMap is owned by the pod; the probe completes"
        if case == "repeat":
            what += (
                "; both pods share one GPU group and one reservation pod; "
                "the rerun leaves no stale reservation"
            )
    return {
        "case": case,
        "build": build["version"],
        "expect": expect,
        "title": CASES[case]["title"],
        "assertions": what,
    }


def configmap_name(prefix, layout):
    """The capabilities ConfigMap KAI uses for the fraction container of a layout."""
    return {"single": prefix + "-0", "second": prefix + "-1", "init": prefix + "-i0"}[layout]


def pod_manifest(
    name, namespace, layout, placement, image, fraction="0.5", gated=True, probe=False, labels=None
):
    """A fraction pod for KAI, held by a scheduling gate until its fixture is planted."""
    main = {
        "name": "main",
        "image": image,
        "imagePullPolicy": "IfNotPresent",
        "resources": {"requests": {"cpu": "10m", "memory": "16Mi"}},
    }
    if probe:
        main["command"] = ["/usr/local/bin/gpuprobe"]
    else:
        main["command"] = ["sleep", "3600"]
    annotations = {"gpu-fraction": fraction}
    spec = {
        "schedulerName": "kai-scheduler",
        "restartPolicy": "Never",
        "terminationGracePeriodSeconds": 0,
        "containers": [main],
    }
    if layout == "second":
        sidecar = dict(main, name="sidecar", command=["sleep", "3600"])
        spec["containers"] = [sidecar, dict(main, name="trainer")]
        annotations["gpu-fraction-container-name"] = "trainer"
    elif layout == "init":
        spec["initContainers"] = [dict(main, name="warmup", command=["true"])]
        annotations["gpu-fraction-container-name"] = "warmup"
    spec.update(placement.get("spec") or {})
    if gated:
        spec["schedulingGates"] = [{"name": "kaiops.dev/reproduce-fixture"}]
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "labels": dict(labels or {}),
            "annotations": annotations,
        },
        "spec": spec,
    }


def configmap_manifest(name, namespace, pod, content):
    """The fixture capabilities ConfigMap, owned by exactly the pod (KAI's owner set)."""
    meta = pod["metadata"]
    cm = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "labels": {"kaiops.dev/fixture": "reproduce"},
            "ownerReferences": [
                {"apiVersion": "v1", "kind": "Pod", "name": meta["name"], "uid": meta["uid"]}
            ],
        },
    }
    if content == "empty":
        cm["data"] = {}
    elif content == "stale":
        cm["data"] = dict(STALE, **{"keep-me": "1"})
    return cm
