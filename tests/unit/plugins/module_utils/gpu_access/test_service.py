"""module_utils/gpu_access (records, service, report): reading probe pods and what KAI made for
them, the case rules, the outsiders, the isolation reading, the summary, the cost section and
the report. Pods, probe lines and KAI's objects are built from ones captured on the lab (fake
GPUs, the KAI stand-in, 2026-12-01); no cluster."""

import copy
import json
from decimal import Decimal

import jinja2
import pytest

from ansible_collections.kaiops.runbooks.plugins.module_utils.errors import KaiopsError
from ansible_collections.kaiops.runbooks.plugins.module_utils.gpu_access import records
from ansible_collections.kaiops.runbooks.plugins.module_utils.gpu_access import report as ga_report
from ansible_collections.kaiops.runbooks.plugins.module_utils.gpu_access import service as ga

# One line printed by kaiops.dev/gpuprobe:0.1.0 in a whole-GPU pod on the lab's real node.
LAB_PROBE_LINE = '{"schema":"kaiops.gpuprobe/v1","probe_version":"0.1.0","build":{"variant":"nocuda","go":"go1.26.8","arch":"amd64"},"started_at":"2026-11-30T07:50:59.951777916Z","finished_at":"2026-11-30T07:50:59.954596877Z","host":{"hostname":"whole-gpu","pod_name":"whole-gpu","pod_namespace":"kaiops-gpu-access","node_name":"kaiops-node"},"visible":{"NVIDIA_VISIBLE_DEVICES":"GPU-22957e35-0849-dd1c-3720-1f6121f7b48b","GPU_PORTION":null,"RUNAI_NUM_OF_GPUS":null,"configmap":"unknown"},"gpu_present":false,"mode":"cpu-reference","note":"no GPU present","gpu_detail":"built without CUDA support (no \'cuda\' build tag): the GPU is never probed","driver":null,"devices":[],"check":{"operation":"matmul_f32","size":64,"elements":4096,"mismatches":0,"max_abs_error":2.724310164126109e-7,"worst_index":13,"tolerance_rule":"|c-ref| \\u003c= 2*gamma(n)*sum_k|a_ik*b_kj| + 1e-6, gamma(n)=n*u/(1-n*u), u=2^-24","checksum":74.42718091613925,"passed":true,"elapsed_ms":0.467,"computed_on":"cpu"},"alloc":{"requested_mib":0,"allocated_mib":0,"satisfied":true,"on_device":false,"held_seconds":0,"hold_requested_seconds":0,"hold_interrupted":false,"error":""},"exit_code":0,"error":""}'  # noqa: E501

DEV_A = "GPU-22957e35-0849-dd1c-3720-1f6121f7b48b"
DEV_B = "GPU-5e946423-63c3-1593-819c-3e4855bd5ef8"


T0, T1 = "2026-11-30T07:53:58.9Z", "2026-11-30T07:54:06.9Z"


def probe_line(name, visible_devices=DEV_A, start=T0, end=T1, **over):
    data = json.loads(LAB_PROBE_LINE)
    data["host"]["pod_name"] = name
    data["visible"]["NVIDIA_VISIBLE_DEVICES"] = visible_devices
    data["started_at"], data["finished_at"] = start, end
    for key, value in over.items():
        if isinstance(value, dict) and isinstance(data.get(key), dict):
            data[key].update(value)
        else:
            data[key] = value
    return "gpuprobe: starting\n" + json.dumps(data) + "\n"


def make_pod(name, case, gpu="1", phase="Succeeded", exit_code=0, node="kaiops-node",
             submitted="2026-11-30T07:53:58Z", started="2026-11-30T07:53:58Z",
             finished="2026-11-30T07:54:06Z", fraction=None, env=None, scheduler=None,
             labels=None, annotations=None):  # fmt: skip
    limits = {"memory": "256Mi"}
    if gpu:
        limits["nvidia.com/gpu"] = gpu
    pod = {
        "metadata": {
            "name": name,
            "namespace": "kaiops-gpu-access",
            "creationTimestamp": submitted,
            "labels": dict({"kaiops.dev/gpu-access-case": case}, **(labels or {})),
            "annotations": dict(
                {"gpu-fraction": fraction} if fraction else {}, **(annotations or {})
            ),
        },
        "spec": {
            "nodeName": node,
            "containers": [
                {"name": "probe", "resources": {"limits": limits}, "env": list(env or [])}
            ],
        },
        "status": {
            "phase": phase,
            "conditions": [
                {"type": "PodScheduled", "status": "True", "lastTransitionTime": submitted}
            ],
            "containerStatuses": [
                {
                    "name": "probe",
                    "state": {
                        "terminated": {
                            "exitCode": exit_code,
                            "reason": "Completed" if exit_code == 0 else "Error",
                            "startedAt": started,
                            "finishedAt": finished,
                        }
                    },
                }
            ],
        },
    }
    if scheduler:
        pod["spec"]["schedulerName"] = scheduler
    if phase == "Pending":
        pod["status"]["containerStatuses"] = []
        pod["status"]["conditions"] = []
        if node is None:
            del pod["spec"]["nodeName"]
    return pod


def rec(name, case, log=None, **pod_kw):
    return records.pod_record(
        make_pod(name, case, **pod_kw), probe_line(name) if log is None else log
    )


def lab_node(**labels):
    base = {
        "nvidia.com/mig.strategy": "none",
        "nvidia.com/gpu.product": "Fake-GPU",
        "run.ai/fake.gpu": "true",
    }
    base.update(labels)
    base = {k: v for k, v in base.items() if v is not None}
    return {
        "metadata": {"name": "kaiops-node", "labels": base},
        "status": {"allocatable": {"nvidia.com/gpu": "2"}},
    }


CONTEXT = {"skipped": {}, "nodes": [lab_node()], "expected_isolation": "none", "fraction": "0.5"}


# ------------------------------------------------------------------------------ reading


def test_parse_probe_log_takes_the_last_probe_json_line():
    text = probe_line("a", visible_devices=DEV_B) + 'not json\n{"other": 1}\n'
    assert records.parse_probe_log(text)["visible"]["NVIDIA_VISIBLE_DEVICES"] == DEV_B


@pytest.mark.parametrize("text", [None, "", "panic: boom\n", '{"schema": "else"}\n', "{broken\n"])
def test_parse_probe_log_returns_none_without_a_probe_line(text):
    assert records.parse_probe_log(text) is None


@pytest.mark.parametrize(
    ("value", "ids"),
    [
        (None, []),
        ("", []),
        ("void", []),
        ("none", []),
        ("NONE", []),
        (DEV_A, [DEV_A]),
        (DEV_A + ", " + DEV_B, [DEV_A, DEV_B]),
        ("all", ["all"]),
    ],
)
def test_device_ids_reads_nvidia_visible_devices(value, ids):
    assert records.device_ids(value) == ids


