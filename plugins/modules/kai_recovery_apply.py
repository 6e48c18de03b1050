#!/usr/bin/python
# Copyright: kaiops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

DOCUMENTATION = r"""
module: kai_recovery_apply
short_description: Apply the enabled recovery steps to the objects found, recording each first
version_added: 0.1.0
author:
  - kaiops contributors (@kaiops)
description:
  - Plans one intervention per object found by M(kaiops.runbooks.kai_recovery_info) for each
    step in O(steps) only. A step not listed plans nothing and changes nothing.
  - Steps. V(delete_failed_bindrequests) deletes each failed BindRequest found.
    V(delete_stale_reservation_pods) deletes each stale reservation pod found.
    V(delete_duplicate_reservation_pods) deletes each extra reservation pod of a GPU group whose
    device no bound pod of the group reads (KAI-Scheduler issue 1673).
    V(delete_dataless_configmaps) deletes the data-less capabilities ConfigMap of each pod still
    Pending, so the binder's next retry creates it with the three keys and binds.
    V(delete_orphan_configmaps) deletes each orphan GPU-sharing ConfigMap found.
    V(restart_binder) patches the binder Deployment's pod template annotation
    C(kubectl.kubernetes.io/restartedAt) (a rolling restart), when a bind failure was found.
  - For each intervention, in this order - GET the object (skip it when it is gone or has a new
    UID); write its full sanitized snapshot under C(interventions/) in the run's evidence folder
    (never Secret data); append a C(recorded) line (what, when, why, which task, snapshot file and
    SHA-256) to C(interventions.jsonl), fsynced; only then DELETE (or PATCH) that one object with
    preconditions on the recorded UID and resourceVersion; append the outcome line.
  - Never a collection or label-selector delete; only objects named in O(findings), within
    O(namespaces) when given.
  - Fails, changing nothing, when there is something to apply and no evidence folder to record
    it in.
extends_documentation_fragment:
  - kaiops.runbooks.kai_namespaces
  - kaiops.runbooks.attributes
  - kaiops.runbooks.k8s_auth
  - kaiops.runbooks.evidence
options:
  cluster:
    description: Name of the cluster, usually C(inventory_hostname); prefixes intervention ids.
    type: str
    required: true
  findings:
    description: The RV(kaiops.runbooks.kai_recovery_info#module:findings) to act on.
    type: list
    elements: dict
    required: true
  steps:
    description: The enabled steps; empty means nothing is done.
    type: list
    elements: str
    choices:
      - delete_failed_bindrequests
      - delete_stale_reservation_pods
      - delete_duplicate_reservation_pods
      - delete_dataless_configmaps
      - delete_orphan_configmaps
      - restart_binder
    default: []
  namespaces:
    description: Act only on objects in these namespaces; empty means every finding's namespace.
    type: list
    elements: str
    default: []
  binder:
    description:
      - The binder Deployment as RV(kaiops.runbooks.kai_recovery_info#module:binder) returns it.
    type: dict
  task:
    description: The task that applies the steps, recorded with every intervention.
    type: str
    required: true
attributes:
  check_mode:
    support: full
    details:
      - Under C(--check) nothing is written to the cluster; each planned intervention is
        journaled as C(not_applied).
seealso:
  - module: kaiops.runbooks.kai_recovery_info
"""

EXAMPLES = r"""
- name: Delete the stale reservation pods found, recording each first
  kaiops.runbooks.kai_recovery_apply:
    cluster: "{{ inventory_hostname }}"
    findings: "{{ kai_recovery_found.findings }}"
    steps: [delete_stale_reservation_pods]
    task: Apply the enabled recovery steps
"""

RETURN = r"""
interventions:
  description:
    - One entry per planned intervention - C(id), C(step), C(action), C(target), C(findings),
      C(why), C(task), C(outcome) (V(deleted), V(restarted), V(skipped), V(conflict), V(gone),
      V(failed), V(not_applied)), C(recorded_seq), C(recorded_at), C(applied_seq),
      C(applied_at), C(deletion_timestamp), C(snapshot), C(snapshot_sha256).
  returned: success
  type: list
  elements: dict
idle_steps:
  description: Enabled steps with nothing to do, and why.
  returned: success
  type: list
  elements: dict
journal:
  description: Path of interventions.jsonl, or null when nothing was planned.
  returned: success
  type: str
"""

from ansible_collections.kaiops.runbooks.plugins.module_utils.ansible_module import run_module
from ansible_collections.kaiops.runbooks.plugins.module_utils.args_common import (
    AUTH_ARG_SPEC,
    EVIDENCE_ARG_SPEC,
    KAI_NAMESPACE_ARG_SPEC,
    merge_specs,
)
from ansible_collections.kaiops.runbooks.plugins.module_utils.k8s.client import KUBERNETES
from ansible_collections.kaiops.runbooks.plugins.module_utils.recovery.runner import (
    run_recovery_apply,
)
from ansible_collections.kaiops.runbooks.plugins.module_utils.recovery.service import STEPS


def argspec():
    return merge_specs(
        KAI_NAMESPACE_ARG_SPEC,
        AUTH_ARG_SPEC,
        EVIDENCE_ARG_SPEC,
        {
            "cluster": {"type": "str", "required": True},
            "findings": {"type": "list", "elements": "dict", "required": True},
            "steps": {"type": "list", "elements": "str", "choices": list(STEPS), "default": []},
            "namespaces": {"type": "list", "elements": "str", "default": []},
            "binder": {"type": "dict"},
            "task": {"type": "str", "required": True},
        },
    )


def main():
    run_module(argspec(), run_recovery_apply, libraries=[KUBERNETES])


if __name__ == "__main__":
    main()
