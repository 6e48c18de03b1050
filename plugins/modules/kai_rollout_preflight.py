#!/usr/bin/python
# Copyright: kaiops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

DOCUMENTATION = r"""
module: kai_rollout_preflight
short_description: Judge a cluster's inventory against the rollout's preflight gates
version_added: 0.1.0
author:
  - kaiops contributors (@kaiops)
description:
  - The cluster's read-only inventory (C(kai_inventory__output)) is judged against the cluster
    gates (reachable, a KAI Helm release, the current version, the rollback target recorded;
    declared as data) and the snapshot of the state a rollback needs is
    planned; RV(snapshot_due) says whether to take it and RV(selections) what to take.
  - With O(judge=false) (rollback.yml) only what runs is recorded - the version, the
    implementation's label and the inventory's status.
  - Touches no cluster.
extends_documentation_fragment:
  - kaiops.runbooks.kai_namespaces.reservation
  - kaiops.runbooks.journal
  - kaiops.runbooks.attributes
options:
  inventory:
    description: The cluster's C(kai_inventory__output).
    type: dict
    default: {}
  judge:
    description: Judge the preflight gates and plan the snapshot; false records what runs only.
    type: bool
    default: true
  namespace:
    description: Namespace of the KAI release (snapshot selections).
    type: str
    default: kai-scheduler
  helm_release:
    description: Name of KAI's Helm release.
    type: str
    default: kai-scheduler
attributes:
  check_mode:
    support: full
    details:
      - Reads no cluster and changes nothing; runs the same under C(--check).
seealso:
  - module: kaiops.runbooks.kai_rollout_report
"""

EXAMPLES = r"""
- name: Judge the cluster's inventory
  kaiops.runbooks.kai_rollout_preflight:
    inventory: "{{ kai_inventory__output }}"
  register: kai_rollout_judged
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
snapshot_due:
  description: Whether every gate passed and the snapshot is to be taken.
  returned: when O(judge=true)
  type: bool
selections:
  description: The M(kaiops.runbooks.kai_snapshot) selections of the planned snapshot.
  returned: when O(judge=true)
  type: list
  elements: dict
message:
  description: One message naming every failed gate and its fix; empty when all passed.
  returned: when O(judge=true)
  type: str
"""

from ansible_collections.kaiops.runbooks.plugins.module_utils.ansible_module import run_module
from ansible_collections.kaiops.runbooks.plugins.module_utils.args_common import (
    JOURNAL_ARG_SPEC,
    RESERVATION_NAMESPACE_ARG_SPEC,
    merge_specs,
)
from ansible_collections.kaiops.runbooks.plugins.module_utils.rollout.runner import (
    run_rollout_inventory,
)

# The shared action plugin gives `cluster`, when the task leaves it out, the host the task runs for.
CLUSTER_FROM_HOST = True


def argspec():
    return merge_specs(
        RESERVATION_NAMESPACE_ARG_SPEC,
        JOURNAL_ARG_SPEC,
        {
            "inventory": {"type": "dict", "default": {}},
            "judge": {"type": "bool", "default": True},
            "namespace": {"type": "str", "default": "kai-scheduler"},
            "helm_release": {"type": "str", "default": "kai-scheduler"},
        },
    )


def main():
    run_module(argspec(), run_rollout_inventory)


if __name__ == "__main__":
    main()