def test_pod_record_takes_times_from_the_api_and_the_probe():
    r = rec("whole-gpu", "whole_gpu", started="2026-11-30T07:53:59Z")
    assert r["case"] == "whole_gpu" and r["node"] == "kaiops-node" and r["gpu_request"] == "1"
    assert r["submitted_at"] == "2026-11-30T07:53:58Z"
    assert r["scheduled_at"] == "2026-11-30T07:53:58Z"
    assert r["started_at"] == "2026-11-30T07:53:59Z"
    assert r["finished_at"] == "2026-11-30T07:54:06Z"
    assert r["probe"]["started_at"] == "2026-11-30T07:53:58.9Z"
    assert r["probe"]["gpu_present"] is False and r["probe"]["check_passed"] is True
    assert r["devices"] == [DEV_A]


def test_pod_record_without_a_log_has_no_probe():
    r = records.pod_record(make_pod("p", "whole_gpu", phase="Pending"), None)
    assert r["probe"] is None and r["devices"] == [] and r["phase"] == "Pending"


# -------------------------------------------------------------------------------- rules


def test_rule_whole_gpu_passes_and_says_no_gpu_present():
    verdict, observed, observations = ga.rule_whole_gpu([rec("whole-gpu", "whole_gpu")], CONTEXT)
    assert verdict == ga.PASSED
    assert DEV_A in observed
    assert observations == [
        "observation: no GPU present (the check ran on the CPU: not GPU access)"
    ]
    assert not any("GPU used" in o for o in observations)


@pytest.mark.parametrize(
    ("pod_kw", "log_kw", "reason"),
    [
        ({}, {"visible_devices": DEV_A + "," + DEV_B}, "saw 2 device IDs"),
        ({}, {"visible_devices": None}, "saw 0 device IDs"),
        ({"phase": "Failed", "exit_code": 1}, {}, "ended Failed"),
        ({}, {"check": {"passed": False}}, "check did not pass"),
    ],
)
def test_rule_whole_gpu_fails_on_wrong_devices_failure_or_bad_check(pod_kw, log_kw, reason):
    r = rec("whole-gpu", "whole_gpu", log=probe_line("whole-gpu", **log_kw), **pod_kw)
    verdict, observed, _unused = ga.rule_whole_gpu([r], CONTEXT)
    assert verdict == ga.FAILED and reason in observed


def test_rule_whole_gpu_on_a_real_gpu_requires_the_driver_to_show_the_allocated_device():
    gpu = {"gpu_present": True, "devices": [{"index": 0, "name": "H200", "uuid": DEV_B}]}
    r = rec("whole-gpu", "whole_gpu", log=probe_line("whole-gpu", **gpu))
    verdict, observed, _unused = ga.rule_whole_gpu([r], CONTEXT)
    assert verdict == ga.FAILED and "the driver shows" in observed
    gpu["devices"][0]["uuid"] = DEV_A
    r = rec("whole-gpu", "whole_gpu", log=probe_line("whole-gpu", **gpu))
    verdict, _unused, observations = ga.rule_whole_gpu([r], CONTEXT)
    assert verdict == ga.PASSED and observations == ["observation: GPU used (H200)"]


def concurrent_pair(dev_b=DEV_B, b_start="2026-11-30T07:53:58.9Z", b_end="2026-11-30T07:54:06.9Z"):
    return [
        rec("concurrent-a", "concurrent"),
        rec("concurrent-b", "concurrent", log=probe_line("concurrent-b", dev_b, b_start, b_end)),
    ]


def test_rule_concurrent_passes_with_distinct_devices_that_overlap():
    verdict, observed, observations = ga.rule_concurrent(concurrent_pair(), CONTEXT)
    assert verdict == ga.PASSED and "overlap 8.0 s" in observed
    assert any("got separate devices" in o for o in observations)


def test_rule_concurrent_fails_when_both_see_one_device():
    verdict, observed, _unused = ga.rule_concurrent(concurrent_pair(dev_b=DEV_A), CONTEXT)
    assert verdict == ga.FAILED and "shared a device" in observed


def test_rule_concurrent_fails_when_the_probes_did_not_overlap():
    pair = concurrent_pair(b_start="2026-11-30T07:54:07Z", b_end="2026-11-30T07:54:15Z")
    verdict, observed, _unused = ga.rule_concurrent(pair, CONTEXT)
    assert verdict == ga.FAILED and "did not overlap" in observed


# ------------------------------------------------------------- KAI's side, as on the lab

NS = "kaiops-gpu-access"
GROUP_F = "6dd157a1-3e75-4add-9b43-c442d21e48fa"
GROUP_S = "b3e84110-aca6-4b58-ae20-ac580e5e6389"
PREFIX_F = "fraction-lkhhrlr-shared-gpu"
RESERVATION_F = "gpu-reservation-78f5db64f916e08a"
TOGETHER = "2026-11-30T07:54:00.100000Z"


def cm_env(cm):
    return [
        {"name": k, "valueFrom": {"configMapKeyRef": {"name": cm, "key": k}}}
        for k in records.SHARING_ENV
    ]


def fraction_pod(name, case, prefix, group, queue="default-queue", env=None, **kw):
    labels = {"kai.scheduler/queue": queue}
    if group:
        labels["runai-gpu-group"] = group
    kw.setdefault("scheduler", "kai-scheduler")
    return make_pod(
        name,
        case,
        gpu=None,
        fraction="0.5",
        env=cm_env(prefix + "-0") if env is None else env,
        labels=labels,
        annotations={"runai/shared-gpu-configmap": prefix, "pod-group-name": "pg-" + name},
        **kw,
    )


def fraction_log(name, prefix, device=DEV_B, portion="0.50", runai=None, **over):
    visible = {
        "NVIDIA_VISIBLE_DEVICES": device,
        "GPU_PORTION": portion,
        "RUNAI_NUM_OF_GPUS": portion if runai is None else runai,
        "configmap": prefix,
    }
    return probe_line(name, device, visible=visible, **over)


def configmap(name, data):
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": NS}}
    if data is not None:
        cm["data"] = data
    return cm


def cm_data(device=DEV_B, portion="0.50"):
    return {"GPU_PORTION": portion, "NVIDIA_VISIBLE_DEVICES": device, "RUNAI_NUM_OF_GPUS": portion}


def reservation_pod(group, device=DEV_B, name=RESERVATION_F, created="2026-11-30T07:53:58Z"):
    annotations = {"run.ai/reserve_for_gpu_index": device} if device else {}
    return {
        "metadata": {
            "name": name,
            "namespace": "kai-resource-reservation",
            "creationTimestamp": created,
            "labels": {"app": "kai-resource-reservation", "runai-gpu-group": group},
            "annotations": annotations,
        },
        "spec": {"nodeName": "kaiops-node"},
        "status": {"phase": "Running"},
    }


def kai_condition(reason, queue, shape="reasons"):
    """A PodGroup scheduling condition as the real KAI writes it (kai-contract.md section 14):
    reason Unschedulable always, the specific reason in reasons[] and the message's prefix.
    ``shape`` "message" leaves reasons[] out; "bare" also the prefix."""
    text = {
        "QueueDoesNotExist": "Queue '%s' does not exist" % queue,
        "OverLimit": "%s quota has reached the allowable limit of GPUs. Limit is 0 GPUs, "
        "currently 0 GPUs allocated and workload requested 0.5 GPUs" % queue,
    }[reason]
    condition = {
        "type": "UnschedulableOnNodePool",
        "nodePool": "default",
        "reason": "Unschedulable",
        "message": text + "." if shape == "bare" else "%s: %s." % (reason, text),
        "status": "True",
    }
    if shape == "reasons":
        explanation = {"reason": reason, "message": text}
        if reason == "OverLimit":
            explanation["details"] = {
                "queueDetails": {
                    "name": queue,
                    "queueResourceLimits": {"nvidia.com/gpu": "0"},
                    "podGroupRequestedResources": {"nvidia.com/gpu": "500m"},
                }
            }
        condition["reasons"] = [explanation]
    return condition


