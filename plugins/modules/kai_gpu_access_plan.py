#!/usr/bin/python
# Copyright: kaiops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

DOCUMENTATION = r"""
module: kai_gpu_access_plan
short_description: Read what a cluster enforces for GPU access and plan the GPU-access cases
version_added: 0.1.0
author:
  - kaiops contributors (@kaiops)
description:
  - Reads, without changing anything, KAI's Config C(kai-config) (C(kai.scheduler/v1)), the
    admission and binder Deployments in O(kai_namespace) (their container arguments), the
    Queues (C(scheduling.run.ai/v2)) and the Nodes.
  - Returns the plan of a GPU-access run, made before any expectation is declared - what KAI
    enforces (GPU sharing, C(blockNvidiaVisibleDevices), the HAMi-core memory limit, each with
    its sources; the running component's arguments win over C(kai-config)), whether the queues
    exist, the GPU nodes a probe can land on with their device memory, the declared figures of
    the contention case, the cases that cannot run with the reason, and the problems that must
    stop the run before anything is created.
  - A section the credentials may not read, or an API the cluster does not serve, is recorded in
    RV(plan.access) and left out of the plan.
extends_documentation_fragment:
  - kaiops.runbooks.kai_namespaces
  - kaiops.runbooks.attributes
  - kaiops.runbooks.k8s_auth
options:
  cluster:
    description: Name of the cluster (the inventory host).
    type: str
    required: true
  kai:
    description:
      - What is known of KAI on the cluster (C(installed), C(gpu_sharing)), from
        M(kaiops.runbooks.kai_inventory_info).
    type: dict
    default: {}
  cases:
    description: The cases selected for the run.
    type: list
    elements: str
    default: []
  needs:
    description:
      - Per case, what it needs of the cluster - V(kai) (KAI installed), V(sharing) (KAI GPU
        sharing on). A case whose need is not met is not run, with the reason.
    type: dict
    default: {}
  queue:
    description: The KAI queue of the eligible fraction pods; it must exist.
    type: str
    default: default-queue
  missing_queue:
    description: The queue the policy outsider names; it must not exist.
    type: str
    default: kaiops-gpu-access-no-such-queue
  zero_queue:
    description:
      - The queue with GPU limit 0 the run creates; it must not exist yet, unless it carries
        O(owned_labels) (a run killed part way left it, and it is listed in RV(plan.leftovers)).
    type: str
    default: kaiops-gpu-access-zero-limit
  owned_labels:
    description: The labels the role puts on what it creates; an object with all of them is ours.
    type: dict
    default: {}
  node_selector:
    description: nodeSelector of the probe pods.
    type: dict
    default: {}
  tolerations:
    description: Tolerations of the probe pods.
    type: list
    elements: dict
    default: []
  fraction:
    description: The gpu-fraction of the fraction pods.
    type: str
    default: "0.5"
  contention_share:
    description: Share of the device memory each contention pod allocates.
    type: str
    default: "0.6"
  alloc_mib:
    description: MiB each contention pod allocates when no candidate node gives its device memory.
    type: int
    default: 256
attributes:
  check_mode:
    support: full
    details: Read-only; runs the same under C(--check), where every case is planned as not run.
"""

EXAMPLES = r"""
- name: Plan the GPU-access cases
  kaiops.runbooks.kai_gpu_access_plan:
    cluster: "{{ inventory_hostname }}"
    kai: "{{ kai_gpu_access_kai }}"
    cases: [fractional, policy_queue]
    needs: {fractional: [kai, sharing], policy_queue: [kai, sharing]}
  register: kai_gpu_access_plan_result
"""

RETURN = r"""
plan:
  description: The plan.
  returned: success
  type: dict
  contains:
    enforcement:
      description:
        - C(gpu_sharing), C(block_nvidia_visible_devices), C(hami_core), each with C(enabled),
          C(sources) and C(note).
      type: dict
    queues:
      description: Per queue named, C(exists), C(gpu_limit), C(parent).
      type: dict
    zero_queue_parent:
      description: Parent queue of O(queue), given to the queue with GPU limit 0.
      type: str
    candidate_nodes:
      description: GPU nodes a probe can land on, C(name), C(gpus), C(gpu_memory_mib), C(fake).
      type: list
      elements: dict
    contention:
      description: C(share), C(device_memory_mib), C(alloc_mib), C(portion_mib), C(basis).
      type: dict
    skipped:
      description: Reason per case that cannot run.
      type: dict
    problems:
      description: What must stop the run before anything is created.
      type: list
      elements: str
    leftovers:
      description:
        - Objects of this role a killed run left (C(kind), C(name), C(labels)); the role records and
          removes them before it plants anything.
      type: list
      elements: dict
    access:
      description: Per section read, V(ok), V(forbidden) or V(absent).
      type: dict
"""

from ansible_collections.kaiops.runbooks.plugins.module_utils.ansible_module import run_module
from ansible_collections.kaiops.runbooks.plugins.module_utils.args_common import (
    AUTH_ARG_SPEC,
    KAI_NAMESPACE_ARG_SPEC,
    merge_specs,
)
from ansible_collections.kaiops.runbooks.plugins.module_utils.gpu_access.runner import (
    run_gpu_access_plan,
)
from ansible_collections.kaiops.runbooks.plugins.module_utils.k8s.client import KUBERNETES


def argspec():
    return merge_specs(
        KAI_NAMESPACE_ARG_SPEC,
        AUTH_ARG_SPEC,
        {
            "cluster": {"type": "str", "required": True},
            "kai": {"type": "dict", "default": {}},
            "cases": {"type": "list", "elements": "str", "default": []},
            "needs": {"type": "dict", "default": {}},
            "queue": {"type": "str", "default": "default-queue"},
            "missing_queue": {"type": "str", "default": "kaiops-gpu-access-no-such-queue"},
            "zero_queue": {"type": "str", "default": "kaiops-gpu-access-zero-limit"},
            "owned_labels": {"type": "dict", "default": {}},
            "node_selector": {"type": "dict", "default": {}},
            "tolerations": {"type": "list", "elements": "dict", "default": []},
            "fraction": {"type": "str", "default": "0.5"},
            "contention_share": {"type": "str", "default": "0.6"},
            "alloc_mib": {"type": "int", "default": 256},
        },
    )


def main():
    run_module(argspec(), run_gpu_access_plan, libraries=[KUBERNETES])


if __name__ == "__main__":
    main()
