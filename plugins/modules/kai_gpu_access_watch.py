#!/usr/bin/python
# Copyright: kaiops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

DOCUMENTATION = r"""
module: kai_gpu_access_watch
short_description: Follow one GPU-access case's pods and keep what KAI made for them
version_added: 0.1.0
author:
  - kaiops contributors (@kaiops)
description:
  - Reads, without changing anything, the pods of one case (label
    C(kaiops.dev/gpu-access-case=<case>) in O(namespace)), their PodGroups and BindRequests, the
    GPU-sharing ConfigMaps of those pods and the reservation pods of their GPU groups in
    O(reservation_namespace).
  - Reads again every O(poll_s) seconds until each stage's condition holds, in order, or
    O(timeout_s) seconds have passed for the whole case; keeps one observation per stage, with
    when it was seen, whether the condition held, how many reads it took, and the first time
    every pod of the case was seen Running together.
  - Stages - V(running) every pod runs or has ended; V(ended) every pod has ended; V(decided)
    every pod got a node or its PodGroup carries KAI's reason (the one O(reasons) names for it,
    read from the condition's C(reasons[].reason), else from its message's prefix before C(:);
    never from the condition's C(reason), which KAI always sets to C(Unschedulable));
    V(bound_ended) every pod that
    got a node has ended.
  - Reaching the deadline is not a failure of the module; the report judges what was seen.
extends_documentation_fragment:
  - kaiops.runbooks.kai_namespaces.reservation
  - kaiops.runbooks.attributes
  - kaiops.runbooks.k8s_auth
options:
  namespace:
    description: The run's namespace.
    type: str
    required: true
  case:
    description: The case (value of the pods' label C(kaiops.dev/gpu-access-case)).
    type: str
    required: true
  stages:
    description: The stages to wait for, in order.
    type: list
    elements: str
    default: [ended]
  timeout_s:
    description: Seconds the whole case may take.
    type: int
    default: 120
  poll_s:
    description: Seconds between reads.
    type: int
    default: 2
  reasons:
    description:
      - Per pod, KAI's specific reason the V(decided) stage waits for on its PodGroup (for
        example V(OverLimit)), as the condition's C(reasons[].reason) or its message's prefix
        names it; a pod not named here is decided by any condition.
    type: dict
    default: {}
attributes:
  check_mode:
    support: full
    details: Read-only; runs the same under C(--check) and always reports C(changed=false).
"""

EXAMPLES = r"""
- name: Follow the fractional pod until it runs, then until it ends
  kaiops.runbooks.kai_gpu_access_watch:
    namespace: kaiops-gpu-access
    case: fractional
    stages: [running, ended]
    timeout_s: 120
  register: kai_gpu_access_watch_result
"""

RETURN = r"""
case:
  description: O(case).
  returned: success
  type: str
met:
  description: Whether every stage's condition held before the deadline.
  returned: success
  type: bool
snapshots:
  description:
    - One observation per stage - C(stage), C(met), C(seen_at) (controller clock, UTC),
      C(elapsed_s), C(polls), C(all_running), C(all_running_seen_at), and C(pods),
      C(pod_groups), C(bind_requests) (keyed by pod), C(configmaps) (by name),
      C(reservations) (by GPU group), C(access).
  returned: success
  type: list
  elements: dict
"""

from ansible_collections.kaiops.runbooks.plugins.module_utils.ansible_module import run_module
from ansible_collections.kaiops.runbooks.plugins.module_utils.args_common import (
    AUTH_ARG_SPEC,
    RESERVATION_NAMESPACE_ARG_SPEC,
    merge_specs,
)
from ansible_collections.kaiops.runbooks.plugins.module_utils.gpu_access.runner import (
    run_gpu_access_watch,
)
from ansible_collections.kaiops.runbooks.plugins.module_utils.k8s.client import KUBERNETES


def argspec():
    return merge_specs(
        RESERVATION_NAMESPACE_ARG_SPEC,
        AUTH_ARG_SPEC,
        {
            "namespace": {"type": "str", "required": True},
            "case": {"type": "str", "required": True},
            "stages": {"type": "list", "elements": "str", "default": ["ended"]},
            "timeout_s": {"type": "int", "default": 120},
            "poll_s": {"type": "int", "default": 2},
            "reasons": {"type": "dict", "default": {}},
        },
    )


def main():
    run_module(argspec(), run_gpu_access_watch, libraries=[KUBERNETES])


if __name__ == "__main__":
    main()
