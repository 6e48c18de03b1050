#!/usr/bin/python
# Copyright: kaiops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

DOCUMENTATION = r"""
module: kai_diagnose_info
short_description: Say why each Pending pod that KAI schedules is Pending, with the proof
version_added: 0.1.0
author:
  - kaiops contributors (@kaiops)
description:
  - Reads, without changing anything, one LIST per kind (Pods, KAI PodGroups
    C(scheduling.run.ai/v2alpha2), Queues C(scheduling.run.ai/v2), BindRequests
    C(scheduling.run.ai/v1alpha2), Nodes, KAI's Deployments), KAI's Config C(kai-config), the
    Events of the namespaces that hold Pending pods and of KAI's and the reservation namespace,
    the ConfigMaps of the namespaces that hold Pending GPU-sharing pods and, with
    O(read_logs), the recent log of KAI's scheduler, binder and pod grouper pods.
  - Gives every unbound, live pod with C(schedulerName) O(scheduler_name) exactly one cause,
    from the collection's shared classifier (also used by
    recovery.yml), tried in order, first match wins - V(scheduling_gated), V(kai_component_down),
    V(not_seen_by_kai), V(gpu_sharing_rejected), V(gang_waiting), V(queue_missing),
    V(queue_over_limit), V(no_gpu_fits), V(duplicate_reservation), V(reservation_pod_failing),
    V(bind_nil_map), V(bind_failed_other); else V(unknown) with what was read attached, never a
    guess. docs/diagnose.md says what each means and what proves it.
  - A PodGroup's specific reason is read from its scheduling condition's C(reasons[].reason), else
    from the start of its message; never from the condition's C(reason), which KAI always writes
    C(Unschedulable).
  - Sections the credentials may not read (HTTP 403) or APIs the cluster does not serve are
    recorded in RV(diagnosis.access) and named in RV(diagnosis.notes); the causes that need them
    are then not proven. Fails, with RV(status) set, only when Pods cannot be listed or the API
    server cannot be reached.
extends_documentation_fragment:
  - kaiops.runbooks.kai_namespaces.reservation
  - kaiops.runbooks.kai_namespaces
  - kaiops.runbooks.attributes
  - kaiops.runbooks.k8s_auth
options:
  cluster:
    description: Name of the cluster in the result, usually C(inventory_hostname).
    type: str
    required: true
  scheduler_name:
    description: The C(schedulerName) of the pods KAI schedules.
    type: str
    default: kai-scheduler
  namespaces:
    description: Only the Pending pods of these namespaces; empty means all.
    type: list
    elements: str
    default: []
  read_logs:
    description:
      - Read the recent log of KAI's scheduler, binder and pod grouper pods (C(pods/log)) to find
        the API server refusing them (401/403); without it such a component is only seen as down
        when its Deployment has no ready replica.
    type: bool
    default: true
  log_lines:
    description: Lines read from the end of each component's log.
    type: int
    default: 300
  log_since_s:
    description: Only log lines written in the last this many seconds.
    type: int
    default: 600
attributes:
  check_mode:
    support: full
    details: Read-only; runs the same under C(--check) and always reports C(changed=false).
"""

EXAMPLES = r"""
- name: Say why each Pending pod is Pending
  kaiops.runbooks.kai_diagnose_info:
    cluster: "{{ inventory_hostname }}"
    kai_namespace: kai-scheduler
  register: kai_diagnose_info_result

- name: Show the causes
  ansible.builtin.debug:
    msg: "{{ kai_diagnose_info_result.diagnosis.by_cause }}"
"""

RETURN = r"""
diagnosis:
  description: The cluster's diagnosis; docs/diagnose.md describes every cause.
  returned: success
  type: dict
  contains:
    cluster:
      description: O(cluster).
      type: str
    status:
      description: V(ok), or V(partial) when a section could not be read (RV(diagnosis.notes)).
      type: str
      sample: ok
    read_at:
      description: When the cluster was read (UTC, RFC 3339).
      type: str
    namespaces:
      description: O(namespaces).
      type: list
      elements: str
    pending:
      description: How many Pending pods KAI schedules were diagnosed.
      type: int
    by_cause:
      description:
        - Per cause that holds a pod, in the order causes are tried - C(cause), C(title),
          C(count), C(oldest_wait_s), C(oldest_pod), C(step) (the recovery.yml step that acts
          on it, or null) and C(owner).
      type: list
      elements: dict
      sample:
        - cause: queue_over_limit
          title: its queue is over its GPU limit
          count: 2
          oldest_wait_s: 3600.0
          oldest_pod: team-a/train-0
          step: null
          owner: "the queue administrator: raise the queue's limit, or wait for its work to finish"
    pods:
      description:
        - One entry per Pending pod - C(pod) (namespace, name, uid), C(cause), C(title),
          C(stage), C(evidence) (the proofs, each C(kind), C(namespace), C(name), C(field),
          C(value)), C(step), C(owner), C(since), C(waiting_s).
      type: list
      elements: dict
    notes:
      description: Each section not read, and why its causes could not be proven.
      type: list
      elements: str
    access:
      description: Per section read, V(ok), V(forbidden), V(not_served) or V(not_asked).
      type: dict
    api_calls:
      description: HTTP requests made.
      type: int
status:
  description: On failure, V(unreachable), V(unauthorized), V(forbidden) or V(error).
  returned: failure
  type: str
  sample: unreachable
"""

from ansible_collections.kaiops.runbooks.plugins.module_utils.ansible_module import run_module
from ansible_collections.kaiops.runbooks.plugins.module_utils.args_common import (
    AUTH_ARG_SPEC,
    KAI_NAMESPACE_ARG_SPEC,
    RESERVATION_NAMESPACE_ARG_SPEC,
    merge_specs,
)
from ansible_collections.kaiops.runbooks.plugins.module_utils.diagnose.runner import (
    run_diagnose_info,
)
from ansible_collections.kaiops.runbooks.plugins.module_utils.k8s.client import KUBERNETES


def argspec():
    return merge_specs(
        KAI_NAMESPACE_ARG_SPEC,
        RESERVATION_NAMESPACE_ARG_SPEC,
        AUTH_ARG_SPEC,
        {
            "cluster": {"type": "str", "required": True},
            "scheduler_name": {"type": "str", "default": "kai-scheduler"},
            "namespaces": {"type": "list", "elements": "str", "default": []},
            "read_logs": {"type": "bool", "default": True},
            "log_lines": {"type": "int", "default": 300},
            "log_since_s": {"type": "int", "default": 600},
        },
    )


def main():
    run_module(argspec(), run_diagnose_info, libraries=[KUBERNETES])


if __name__ == "__main__":
    main()
