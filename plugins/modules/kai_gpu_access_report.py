#!/usr/bin/python
# Copyright: kaiops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

DOCUMENTATION = r"""
module: kai_gpu_access_report
short_description: Judge the GPU-access cases and write gpu_access.json and gpu_access.md
version_added: 0.1.0
author:
  - kaiops contributors (@kaiops)
description:
  - Takes the GPU-access cases with the expectation declared for each before it ran, the
    probe pods (as read from the API) with their logs (the probe's JSON line), and the nodes
    they ran on; judges every case (V(passed), V(failed), or V(not_run) with the reason,
    never counted as passed) and writes C(gpu_access.json) and C(gpu_access.md) into the
    run's evidence folder, with a utilisation and cost section over the run's window.
  - Observations (no GPU present, the isolation in place, memory contention) are reported as
    observations, apart from the verdicts.
  - An outsider (the policy cases) that obtained a device through the tested path fails its
    case and is named in the C(outsiders_with_devices) and C(reasons) of RV(summary).
  - Touches no cluster. Never replaces a file.
extends_documentation_fragment:
  - kaiops.runbooks.attributes
  - kaiops.runbooks.evidence
  - kaiops.runbooks.report
options:
  cluster:
    description: Name of the cluster (the inventory host).
    type: str
    required: true
  cases:
    description:
      - The cases in run order, each C(id) (one of V(whole_gpu), V(concurrent), V(fractional),
        V(fractional_sharing), V(policy_queue), V(policy_visible_devices), V(policy_whole_limit),
        V(policy_denial), V(contention), V(isolation)), C(title) and C(expectation), as declared
        before the run.
    type: list
    elements: dict
    required: true
  declared_at:
    description: When the expectations were declared (RFC 3339); also the window's start.
    type: str
  pods:
    description:
      - The probe pods, as the API returns them.
      - Their label C(kaiops.dev/gpu-access-case) names the case.
    type: list
    elements: dict
    default: []
  logs:
    description:
      - Log text per pod name (the probe prints one JSON line).
      - A pod without a log has no probe result.
    type: dict
    default: {}
  nodes:
    description: Node objects the probes ran on (labels and allocatable GPUs are read).
    type: list
    elements: dict
    default: []
  kai:
    description: What is known of KAI on the cluster (C(installed), C(version), C(gpu_sharing)).
    type: dict
    default: {}
  skipped:
    description: Reason per case id that did not run (for example KAI not installed).
    type: dict
    default: {}
  not_selected:
    description: Case ids left out of this run.
    type: list
    elements: str
    default: []
  watches:
    description:
      - Per case, the observations M(kaiops.runbooks.kai_gpu_access_watch) kept (its
        C(snapshots)).
    type: dict
    default: {}
  admission:
    description:
      - Per case, what the submission of its pods got - C(rejected) (bool) and C(message) (the
        API server's answer, an admission denial for instance).
    type: dict
    default: {}
  plan:
    description: The plan of M(kaiops.runbooks.kai_gpu_access_plan) (enforcement, figures).
    type: dict
    default: {}
  expected_reasons:
    description: Per policy outsider pod, the reason KAI must hold it back with.
    type: dict
    default: {}
  outsider_queues:
    description: Per policy outsider pod, the queue it named (shown in the report).
    type: dict
    default: {}
  require_block_visible_devices:
    description: Fail the policy case (b) unless the cluster blocks NVIDIA_VISIBLE_DEVICES.
    type: bool
    default: false
  kai_scheduler:
    description: schedulerName of KAI's pods.
    type: str
    default: kai-scheduler
  expected_isolation:
    description:
      - The isolation the deployment was asked to enforce (the assertion of the isolation case).
    type: str
    choices: [none, time-slicing, mig, mps, hami-core]
    default: none
  require_sharing:
    description: Report the run as failed unless fractional sharing passed.
    type: bool
    default: false
  fraction:
    description: The GPU fraction the sharing case asked for (expected C(GPU_PORTION)).
    type: str
    default: "0.5"
  rate:
    description: Allocation rate per available GPU-hour for the cost section.
    type: str
    default: "3"
  window_start:
    description: Start of the accounting window; defaults to O(declared_at).
    type: str
  namespace:
    description: Namespace the probes ran in (shown in the report).
    type: str
  probe_image:
    description: Probe image used (shown in the report).
    type: str
attributes:
  check_mode:
    support: full
    details:
      - Changes nothing in any cluster and reports C(changed=false); the report is written under
        C(--check) too.
"""