def pod_group(pod, queue="default-queue", conditions=()):
    return {
        "metadata": {"name": "pg-" + pod, "ownerReferences": [{"kind": "Pod", "name": pod}]},
        "spec": {"queue": queue},
        "status": {"schedulingConditions": list(conditions)},
    }


def bind_request(pod, group, phase="Succeeded", reason=None):
    return {
        "metadata": {"name": pod},
        "spec": {
            "podName": pod,
            "receivedResourceType": "Fraction",
            "receivedGPU": {"count": 1, "portion": "0.50"},
            "selectedGPUGroups": [group],
        },
        "status": {"phase": phase, "reason": reason},
    }


def observe(stage, pods, pgs=(), brs=(), cms=(), reservations=(), together=None, seen=TOGETHER):
    snap = records.case_snapshot(
        {
            "pods": pods,
            "pod_groups": list(pgs),
            "bind_requests": list(brs),
            "configmaps": list(cms),
            "reservation_pods": list(reservations),
        }
    )
    snap.update(
        stage=stage,
        met=True,
        seen_at=seen,
        elapsed_s=1.0,
        polls=1,
        all_running=together is not None,
        all_running_seen_at=together,
    )
    return snap


def with_kai(recs, watches):
    return records.attach(recs, watches)


def fractional_records(data=None, device=DEV_B, reservation_device=DEV_B, log=None, pod=None):
    """The fractional case as the lab ran it: the pod, its probe line, two observations."""
    pod = pod or fraction_pod("fraction", "fractional", PREFIX_F, GROUP_F)
    running = dict(pod, status={"phase": "Running"})
    cms = [
        configmap(PREFIX_F + "-0", cm_data(device) if data is None else data),
        configmap(PREFIX_F + "-0-evar", None),
        configmap("kube-root-ca.crt", {"ca.crt": "-----BEGIN CERTIFICATE-----"}),
    ]
    reservations = [reservation_pod(GROUP_F, reservation_device)] if reservation_device else []
    watches = {
        "fractional": [
            observe(
                "running",
                [running],
                [pod_group("fraction")],
                [bind_request("fraction", GROUP_F)],
                cms,
                reservations + [reservation_pod("other-group", DEV_A, "gpu-reservation-other")],
                together=TOGETHER,
            ),
            observe("ended", [pod], [pod_group("fraction")], [], cms, [], together=TOGETHER),
        ]
    }
    log = fraction_log("fraction", PREFIX_F, device) if log is None else log
    return with_kai([records.pod_record(pod, log)], watches)


KAI_CONTEXT = dict(CONTEXT, kai_scheduler="kai-scheduler")


