#!/usr/bin/python
# Copyright: kaiops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

DOCUMENTATION = r"""
module: kai_rollout_verify
short_description: Verify KAI with probe workloads and judge the figures against the thresholds
version_added: 0.1.0
author:
  - kaiops contributors (@kaiops)
description:
  - Creates a namespace of the run's own (C(kaiops-rollout-<phase>-<run>), labelled
    C(kaiops.dev/created-by=rollout)) after deleting any such namespace an interrupted run left on
    the cluster, submits fractional GPU probes (C(gpu-fraction 0.5), C(schedulerName kai-scheduler))
    - O(probes) running the GPU probe on a real node, O(kwok_probes) on KWOK nodes - and watches
    them, their BindRequests and the binder's pods from the controller until each reached its
    outcome or the change request's C(observation_window_s) passed. Then deletes the namespace
    and runs the recovery scan.
  - Figures from the watches' timestamps - submit-to-bound and submit-to-Running p50/p95 (work
    that never got there stays in the denominator), completion rate (failed and timed-out probes
    count), binder restarts (a replaced binder pod counts), BindRequests Failed with their
    reasons, stale objects (the probes' reservation pods left, recovery-scan findings new since
    the change began), queue age, valid completions and idle GPU capacity. A bind is a pod with a
    node, never an event.
  - O(phase=baseline) only records the figures (before the change, on the version that runs);
    O(phase=verify) (on the version under test, the request's C(kai_version)),
    O(phase=soak) (the same version and gates, again at the end of the soak,
    C(kaiops_rollout_soak_s), stage C(soak)) and O(phase=rollback) (on the version recorded
    before the change) judge them as gates against the request's thresholds; the version, the
    thresholds and the figures before the change are read from the cluster's record in the
    run's journal, and the figures are added to it. Evidence in C(verify/<cluster>/<phase>/).
  - O(phase=baseline) on a cluster that runs the version under test already records why no
    baseline is measured, probes nothing and returns skipped.
extends_documentation_fragment:
  - kaiops.runbooks.kai_namespaces.reservation
  - kaiops.runbooks.kai_namespaces
  - kaiops.runbooks.k8s_auth
  - kaiops.runbooks.journal
  - kaiops.runbooks.attributes
options:
  phase:
    description: Which verification.
    type: str
    choices: [baseline, verify, soak, rollback]
    required: true
  run_id:
    description: The run's id (namespace name and labels).
    type: str
    required: true
  probes:
    description: Probes that run the GPU probe to completion (a real node).
    type: int
    default: 1
  probe_placement:
    description:
      - Placement of the GPU probes - a mapping with C(spec) keys (nodeSelector, tolerations...).
    type: dict
    default: {}
  kwok_probes:
    description: Probes on KWOK nodes (they bind and turn Running without a container).
    type: int
    default: 0
  kwok_placement:
    description:
      - Placement of the KWOK probes; default nodeSelector C(type=kwok) with KWOK's toleration.
    type: dict
    default: {}
  gang_probes:
    description:
      - Gang probes - PodGroups of 2 fraction pods with C(minMember=2) that KAI must place
        together - where the other probes run (on KWOK nodes when O(kwok_probes) is above 0).
      - Each has gate C(gang_bound); 0 turns it off.
    type: int
    default: 1
  burst_probes:
    description:
      - Burst pods, 0.5 GPU each, created at once on the KWOK node with the most GPUs, the shape
        of KAI-Scheduler issue 2153; gate C(burst_bound). 0 turns it off.
      - At most twice the GPUs that node has free, or pods stay Pending and the gate fails.
    type: int
    default: 0
  image:
    description: Image of the probes.
    type: str
    default: kaiops.dev/gpuprobe:0.1.0
  settle_s:
    description: How long to wait for the probes' reservation pods to go after their namespace.
    type: int
    default: 30
  stale_min_age_s:
    description: Minimum age of stale objects the recovery scan counts.
    type: int
    default: 300
  binder_selector:
    description: Label selector of the binder's pods.
    type: str
    default: app=binder
attributes:
  check_mode:
    support: partial
    details:
      - Creates pods; under C(--check) nothing runs and nothing is added to the record.
seealso:
  - module: kaiops.runbooks.kai_rollout_decision
"""

EXAMPLES = r"""
- name: Verify the upgrade
  kaiops.runbooks.kai_rollout_verify:
    phase: verify
    run_id: "{{ kai_rollout_run_id }}"
    kwok_probes: 8
"""

RETURN = r"""
decision:
  description:
    - The cluster's decision so far, or null before the change
      window decided it.
  returned: always
  type: str
  sample: approved
action:
  description:
    - What the failed-gate policy said to do after the verification (C(none), C(rollback),
      C(pause), C(continue)), or null before the decision.
  returned: always
  type: str
passed:
  description: True when every gate of the cluster's record passed so far.
  returned: always
  type: bool
failed_gates:
  description: Names of the record's failed gates so far.
  returned: always
  type: list
  elements: str
  sample: [kai_release]
figures:
  description: What the verification measured.
  returned: success
  type: dict
"""

from ansible_collections.kaiops.runbooks.plugins.module_utils.ansible_module import run_module
from ansible_collections.kaiops.runbooks.plugins.module_utils.args_common import (
    AUTH_ARG_SPEC,
    JOURNAL_ARG_SPEC,
    KAI_NAMESPACE_ARG_SPEC,
    RESERVATION_NAMESPACE_ARG_SPEC,
    merge_specs,
)
from ansible_collections.kaiops.runbooks.plugins.module_utils.k8s.client import KUBERNETES
from ansible_collections.kaiops.runbooks.plugins.module_utils.rollout.change_runner import (
    run_rollout_verify,
)

# The shared action plugin gives `cluster`, when the task leaves it out, the host the task runs for.
CLUSTER_FROM_HOST = True


def argspec():
    return merge_specs(
        KAI_NAMESPACE_ARG_SPEC,
        RESERVATION_NAMESPACE_ARG_SPEC,
        AUTH_ARG_SPEC,
        JOURNAL_ARG_SPEC,
        {
            "phase": {
                "type": "str",
                "choices": ["baseline", "verify", "soak", "rollback"],
                "required": True,
            },
            "run_id": {"type": "str", "required": True},
            "probes": {"type": "int", "default": 1},
            "probe_placement": {"type": "dict", "default": {}},
            "kwok_probes": {"type": "int", "default": 0},
            "kwok_placement": {"type": "dict", "default": {}},
            "gang_probes": {"type": "int", "default": 1},
            "burst_probes": {"type": "int", "default": 0},
            "image": {"type": "str", "default": "kaiops.dev/gpuprobe:0.1.0"},
            "settle_s": {"type": "int", "default": 30},
            "stale_min_age_s": {"type": "int", "default": 300},
            "binder_selector": {"type": "str", "default": "app=binder"},
        },
    )


def main():
    run_module(argspec(), run_rollout_verify, libraries=[KUBERNETES])


if __name__ == "__main__":
    main()
