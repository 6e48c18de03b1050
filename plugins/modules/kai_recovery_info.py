#!/usr/bin/python
# Copyright: kaiops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

DOCUMENTATION = r"""
module: kai_recovery_info
short_description: Find work left pending by failed KAI binds, and observe whether it recovers
version_added: 0.1.0
author:
  - kaiops contributors (@kaiops)
description:
  - Reads, without changing anything, one LIST per kind (Pods, ConfigMaps, KAI BindRequests
    C(scheduling.run.ai/v1alpha2)), the binder Deployment and namespace kube-system, and returns
    findings - what a failed bind leaves behind after the KAI binder nil-data ConfigMap panic
    (the release that fixes it is C(pair.patched) of the collection's C(meta/kai_releases.yml)).
  - Finding kinds. V(failed_bind) a pod with annotation C(gpu-fraction), Pending and unbound, with
    condition C(PodBound=False) or a failed BindRequest. V(failed_bindrequest) a BindRequest in
    phase C(Failed). V(stale_reservation_pod) a pod in the reservation namespace whose
    C(runai-gpu-group) no live bound pod uses. V(duplicate_reservation_pod) a second live
    reservation pod of a GPU group an older one holds (KAI-Scheduler issue 1673).
    V(orphan_configmap) a GPU-sharing ConfigMap (named
    C(<prefix>-<index>) or C(<prefix>-<index>-evar) after a pod's C(runai/shared-gpu-configmap)
    annotation, or owned by exactly one Pod) whose owner pod is gone or not bound.
    V(unbound_group_pod) a pod with a C(runai-gpu-group) label and no nodeName.
    V(pending_unschedulable) a fractional pod Pending for resources.
  - Each finding is classified with its evidence. V(nil_map_panic) the failure says
    "assignment to entry in nil map". V(stale_after_failed_bind) left by a failed bind.
    V(other_bind_error) a bind failed for another reason. V(unrelated_pending) Pending for
    resources - not this bug. V(undetermined) stale state with no failure on record.
  - An API the cluster does not serve is stated in RV(notes), e.g. "BindRequest API not served on
    this cluster - cannot find failed binds"; it is never reported as "none found".
  - Also returns the observation window derived from the cluster's measured pod start latencies.
  - With O(baseline), also judges each earlier finding recovered, not recovered or not
    applicable (RV(observation)).
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
  binder_deployment:
    description: Name of the binder Deployment.
    type: str
    default: binder
  namespaces:
    description: Only findings in these namespaces; empty means all.
    type: list
    elements: str
    default: []
  min_age_s:
    description:
      - Stale-state findings (reservation pods, ConfigMaps, unbound group pods) count only
        objects at least this old, so a bind in progress is not taken for stale state.
    type: int
    default: 300
  window_s:
    description: Observation window in seconds; 0 derives it from the measured start latencies.
    type: int
    default: 0
  window_rule:
    description:
      - Overrides of the derivation rule C(multiplier), C(floor_s), C(cap_s), C(fallback_s),
        C(lookback_s), C(max_samples) (defaults 3, 30, 900, 120, 86400, 200).
    type: dict
    default: {}
  baseline:
    description: Findings of an earlier call to judge now; omit to only find.
    type: list
    elements: dict
  interventions:
    description: The interventions kai_recovery_apply returned, to date deletions.
    type: list
    elements: dict
    default: []
  observe_started_at:
    description: Epoch seconds when observation started; RV(observation.elapsed_s) counts from it.
    type: float
attributes:
  check_mode:
    support: full
    details: Read-only; runs the same under C(--check) and always reports C(changed=false).
seealso:
  - module: kaiops.runbooks.kai_recovery_apply
  - module: kaiops.runbooks.kai_inventory_info
"""

EXAMPLES = r"""
- name: Find what failed binds left behind
  kaiops.runbooks.kai_recovery_info:
    cluster: "{{ inventory_hostname }}"
    kubeconfig: "{{ kaiops_kubeconfig }}"
  register: kai_recovery_found
"""

RETURN = r"""
findings:
  description:
    - One entry per object found; C(id), C(kind), C(object), C(classification), C(evidence),
      C(step), C(since).
  returned: success
  type: list
  elements: dict
notes:
  description: What could not be read and what that means, e.g. the BindRequest API not served.
  returned: success
  type: list
  elements: str
access:
  description: Per read, V(ok), V(not_served), V(forbidden) or V(absent).
  returned: success
  type: dict
disposable:
  description: Whether kube-system carries C(kaiops.dev/disposable=true); null when unreadable.
  returned: success
  type: bool
binder:
  description: The binder Deployment (apiVersion, kind, namespace, name, uid), or null.
  returned: success
  type: dict
window:
  description: C(window_s), C(source), C(median_start_s), C(samples), C(rule), C(newest_samples).
  returned: success
  type: dict
pending:
  description:
    - Without O(baseline) - each Pending pod that KAI schedules with its one cause, classified as
      M(kaiops.runbooks.kai_diagnose_info) does (the shared classifier; no component
      log is read here). docs/diagnose.md describes the causes.
  returned: when baseline is not given
  type: dict
  contains:
    by_cause:
      description:
        - Per cause - C(cause), C(count), C(oldest_wait_s), C(oldest_pod), C(step), C(owner).
      type: list
      elements: dict
    pods:
      description: Per pod, C(pod), C(cause), C(evidence), C(step), C(owner), C(waiting_s).
      type: list
      elements: dict
    notes:
      description: The reads that could not be made, so the causes that need them are unproven.
      type: list
      elements: str
observation:
  description:
    - With O(baseline) - C(outcomes) (finding, verdict, at, why), C(pending), C(summary),
      C(read_at), C(elapsed_s).
  returned: when baseline is given
  type: dict
  contains:
    outcomes:
      description: Per baseline finding, C(finding), C(verdict), C(at), C(why), C(read_at).
      type: list
      elements: dict
    pending:
      description: Findings not recovered yet.
      type: int
    summary:
      description: Counts by verdict.
      type: dict
    read_at:
      description: When the cluster was read (UTC).
      type: str
    elapsed_s:
      description: Seconds since O(observe_started_at).
      type: float
"""

from ansible_collections.kaiops.runbooks.plugins.module_utils.ansible_module import run_module
from ansible_collections.kaiops.runbooks.plugins.module_utils.args_common import (
    AUTH_ARG_SPEC,
    KAI_NAMESPACE_ARG_SPEC,
    RESERVATION_NAMESPACE_ARG_SPEC,
    merge_specs,
)
from ansible_collections.kaiops.runbooks.plugins.module_utils.k8s.client import KUBERNETES
from ansible_collections.kaiops.runbooks.plugins.module_utils.recovery.runner import (
    run_recovery_info,
)


def argspec():
    return merge_specs(
        KAI_NAMESPACE_ARG_SPEC,
        RESERVATION_NAMESPACE_ARG_SPEC,
        AUTH_ARG_SPEC,
        {
            "cluster": {"type": "str", "required": True},
            "binder_deployment": {"type": "str", "default": "binder"},
            "namespaces": {"type": "list", "elements": "str", "default": []},
            "min_age_s": {"type": "int", "default": 300},
            "window_s": {"type": "int", "default": 0},
            "window_rule": {"type": "dict", "default": {}},
            "baseline": {"type": "list", "elements": "dict"},
            "interventions": {"type": "list", "elements": "dict", "default": []},
            "observe_started_at": {"type": "float"},
        },
    )


def main():
    run_module(argspec(), run_recovery_info, libraries=[KUBERNETES])


if __name__ == "__main__":
    main()
