"""module_utils/gpu_access.py: reading probe pods, the case rules, the isolation reading,
the summary and the cost section. Pods and probe lines are built from a probe line and a
pod captured on the lab (fake GPUs); no cluster."""

import copy
import json
from decimal import Decimal

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
             finished="2026-11-30T07:54:06Z", fraction=None):  # fmt: skip
    limits = {"memory": "256Mi"}
    if gpu:
        limits["nvidia.com/gpu"] = gpu
    pod = {
        "metadata": {
            "name": name,
            "namespace": "kaiops-gpu-access",
            "creationTimestamp": submitted,
            "labels": {"kaiops.dev/gpu-access-case": case},
            "annotations": {"gpu-fraction": fraction} if fraction else {},
        },
        "spec": {
            "nodeName": node,
            "containers": [{"name": "probe", "resources": {"limits": limits}}],
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


def test_rule_fractional_sharing_is_not_run_without_kai():
    ctx = dict(
        CONTEXT, skipped={"fractional_sharing": "KAI Scheduler is not installed on this cluster"}
    )
    verdict, observed, _unused = ga.rule_fractional_sharing([], ctx)
    assert verdict == ga.NOT_RUN
    assert observed == "not run: KAI Scheduler is not installed on this cluster"


def sharing_pair(portion_b="0.5", dev_b=DEV_A):
    extra = {"GPU_PORTION": "0.5", "configmap": "fraction-a-shared-0"}
    pods = []
    for name, portion, dev in (("fraction-a", "0.5", DEV_A), ("fraction-b", portion_b, dev_b)):
        log = probe_line(
            name, dev, visible=dict(extra, NVIDIA_VISIBLE_DEVICES=dev, GPU_PORTION=portion)
        )
        pods.append(rec(name, "fractional_sharing", log=log, gpu=None, fraction="0.5"))
    return pods


def test_rule_fractional_sharing_passes_on_one_shared_device_with_the_portion():
    verdict, observed, _unused = ga.rule_fractional_sharing(sharing_pair(), CONTEXT)
    assert verdict == ga.PASSED, observed
    assert "GPU_PORTION 0.5" in observed


@pytest.mark.parametrize(
    ("kw", "reason"),
    [({"portion_b": "1"}, "GPU_PORTION '1'"), ({"dev_b": DEV_B}, "did not share one device")],
)
def test_rule_fractional_sharing_fails_on_wrong_portion_or_separate_devices(kw, reason):
    verdict, observed, _unused = ga.rule_fractional_sharing(sharing_pair(**kw), CONTEXT)
    assert verdict == ga.FAILED and reason in observed


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


def test_rule_policy_denial_fails_when_the_driver_shows_the_outsider_a_gpu():
    log = probe_line("outsider", None, gpu_present=True, devices=[{"uuid": DEV_A, "name": "H200"}])
    outsider = rec("outsider", "policy_denial", log=log, gpu=None)
    verdict, observed, _unused = ga.rule_policy_denial([outsider], CONTEXT)
    assert verdict == ga.FAILED and "driver showed it a GPU" in observed


def test_rule_policy_denial_fails_when_access_was_not_observed():
    outsider = rec("outsider", "policy_denial", log="", gpu=None, phase="Failed", exit_code=2)
    verdict, observed, _unused = ga.rule_policy_denial([outsider], CONTEXT)
    assert verdict == ga.FAILED and "access was not observed" in observed


def test_rule_contention_without_a_gpu_is_an_observation_not_a_measurement():
    alloc = {"alloc": {"requested_mib": 256, "allocated_mib": 0, "on_device": False}}
    pods = [
        rec("contention-a", "contention", log=probe_line("contention-a", DEV_A, **alloc)),
        rec("contention-b", "contention", log=probe_line("contention-b", DEV_B, **alloc)),
    ]
    verdict, _unused, observations = ga.rule_contention(pods, CONTEXT)
    assert verdict == ga.PASSED
    assert observations[0].startswith("observation: memory contention not observable without a GPU")
    assert any("separate devices" in o for o in observations)


def test_rule_contention_on_a_gpu_records_what_each_allocation_got():
    over = {"gpu_present": True, "devices": [{"uuid": DEV_A, "name": "H200"}]}
    got = {"requested_mib": 90000, "allocated_mib": 50000, "satisfied": False, "on_device": True,
           "error": "CUDA_ERROR_OUT_OF_MEMORY"}  # fmt: skip
    pods = [
        rec(n, "contention", log=probe_line(n, DEV_A, alloc=dict(got), **over))
        for n in ("contention-a", "contention-b")
    ]
    verdict, _unused, observations = ga.rule_contention(pods, CONTEXT)
    assert verdict == ga.PASSED
    assert (
        "observation: contention-a got 50000 of 90000 MiB (satisfied False, error: "
        in observations[0]
    )


@pytest.mark.parametrize(
    ("labels", "mechanism", "detail"),
    [
        ({}, "none", "none: fake devices"),
        ({"run.ai/fake.gpu": None}, "none", "none (kaiops-node: mig.strategy=none"),
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


def test_rule_isolation_asserts_the_expected_isolation():
    verdict, observed, observations = ga.rule_isolation([], CONTEXT)
    assert verdict == ga.PASSED
    assert observed.startswith("assertion: kai_gpu_access_expected_isolation=none")
    assert observations[0].startswith("observation: isolation enforced: none: fake devices")
    verdict, observed, _unused = ga.rule_isolation([], dict(CONTEXT, expected_isolation="mig"))
    assert verdict == ga.FAILED and "asked to enforce mig, the deployment enforces none" in observed


# ------------------------------------------------------------------------ evaluate, summary

DECLARED = [{"id": i, "title": i, "expectation": "declared " + i} for i in ga.CASE_ORDER]


def test_evaluate_judges_every_declared_case_and_never_passes_one_that_did_not_run():
    ctx = dict(
        CONTEXT, skipped={"fractional_sharing": "KAI Scheduler is not installed on this cluster"}
    )
    pods = [rec("whole-gpu", "whole_gpu")] + concurrent_pair()
    results = ga.evaluate(DECLARED, pods, ctx)
    verdicts = {r["id"]: r["verdict"] for r in results}
    assert verdicts == {
        "whole_gpu": "passed",
        "concurrent": "passed",
        "fractional_sharing": "not_run",
        "policy_denial": "not_run",
        "contention": "not_run",
        "isolation": "passed",
    }
    summary = ga.summarize(results, require_sharing=False)
    assert summary["passed"] == 3 and summary["not_run"] == 3 and summary["outcome"] == "passed"


def test_summarize_fails_when_sharing_is_required_but_did_not_run():
    ctx = dict(
        CONTEXT, skipped={"fractional_sharing": "KAI Scheduler is not installed on this cluster"}
    )
    results = ga.evaluate(DECLARED[2:3], [], ctx)
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
    assert "Busy time is not useful throughput" in markdown
    assert "no GPU present" in markdown


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


def test_build_report_renders_the_case_table_and_labels_no_gpu():
    params = {
        "cluster": "lab",
        "cases": DECLARED,
        "declared_at": "2026-11-30T07:53:50Z",
        "pods": [make_pod("whole-gpu", "whole_gpu")],
        "logs": {"whole-gpu": probe_line("whole-gpu")},
        "nodes": [lab_node()],
        "kai": {"installed": False},
        "skipped": {"fractional_sharing": "KAI Scheduler is not installed on this cluster"},
        "not_selected": ["concurrent", "policy_denial", "contention"],
        "expected_isolation": "none",
        "require_sharing": False,
        "fraction": "0.5",
        "rate": "3",
    }
    document, markdown = ga_report.build_report(copy.deepcopy(params), "2026-11-30T07:54:30Z")
    assert document["summary"]["outcome"] == "passed"
    assert "| whole_gpu | declared whole_gpu |" in markdown
    assert "**passed (no GPU present)**" in markdown
    row = "| fractional_sharing | declared fractional_sharing | not run: KAI Scheduler is not %s |"
    assert row % "installed on this cluster | **not run**" in markdown
    assert "## Utilisation and cost of this run's window" in markdown
    json.dumps(document)