def test_container_env_reads_values_and_configmap_references():
    env = records.container_env(
        {
            "env": [
                {"name": "A", "value": "1"},
                {"name": "B", "valueFrom": {"configMapKeyRef": {"name": "cm", "key": "B"}}},
                {"name": "C", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
            ]
        }
    )
    assert env == {
        "A": {"value": "1"},
        "B": {"configmap": "cm", "key": "B"},
        "C": {"from": "fieldRef"},
    }


def test_case_snapshot_keeps_only_what_kai_made_for_this_case():
    (rec_,) = fractional_records()
    snap = rec_["kai"]
    assert snap["configmap"] == PREFIX_F + "-0" and snap["configmap_data"] == cm_data()
    assert snap["gpu_group"] == GROUP_F
    assert snap["reservation"] == {
        "name": RESERVATION_F,
        "node": "kaiops-node",
        "device": DEV_B,
        "phase": "Running",
        "created_at": "2026-11-30T07:53:58Z",
        "group": GROUP_F,
    }
    assert (
        snap["pod_group"]["queue"] == "default-queue" and snap["bind_request"]["portion"] == "0.50"
    )
    assert snap["phases"] == ["Running", "Succeeded"] and snap["running_together_at"] == TOGETHER


def test_case_snapshot_leaves_out_other_configmaps_and_reservation_pods():
    pod = fraction_pod("fraction", "fractional", PREFIX_F, GROUP_F)
    snap = observe(
        "running",
        [pod],
        cms=[configmap("kube-root-ca.crt", {"ca.crt": "x"}), configmap(PREFIX_F + "-0", None)],
        reservations=[reservation_pod("other-group")],
    )
    assert snap["configmaps"] == {PREFIX_F + "-0": None}
    assert snap["reservations"] == {}


def test_the_kai_view_takes_the_group_and_reservation_of_the_successful_bindrequest():
    # Real KAI, 2026-12-07: the first attempt in GROUP_F failed, the retry bound the pod in
    # "retry-group", and the pod kept GROUP_F's label.
    pod = fraction_pod("fraction", "fractional", PREFIX_F, GROUP_F)
    first = observe(
        "pending",
        [pod],
        brs=[bind_request("fraction", GROUP_F, "Failed", "failed to find annotation")],
        reservations=[reservation_pod(GROUP_F, DEV_A, "gpu-reservation-first")],
    )
    again = observe(
        "running",
        [dict(pod, status={"phase": "Running"})],
        brs=[bind_request("fraction", "retry-group")],
        reservations=[
            reservation_pod(GROUP_F, DEV_A, "gpu-reservation-first"),
            reservation_pod("retry-group", DEV_B, "gpu-reservation-retry"),
        ],
    )
    view = records.kai_view("fraction", [first, again], {})
    assert view["gpu_group"] == "retry-group" and view["bind_failed"]
    assert (view["reservation"]["group"], view["reservation"]["device"]) == ("retry-group", DEV_B)
    # without a successful BindRequest, the label's group
    assert records.kai_view("fraction", [first], {})["gpu_group"] == GROUP_F


def test_pod_record_reads_the_sharing_environment_and_runai_num_of_gpus():
    (rec_,) = fractional_records()
    assert rec_["visible"]["RUNAI_NUM_OF_GPUS"] == "0.50"
    assert rec_["spec_env"]["GPU_PORTION"] == {"configmap": PREFIX_F + "-0", "key": "GPU_PORTION"}
    assert rec_["scheduler"] == "kai-scheduler" and rec_["gpu_group"] == GROUP_F


def test_rule_fractional_passes_when_container_configmap_and_reservation_agree():
    verdict, observed, observations = ga.rule_fractional(fractional_records(), KAI_CONTEXT)
    assert verdict == ga.PASSED, observed
    assert "ConfigMap %s-0" % PREFIX_F in observed and RESERVATION_F in observed
    assert observations == [
        "observation: fraction: no GPU present (the check ran on the CPU: not GPU access)"
    ]


@pytest.mark.parametrize(
    ("kwargs", "reason"),
    [
        ({"data": cm_data(DEV_A)}, "its container saw NVIDIA_VISIBLE_DEVICES="),
        ({"data": {}}, "has no data"),
        ({"reservation_device": DEV_A}, "its reservation pod %s holds %s" % (RESERVATION_F, DEV_A)),
        ({"reservation_device": None}, "no reservation pod with run.ai/reserve_for_gpu_index"),
        ({"log": fraction_log("fraction", PREFIX_F, portion="0.25")}, "GPU_PORTION '0.25', "),
        ({"log": fraction_log("fraction", PREFIX_F, runai="1")}, "RUNAI_NUM_OF_GPUS '1' differs"),
        ({"log": fraction_log("fraction", PREFIX_F, check={"passed": False})}, "check did not"),
        (
            {"pod": fraction_pod("fraction", "fractional", PREFIX_F, GROUP_F, env=[])},
            "does not take NVIDIA_VISIBLE_DEVICES, RUNAI_NUM_OF_GPUS, GPU_PORTION from one",
        ),
        (
            {"pod": fraction_pod("fraction", "fractional", PREFIX_F, GROUP_F, scheduler="x")},
            "scheduled by x, not kai-scheduler",
        ),
    ],
)  # fmt: skip
def test_rule_fractional_fails_when_what_the_container_saw_disagrees(kwargs, reason):
    verdict, observed, _unused = ga.rule_fractional(fractional_records(**kwargs), KAI_CONTEXT)
    assert verdict == ga.FAILED and reason in observed, observed


def test_rule_fractional_fails_when_the_configmap_was_never_seen():
    recs = fractional_records()
    recs[0]["kai"]["configmap_seen"] = False
    verdict, observed, _unused = ga.rule_fractional(recs, KAI_CONTEXT)
    assert verdict == ga.FAILED and "was not seen while the pod ran" in observed


def test_rule_fractional_reports_every_reason_of_a_pod_not_only_the_first():
    # the pod spec reads one key from elsewhere, and KAI's ConfigMap was never seen: both show
    recs = fractional_records()
    recs[0]["spec_env"]["GPU_PORTION"] = {"configmap": "elsewhere", "key": "GPU_PORTION"}
    recs[0]["kai"]["configmap_seen"] = False
    verdict, observed, _unused = ga.rule_fractional(recs, KAI_CONTEXT)
    assert verdict == ga.FAILED
    assert "does not take NVIDIA_VISIBLE_DEVICES" in observed, observed
    assert "ConfigMap %s-0 was not seen while the pod ran" % PREFIX_F in observed, observed


def sharing_records(groups=(GROUP_S, GROUP_S), devices=(DEV_B, DEV_B), together=TOGETHER,
                    portions=("0.50", "0.50"), b_start="2026-11-30T07:53:58.9Z"):  # fmt: skip
    pods, running, cms, reservations, logs = [], [], [], [], {}
    for i, name in enumerate(("sharing-a", "sharing-b")):
        prefix = name + "-bxzjtpw-shared-gpu"
        pod = fraction_pod(name, "fractional_sharing", prefix, groups[i])
        pods.append(pod)
        running.append(dict(pod, status={"phase": "Running"}))
        cms.append(configmap(prefix + "-0", cm_data(devices[i], portions[i])))
        reservations.append(reservation_pod(groups[i], devices[i], "gpu-reservation-%d" % i))
        start = T0 if i == 0 else b_start
        logs[name] = fraction_log(name, prefix, devices[i], portions[i], started_at=start)
    snaps = [observe("running", running, cms=cms, reservations=reservations, together=together)]
    recs = [records.pod_record(p, logs[p["metadata"]["name"]]) for p in pods]
    return with_kai(recs, {"fractional_sharing": snaps})


def test_rule_fractional_sharing_passes_running_together_on_one_group_and_device():
    verdict, observed, _unused = ga.rule_fractional_sharing(sharing_records(), KAI_CONTEXT)
    assert verdict == ga.PASSED, observed
    assert "Running together at %s (API)" % TOGETHER in observed
    assert "portions 0.50 + 0.50 = 1.00" in observed


def test_rule_fractional_sharing_is_not_run_without_kai():
    ctx = dict(
        CONTEXT, skipped={"fractional_sharing": "KAI Scheduler is not installed on this cluster"}
    )
    verdict, observed, _unused = ga.rule_fractional_sharing([], ctx)
    assert verdict == ga.NOT_RUN
    assert observed == "not run: KAI Scheduler is not installed on this cluster"


@pytest.mark.parametrize(
    ("kwargs", "reason"),
    [
        ({"together": None}, "never seen Running at the same time"),
        ({"groups": (GROUP_S, GROUP_F)}, "not in one GPU group"),
        ({"devices": (DEV_B, DEV_A)}, "did not share one device"),
        ({"portions": ("0.50", "0.75")}, "add up to 1.25, more than one GPU"),
        ({"b_start": "2026-11-30T07:54:07Z"}, "did not overlap in time"),
    ],
)
def test_rule_fractional_sharing_fails_without_true_sharing(kwargs, reason):
    verdict, observed, _unused = ga.rule_fractional_sharing(sharing_records(**kwargs), KAI_CONTEXT)
    assert verdict == ga.FAILED and reason in observed, observed


# ------------------------------------------------------------------------ the outsiders

QUEUE_REASONS = {"no-queue": "QueueDoesNotExist", "zero-queue": "OverLimit"}
QUEUES = {
    "no-queue": "kaiops-gpu-access-no-such-queue",
    "zero-queue": "kaiops-gpu-access-zero-limit",
}


def queue_records(reasons=None, injected=False, shape="reasons"):
    """The two queue outsiders as KAI held them back (or, injected, as KAI ran them)."""
    reasons = QUEUE_REASONS if reasons is None else reasons
    recs, pods, pgs, brs, cms, res = [], [], [], [], [], []
    for name, queue in QUEUES.items():
        prefix = name + "-cnbqp84-shared-gpu"
        if injected:
            pod = fraction_pod(name, "policy_queue", prefix, GROUP_S, queue="default-queue")
            log = fraction_log(name, prefix)
            pgs.append(pod_group(name, "default-queue"))
            brs.append(bind_request(name, GROUP_S))
            cms.append(configmap(prefix + "-0", cm_data()))
            res.append(reservation_pod(GROUP_S))
        else:
            pod = fraction_pod(
                name, "policy_queue", prefix, None, queue=queue, phase="Pending", node=None
            )
            log = None
            why = reasons.get(name)
            pgs.append(pod_group(name, queue, [kai_condition(why, queue, shape)] if why else []))
        pods.append(pod)
        recs.append(records.pod_record(pod, log or ""))
    snap = observe("decided", pods, pgs, brs, cms, res)
    return with_kai(recs, {"policy_queue": [snap]})


QUEUE_CONTEXT = dict(KAI_CONTEXT, expected_reasons=QUEUE_REASONS, outsider_queues=QUEUES)


@pytest.mark.parametrize("shape", ["reasons", "message"])
def test_rule_policy_queue_passes_when_kai_holds_both_back_with_its_reasons(shape):
    verdict, observed, _unused = ga.rule_policy_queue(queue_records(shape=shape), QUEUE_CONTEXT)
    assert verdict == ga.PASSED, observed
    assert "no-queue (queue kaiops-gpu-access-no-such-queue): Pending, node none" in observed
    assert (
        "reasons OverLimit (condition reason Unschedulable: OverLimit: "
        "kaiops-gpu-access-zero-limit quota has reached the allowable limit of GPUs." in observed
    )
    assert "devices obtained: none" in observed


def test_rule_policy_queue_fails_on_the_condition_reason_unschedulable_alone():
    verdict, observed, _unused = ga.rule_policy_queue(queue_records(shape="bare"), QUEUE_CONTEXT)
    assert verdict == ga.FAILED
    assert (
        "zero-queue: its PodGroup carries no specific reason (condition reason Unschedulable), "
        "expected KAI's reason OverLimit" in observed
    )


def test_case_snapshot_keeps_the_condition_as_observed_with_its_specific_reasons():
    queue = QUEUES["zero-queue"]
    condition = kai_condition("OverLimit", queue)
    snap = records.case_snapshot({"pods": [], "pod_groups": []})
    assert snap["pod_groups"] == {}
    pod = fraction_pod("zero-queue", "policy_queue", "p", None, queue=queue, phase="Pending")
    snap = records.case_snapshot(
        {"pods": [pod], "pod_groups": [pod_group("zero-queue", queue, [condition])]}
    )
    (seen,) = snap["pod_groups"]["zero-queue"]["reasons"]
    assert seen == {
        "type": "UnschedulableOnNodePool",
        "reason": "Unschedulable",
        "message": condition["message"],
        "reasons": condition["reasons"],
        "specific_reasons": ["OverLimit"],
    }


U = "Unschedulable"


@pytest.mark.parametrize(
    ("condition", "specific"),
    [
        ({"reason": U, "message": "x: q.", "reasons": [{"reason": "OverLimit"}]}, ["OverLimit"]),
        ({"reason": U, "message": "QueueDoesNotExist: Queue 'x' absent."}, ["QueueDoesNotExist"]),
        ({"reason": U, "message": "Node-Pool 'default': OverLimit: q quota."}, ["OverLimit"]),
        ({"reason": U, "message": "q quota has reached the limit: 0 GPUs."}, []),
        ({"reason": "OverLimit", "message": "q would exceed its GPU limit"}, []),
        ({"reason": U}, []),
    ],
)  # fmt: skip
def test_specific_reasons_come_from_reasons_or_the_message_never_the_condition_reason(
    condition, specific
):
    assert records.specific_reasons(condition) == specific


def test_rule_policy_queue_fails_without_kais_reason():
    recs = queue_records(reasons={"no-queue": "QueueDoesNotExist"})
    verdict, observed, _unused = ga.rule_policy_queue(recs, QUEUE_CONTEXT)
    assert verdict == ga.FAILED
    assert "zero-queue: its PodGroup carries no reason, expected KAI's reason OverLimit" in observed


def test_rule_policy_queue_fails_and_names_the_device_when_an_injected_outsider_gets_one():
    recs = queue_records(injected=True)
    verdict, observed, _unused = ga.rule_policy_queue(recs, QUEUE_CONTEXT)
    assert verdict == ga.FAILED
    assert "no-queue did not stay Pending: Succeeded" in observed
    assert ga.OUTSIDER_FAILURE + ": no-queue (policy_queue): GPU group " + GROUP_S in observed
    assert "reservation pod %s holding %s" % (RESERVATION_F, DEV_B) in observed
    results = ga.evaluate([{"id": "policy_queue", "expectation": "x"}], recs, QUEUE_CONTEXT)
    summary = ga.summarize(results, require_sharing=False)
    assert [o["pod"] for o in results[0]["outsiders_with_devices"]] == ["no-queue", "zero-queue"]
    assert summary["outcome"] == "failed"
    assert summary["reasons"][-1].startswith(ga.OUTSIDER_FAILURE + ": no-queue (policy_queue)")


def enforcement(block):
    return {
        "enforcement": {
            "block_nvidia_visible_devices": {
                "enabled": block,
                "sources": [
                    "kai-config spec.admission.blockNvidiaVisibleDevices=%s" % str(block).lower()
                ],
                "note": None,
            }
        }
    }


def names_devices(log=None):
    pod = make_pod(
        "names-devices",
        "policy_visible_devices",
        gpu=None,
        scheduler="kai-scheduler",
        env=[{"name": "NVIDIA_VISIBLE_DEVICES", "value": "all"}],
    )
    return [records.pod_record(pod, log or probe_line("names-devices", "all"))]


def test_rule_policy_visible_devices_reports_self_named_devices_when_not_blocked():
    ctx = dict(KAI_CONTEXT, plan=enforcement(False))
    verdict, observed, observations = ga.rule_policy_visible_devices(names_devices(), ctx)
    assert verdict == ga.PASSED, observed
    assert observed.startswith("blockNvidiaVisibleDevices not enforced: admitted")
    assert "NVIDIA_VISIBLE_DEVICES='all', which it named itself" in observed
    assert observations[0].startswith(
        "observation: the cluster enforces blockNvidiaVisibleDevices: off (admission admitted"
    )
    assert any("sees devices ['all'] that it named itself" in o for o in observations)
    results = ga.evaluate(
        [{"id": "policy_visible_devices", "expectation": "x"}], names_devices(), ctx
    )
    assert results[0]["outsiders_with_devices"] == []


def test_rule_policy_visible_devices_passes_when_admission_rejects_it_and_block_is_on():
    adm = {"policy_visible_devices": {"rejected": True, "message": "denied the request: no"}}
    ctx = dict(KAI_CONTEXT, plan=enforcement(True), admission=adm)
    verdict, observed, observations = ga.rule_policy_visible_devices([], ctx)
    assert verdict == ga.PASSED and observed.startswith("blockNvidiaVisibleDevices enforced")
    assert "enforces blockNvidiaVisibleDevices: on (admission rejected" in observations[0]


@pytest.mark.parametrize(
    ("block", "require", "log", "reason"),
    [
        (True, False, None, "blockNvidiaVisibleDevices is on but admission let names-devices"),
        (False, True, None, "kai_gpu_access_require_block_visible_devices is true"),
        (
            False,
            False,
            probe_line("names-devices", "all", gpu_present=True, devices=[{"uuid": DEV_A}]),
            ga.OUTSIDER_FAILURE + ": names-devices (policy_visible_devices): the driver showed it",
        ),
    ],
)  # fmt: skip
def test_rule_policy_visible_devices_fails(block, require, log, reason):
    ctx = dict(KAI_CONTEXT, plan=enforcement(block), require_block_visible_devices=require)
    verdict, observed, _unused = ga.rule_policy_visible_devices(names_devices(log), ctx)
    assert verdict == ga.FAILED and reason in observed, observed


WRAPPED_DENIAL = (
    'Failed to create object: {"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure",'
    '"message":"admission webhook \\"admission.kai-scheduler.svc\\" denied the request: cannot '
    'have both GPU fraction request and whole GPU resource request/limit","reason":"Forbidden",'
    '"code":403} '
)


def test_rule_policy_whole_limit_passes_on_kais_message():
    ctx = dict(
        KAI_CONTEXT, admission={"policy_whole_limit": {"rejected": True, "message": WRAPPED_DENIAL}}
    )
    verdict, observed, _unused = ga.rule_policy_whole_limit([], ctx)
    assert verdict == ga.PASSED, observed
    assert observed == (
        'rejected by admission: admission webhook "admission.kai-scheduler.svc" denied the '
        "request: cannot have both GPU fraction request and whole GPU resource request/limit"
    )


def test_rule_policy_whole_limit_fails_on_another_message_or_when_admitted():
    ctx = dict(
        KAI_CONTEXT, admission={"policy_whole_limit": {"rejected": True, "message": "quota"}}
    )
    verdict, observed, _unused = ga.rule_policy_whole_limit([], ctx)
    assert verdict == ga.FAILED and "not with KAI's message" in observed
    admitted = [rec("fraction-and-whole", "policy_whole_limit", fraction="0.5")]
    ctx = dict(KAI_CONTEXT, admission={"policy_whole_limit": {"rejected": False, "message": ""}})
    verdict, observed, _unused = ga.rule_policy_whole_limit(admitted, ctx)
    assert verdict == ga.FAILED
    assert "nvidia.com/gpu 1 on kaiops-node from the device plugin" in observed


@pytest.mark.parametrize("value", [None, "", "void", "none"])
def test_rule_policy_denial_passes_when_the_outsider_gets_no_device(value):
    outsider = rec("outsider", "policy_denial", log=probe_line("outsider", value), gpu=None)
    verdict, observed, _unused = ga.rule_policy_denial([outsider], CONTEXT)
    assert verdict == ga.PASSED and "no GPU request" in observed


def test_rule_policy_denial_fails_when_the_outsider_sees_devices():
    # What the role's self-test injects: the outsider sets NVIDIA_VISIBLE_DEVICES itself.
    log = probe_line("outsider", "GPU-injected-by-test")
    outsider = rec("outsider", "policy_denial", log=log, gpu=None)
    verdict, observed, _unused = ga.rule_policy_denial([outsider], CONTEXT)
    assert verdict == ga.FAILED
    assert "outside the policy but saw devices ['GPU-injected-by-test']" in observed
    results = ga.evaluate([{"id": "policy_denial", "expectation": "x"}], [outsider], CONTEXT)
    assert results[0]["outsiders_with_devices"][0]["pod"] == "outsider"
    assert ga.summarize(results, False)["outsiders_with_devices"] == [
        "outsider (policy_denial): devices ['GPU-injected-by-test'] in "
        "NVIDIA_VISIBLE_DEVICES='GPU-injected-by-test'"
    ]


def test_rule_policy_denial_fails_when_the_driver_shows_the_outsider_a_gpu():
    log = probe_line("outsider", None, gpu_present=True, devices=[{"uuid": DEV_A, "name": "H200"}])
    outsider = rec("outsider", "policy_denial", log=log, gpu=None)
    verdict, observed, _unused = ga.rule_policy_denial([outsider], CONTEXT)
    assert verdict == ga.FAILED and "driver showed it a GPU" in observed


def test_rule_policy_denial_fails_when_access_was_not_observed():
    outsider = rec("outsider", "policy_denial", log="", gpu=None, phase="Failed", exit_code=2)
    verdict, observed, _unused = ga.rule_policy_denial([outsider], CONTEXT)
    assert verdict == ga.FAILED and "access was not observed" in observed


# ---------------------------------------------------------------------------- contention

FIGURES = {
    "contention": {
        "share": "0.6",
        "device_memory_mib": 16384,
        "alloc_mib": 9831,
        "portion_mib": 8192,
        "basis": "0.6 x 16384 MiB (label nvidia.com/gpu.memory of kaiops-node)",
    }
}
CONTENTION_CONTEXT = dict(KAI_CONTEXT, plan=FIGURES)


def contention_pair(allocs=None, ids=(DEV_B, DEV_B), phases=("Succeeded", "Succeeded"), **over):
    allocs = allocs or [{"requested_mib": 9831, "allocated_mib": 0, "on_device": False}] * 2
    out = []
    for i, name in enumerate(("contention-a", "contention-b")):
        log = fraction_log(name, name + "-x-shared-gpu", ids[i], alloc=dict(allocs[i]), **over)
        pod = fraction_pod(name, "contention", name + "-x-shared-gpu", GROUP_S, phase=phases[i])
        out.append(records.pod_record(pod, log))
    return out


def test_rule_contention_on_fake_gpus_records_declared_figures_not_measurements():
    verdict, observed, observations = ga.rule_contention(contention_pair(), CONTENTION_CONTEXT)
    assert verdict == ga.PASSED, observed
    assert (
        "declared: each asks 9831 MiB (0.6 x 16384 MiB (label nvidia.com/gpu.memory of "
        "kaiops-node)), over its portion of 8192 MiB by 1639 MiB; together 19662 MiB, over the "
        "16384 MiB device by 3278 MiB"
    ) in observed
    assert "outcome: not observable without a GPU" in observed
    assert observations[1].startswith(
        "observation: memory contention not observable without a GPU: the figures above are"
    )


GPU_SEEN = {"gpu_present": True, "devices": [{"uuid": DEV_B, "name": "H200"}]}
GOT = {"requested_mib": 9831, "allocated_mib": 9831, "satisfied": True, "on_device": True}
SHORT = {"requested_mib": 9831, "allocated_mib": 6553, "satisfied": False, "on_device": True,
         "error": "cuMemAlloc(9831 MiB): CUDA_ERROR_OUT_OF_MEMORY"}  # fmt: skip


@pytest.mark.parametrize(
    ("allocs", "phases", "outcome"),
    [
        (
            [GOT, GOT],
            ("Succeeded", "Succeeded"),
            "both ran and got all the memory they asked for",
        ),
        (
            [GOT, SHORT],
            ("Succeeded", "Succeeded"),
            "one got less than it asked for (out of memory): contention-b",
        ),
        (
            [GOT, GOT],
            ("Succeeded", "Failed"),
            "both ran and got all the memory they asked for; ended Failed: contention-b",
        ),
    ],
)  # fmt: skip
def test_rule_contention_on_a_gpu_records_what_happened(allocs, phases, outcome):
    pods = contention_pair(allocs, phases=phases, **GPU_SEEN)
    verdict, observed, observations = ga.rule_contention(pods, CONTENTION_CONTEXT)
    assert verdict == ga.PASSED, observed
    assert observations == ["observation: contention: " + outcome]


def test_rule_contention_fails_when_the_pods_did_not_share_a_device_or_end():
    verdict, observed, _unused = ga.rule_contention(
        contention_pair(ids=(DEV_A, DEV_B)), CONTENTION_CONTEXT
    )
    assert verdict == ga.FAILED and "did not share one device" in observed
    pods = contention_pair(phases=("Succeeded", "Running"))
    verdict, observed, _unused = ga.rule_contention(pods, CONTENTION_CONTEXT)
    assert (
        verdict == ga.FAILED and "contention-b did not end within the timeout: Running" in observed
    )


# ----------------------------------------------------------------------------- isolation


@pytest.mark.parametrize(
    ("labels", "mechanism", "detail"),
    [
        ({}, "none", "none: fake devices"),
        ({"run.ai/fake.gpu": None}, "none", "none (node kaiops-node: mig.strategy=none"),
        ({"run.ai/fake.gpu": None, "nvidia.com/mig.strategy": "single"}, "mig", "mig ("),
        ({"run.ai/fake.gpu": None, "nvidia.com/gpu.replicas": "4"}, "time-slicing", "time-slicing"),
        ({"run.ai/fake.gpu": None, "nvidia.com/gpu.sharing-strategy": "mps"}, "mps", "mps ("),
        (
            {"run.ai/fake.gpu": None, "nvidia.com/mig.strategy": "mixed",
             "nvidia.com/gpu.sharing-strategy": "time-slicing"},
            "mixed",
            "mig+time-slicing",
        ),
    ],
)  # fmt: skip
def test_observed_isolation_reads_node_labels(labels, mechanism, detail):
    found, text = ga.observed_isolation([lab_node(**labels)], [])
    assert found == mechanism and text.startswith(detail)


def kai_enforcement(sharing=True, hami=False):
    def setting(value, where):
        return {"enabled": value, "sources": ["%s=%s" % (where, str(value).lower())], "note": None}

    return {
        "enforcement": {
            "gpu_sharing": setting(sharing, "kai-config spec.admission.gpuSharing"),
            "hami_core": setting(hami, "binder plugin hamicore"),
            "block_nvidia_visible_devices": setting(False, "admission"),
        }
    }


def test_observed_isolation_is_time_slicing_for_kai_fractions_without_a_memory_limit():
    found, text = ga.observed_isolation([lab_node()], sharing_records(), kai_enforcement())
    assert found == "time-slicing"
    assert "KAI: GPU sharing on (kai-config spec.admission.gpuSharing=true)" in text
    assert "none set CUDA_DEVICE_MEMORY_LIMIT" in text
    assert "so this is what the configuration would enforce on real GPUs" in text


@pytest.mark.parametrize(
    ("hami", "env", "annotations", "mechanism"),
    [
        (True, None, None, "hami-core"),
        (False, [{"name": "CUDA_DEVICE_MEMORY_LIMIT", "value": "8192m"}], None, "hami-core"),
        (False, None, {"mps": "true"}, "mps"),
    ],
)
def test_observed_isolation_reads_hami_core_and_mps(hami, env, annotations, mechanism):
    pods = sharing_records()
    if env:
        pods[0]["spec_env"]["CUDA_DEVICE_MEMORY_LIMIT"] = {"value": "8192m"}
    if annotations:
        pods[0]["annotations"].update(annotations)
    found, _unused = ga.observed_isolation([lab_node()], pods, kai_enforcement(hami=hami))
    assert found == mechanism


def test_rule_isolation_asserts_what_was_asked_against_what_is_observed():
    ctx = dict(CONTEXT, plan=kai_enforcement(), expected_isolation="time-slicing")
    verdict, observed, observations = ga.rule_isolation(sharing_records(), ctx)
    assert verdict == ga.PASSED
    assert observed == (
        "assertion: kai_gpu_access_expected_isolation=time-slicing; "
        "enforced (observed): time-slicing"
    )
    assert observations[1].startswith("observation: time slicing does not isolate memory")
    verdict, observed, _unused = ga.rule_isolation(
        sharing_records(), dict(ctx, expected_isolation="mig")
    )
    assert verdict == ga.FAILED
    assert "asked to enforce mig, the deployment enforces time-slicing" in observed


def test_rule_isolation_without_kai_reads_the_fake_nodes():
    verdict, observed, observations = ga.rule_isolation([], CONTEXT)
    assert verdict == ga.PASSED
    assert observations[0].startswith("observation: isolation enforced: none: fake devices")
    verdict, observed, _unused = ga.rule_isolation([], dict(CONTEXT, expected_isolation="mig"))
    assert verdict == ga.FAILED and "asked to enforce mig, the deployment enforces none" in observed


# ------------------------------------------------------------------------ evaluate, summary

DECLARED = [{"id": i, "title": i, "expectation": "declared " + i} for i in ga.CASE_ORDER]
NO_KAI = "KAI Scheduler is not installed on this cluster"
KAI_CASES = (
    "fractional",
    "fractional_sharing",
    "contention",
    "policy_queue",
    "policy_visible_devices",
    "policy_whole_limit",
)


def test_evaluate_judges_every_declared_case_and_never_passes_one_that_did_not_run():
    ctx = dict(CONTEXT, skipped={c: NO_KAI for c in KAI_CASES})
    pods = [rec("whole-gpu", "whole_gpu")] + concurrent_pair()
    results = ga.evaluate(DECLARED, pods, ctx)
    verdicts = {r["id"]: r["verdict"] for r in results}
    assert verdicts == dict(
        {c: "not_run" for c in KAI_CASES},
        whole_gpu="passed",
        concurrent="passed",
        policy_denial="not_run",
        isolation="passed",
    )
    summary = ga.summarize(results, require_sharing=False)
    assert summary["passed"] == 3 and summary["not_run"] == 7 and summary["outcome"] == "passed"
    assert summary["outsiders_with_devices"] == []


def test_summarize_fails_when_sharing_is_required_but_did_not_run():
    ctx = dict(CONTEXT, skipped={"fractional_sharing": NO_KAI})
    results = ga.evaluate([DECLARED[3]], [], ctx)
    summary = ga.summarize(results, require_sharing=True)
    assert summary["outcome"] == "failed" and summary["failed_cases"] == []
    assert "KAI Scheduler is not installed" in summary["reasons"][0]


def test_evaluate_marks_unselected_cases_not_run():
    results = ga.evaluate(DECLARED[:1], [], dict(CONTEXT, not_selected=["whole_gpu"]))
    assert results[0]["verdict"] == "not_run" and "not selected" in results[0]["observed"]


@pytest.mark.parametrize(
    ("declared", "message"),
    [
        ([{"id": "whole_gpu", "title": "t"}], "its expectation was not declared"),
        ([{"id": "bogus", "expectation": "x"}], "no rule for it"),
    ],
)
def test_evaluate_refuses_cases_without_expectation_or_rule(declared, message):
    with pytest.raises(KaiopsError, match=message):
        ga.evaluate(declared, [], CONTEXT)


# --------------------------------------------------------------------------------- cost


def test_cost_section_counts_the_probes_gpu_time_in_the_window():
    pods = concurrent_pair() + [
        rec("outsider", "policy_denial", log=probe_line("outsider", None), gpu=None)
    ]
    figures, markdown = ga.cost_section(
        pods, [lab_node()], "2026-11-30T07:53:50Z", "2026-11-30T07:54:30Z", "3"
    )
    # two whole GPUs busy 8 s each in a 40 s window of 2 GPUs
    assert figures["busy_gpu_seconds"] == "16.000"
    assert figures["available_gpu_seconds"] == "80.000"
    assert figures["utilisation"] == "0.2"
    assert figures["completed_valid_jobs"] == 2
    assert figures["gpu_pool"] == ["kaiops-node/" + DEV_A, "kaiops-node/" + DEV_B]
    assert Decimal(figures["lost_busy_gpu_hours"]) == 0
    assert figures["queue_age"] == {
        "count": 2,
        "p50_s": 0.0,
        "max_s": 0.0,
        "never_started": [],
        "held_by_policy": [],
    }
    assert "Busy time is not useful throughput" in markdown
    assert "no GPU present" in markdown
    assert "Failure window: none in this run" in markdown


def test_cost_section_counts_fractions_by_their_portion_and_never_self_named_devices():
    pods = sharing_records() + names_devices() + queue_records()
    figures, markdown = ga.cost_section(
        pods, [lab_node()], "2026-11-30T07:53:50Z", "2026-11-30T07:54:30Z", "3"
    )
    # two halves of one GPU for 8 s: 8 busy GPU-seconds; "all" named by the outsider is no GPU
    assert figures["gpu_pool"] == ["kaiops-node/" + DEV_B, "kaiops-node/unused-0"]
    assert figures["busy_gpu_seconds"] == "8.000"
    assert figures["completed_valid_jobs"] == 2
    assert figures["queue_age"]["held_by_policy"] == ["no-queue", "zero-queue"]
    assert (
        "held back by the policy on purpose (not queue age, not loss): no-queue, zero-queue"
        in markdown
    )


def test_cost_section_counts_a_failed_bind_as_loss_and_its_reservation_as_held_capacity():
    pod = fraction_pod("fraction", "fractional", PREFIX_F, GROUP_F, phase="Pending", node=None)
    snap = observe(
        "running",
        [pod],
        brs=[
            bind_request(
                "fraction", GROUP_F, "Failed", "Internal Error: assignment to entry in nil map"
            )
        ],
        reservations=[reservation_pod(GROUP_F, created="2026-11-30T07:53:58Z")],
        seen="2026-11-30T07:54:28Z",
    )
    pods = with_kai([records.pod_record(pod, "")], {"fractional": [snap]}) + concurrent_pair()
    figures, markdown = ga.cost_section(
        pods, [lab_node()], "2026-11-30T07:53:50Z", "2026-11-30T07:54:30Z", "3"
    )
    # Submitted 07:53:58, never started: half of the GPU its reservation pod holds (DEV_B) until
    # the window's end (07:54:30) is 16 GPU-seconds, less the 8 s concurrent-b had DEV_B whole
    # (a GPU is never more than fully busy): 12.
    assert figures["delayed_workloads"] == ["fraction"]
    assert figures["lost_busy_gpu_seconds"] == "12.000"
    assert figures["reservation_held_gpu_seconds"] == "30.000"
    assert figures["reservation_pods_of_failed_binds"] == [RESERVATION_F]
    assert figures["queue_age"]["never_started"] == ["fraction"]
    assert "Failure window: work that could not start when submitted" in markdown
    assert "held idle by reservation pods of failed binds: 30.000 GPU-seconds" in markdown


def test_cost_section_pads_the_pool_with_unused_devices_of_the_node():
    node = lab_node()
    node["status"]["allocatable"]["nvidia.com/gpu"] = "4"
    figures, _unused = ga.cost_section(
        [rec("whole-gpu", "whole_gpu")], [node], "2026-11-30T07:53:58Z", "2026-11-30T07:54:06Z", "3"
    )
    assert figures["gpus"] == 4 and figures["utilisation"] == "0.25"


def test_cost_section_is_not_computed_without_an_allocated_device():
    figures, markdown = ga.cost_section([], [], "2026-11-30T07:53:58Z", "2026-11-30T07:54:06Z", "3")
    assert figures == {"computed": False, "reason": "no GPU was allocated to a probe in this run"}
    assert markdown is None


# -------------------------------------------------------------------------------- report


def report_params(**over):
    params = {
        "cluster": "lab",
        "cases": DECLARED,
        "declared_at": "2026-11-30T07:53:50Z",
        "pods": [make_pod("whole-gpu", "whole_gpu")],
        "logs": {"whole-gpu": probe_line("whole-gpu")},
        "nodes": [lab_node()],
        "kai": {"installed": False},
        "skipped": {c: NO_KAI for c in KAI_CASES},
        "not_selected": ["concurrent", "policy_denial"],
        "expected_isolation": "none",
        "require_sharing": False,
        "fraction": "0.5",
        "rate": "3",
    }
    params.update(over)
    return params


def test_build_report_renders_the_case_table_and_labels_no_gpu():
    document, markdown = ga_report.build_report(
        copy.deepcopy(report_params()), "2026-11-30T07:54:30Z"
    )
    assert document["summary"]["outcome"] == "passed"
    assert "| whole_gpu | declared whole_gpu |" in markdown
    assert "**passed (no GPU present)**" in markdown
    row = "| fractional_sharing | declared fractional_sharing | not run: KAI Scheduler is not %s |"
    assert row % "installed on this cluster | **not run**" in markdown
    assert "## Utilisation and cost of this run's window" in markdown
    json.dumps(document)


def test_render_markdown_fails_on_a_case_without_what_was_observed():
    # the template reads the case's own fields: one without "observed" fails the rendering
    # (StrictUndefined) instead of printing a blank that reads as "nothing was observed"
    document, _unused = ga_report.build_report(
        copy.deepcopy(report_params()), "2026-11-30T07:54:30Z"
    )
    del document["cases"][0]["observed"]
    with pytest.raises(jinja2.UndefinedError, match="observed"):
        ga_report.render_markdown(document, None)


def test_build_report_with_kai_shows_enforcement_fake_gpus_rejections_and_kai_objects():
    pod = fraction_pod("fraction", "fractional", PREFIX_F, GROUP_F)
    plan = kai_enforcement()
    plan["candidate_nodes"] = [
        {"name": "kaiops-node", "gpus": 2, "gpu_memory_mib": 16384, "fake": True}
    ]
    params = report_params(
        pods=[pod],
        logs={"fraction": fraction_log("fraction", PREFIX_F)},
        skipped={},
        not_selected=[c for c in ga.CASE_ORDER if c not in ("fractional", "policy_whole_limit")],
        kai={"installed": True, "version": "v0.16.14", "gpu_sharing": True},
        plan=plan,
        watches={"fractional": fractional_watch()},
        admission={"policy_whole_limit": {"rejected": True, "message": WRAPPED_DENIAL}},
    )
    document, markdown = ga_report.build_report(copy.deepcopy(params), "2026-11-30T07:54:30Z")
    verdicts = {c["id"]: c["verdict"] for c in document["cases"]}
    assert verdicts["fractional"] == "passed" and verdicts["policy_whole_limit"] == "passed"
    assert "- KAI enforces (read before the run): GPU sharing on" in markdown
    assert (
        "- GPU nodes a probe can land on: kaiops-node (2 GPUs, 16384 MiB each, fake devices)"
        in markdown
    )
    assert "- **Fake GPUs**: these nodes advertise devices with no driver behind them" in markdown
    assert "- policy_whole_limit: admission webhook" in markdown
    assert "| %s-0 | %s |" % (PREFIX_F, DEV_B) in markdown
    assert document["workloads"][0]["kai"]["reservation"]["name"] == RESERVATION_F
    assert document["admission"]["policy_whole_limit"]["message"].startswith("admission webhook")
    json.dumps(document)


def fractional_watch():
    pod = fraction_pod("fraction", "fractional", PREFIX_F, GROUP_F)
    running = dict(pod, status={"phase": "Running"})
    return [
        observe(
            "running",
            [running],
            [pod_group("fraction")],
            [bind_request("fraction", GROUP_F)],
            [configmap(PREFIX_F + "-0", cm_data())],
            [reservation_pod(GROUP_F)],
            together=TOGETHER,
        )
    ]