EXAMPLES = r"""
- name: Write the GPU access report
  kaiops.runbooks.kai_gpu_access_report:
    cluster: "{{ inventory_hostname }}"
    cases: "{{ kai_gpu_access_cases_declared }}"
    declared_at: "{{ kai_gpu_access_declared_at }}"
    pods: "{{ kai_gpu_access_pods_result.resources }}"
    logs: "{{ kai_gpu_access_logs }}"
    nodes: "{{ kai_gpu_access_nodes_result.resources }}"
    expected_isolation: none
  register: kai_gpu_access_report_result
"""

RETURN = r"""
summary:
  description: Counts of verdicts, the failed cases, the outcome and its reasons.
  returned: always
  type: dict
  sample:
    cases: 6
    passed: 5
    failed: 0
    not_run: 1
    failed_cases: []
    outsiders_with_devices: []
    outcome: passed
    reasons: []
cases:
  description: Each case's id, verdict and what was observed.
  returned: always
  type: list
  elements: dict
cost:
  description: Utilisation and cost figures over the run's window (Decimals as strings).
  returned: always
  type: dict
files:
  description: Files written, relative to RV(evidence_dir).
  returned: always
  type: list
  elements: str
  sample: [gpu_access.json, gpu_access.md]
evidence_dir:
  description: The evidence folder written into; null when none was known.
  returned: always
  type: str
"""

from ansible_collections.kaiops.runbooks.plugins.module_utils.ansible_module import run_module
from ansible_collections.kaiops.runbooks.plugins.module_utils.args_common import (
    EVIDENCE_ARG_SPEC,
    REPORT_ARG_SPEC,
    merge_specs,
)
from ansible_collections.kaiops.runbooks.plugins.module_utils.gpu_access.runner import (
    run_gpu_access_report,
)


def argspec():
    return merge_specs(
        EVIDENCE_ARG_SPEC,
        REPORT_ARG_SPEC,
        {
            "cluster": {"type": "str", "required": True},
            "cases": {"type": "list", "elements": "dict", "required": True},
            "declared_at": {"type": "str"},
            "pods": {"type": "list", "elements": "dict", "default": []},
            "logs": {"type": "dict", "default": {}},
            "nodes": {"type": "list", "elements": "dict", "default": []},
            "kai": {"type": "dict", "default": {}},
            "skipped": {"type": "dict", "default": {}},
            "not_selected": {"type": "list", "elements": "str", "default": []},
            "watches": {"type": "dict", "default": {}},
            "admission": {"type": "dict", "default": {}},
            "plan": {"type": "dict", "default": {}},
            "expected_reasons": {"type": "dict", "default": {}},
            "outsider_queues": {"type": "dict", "default": {}},
            "require_block_visible_devices": {"type": "bool", "default": False},
            "kai_scheduler": {"type": "str", "default": "kai-scheduler"},
            "expected_isolation": {
                "type": "str",
                "choices": ["none", "time-slicing", "mig", "mps", "hami-core"],
                "default": "none",
            },
            "require_sharing": {"type": "bool", "default": False},
            "fraction": {"type": "str", "default": "0.5"},
            "rate": {"type": "str", "default": "3"},
            "window_start": {"type": "str"},
            "namespace": {"type": "str"},
            "probe_image": {"type": "str"},
        },
    )


def main():
    run_module(argspec(), run_gpu_access_report)


if __name__ == "__main__":
    main()
