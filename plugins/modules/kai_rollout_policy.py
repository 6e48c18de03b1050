#!/usr/bin/python
# Copyright: kaiops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

DOCUMENTATION = r"""
module: kai_rollout_policy
short_description: Judge the change request's failed-gate policy and waves
version_added: 0.1.0
author:
  - kaiops contributors (@kaiops)
description:
  - The failed-gate policy (C(rollback), C(pause), or C(continue) with a recorded decision and
    approver) and the waves are judged as request gates; a malformed one makes the request
    malformed (RV(well_formed)). The cost rate is recorded for the report.
  - Touches no cluster.
extends_documentation_fragment:
  - kaiops.runbooks.journal
  - kaiops.runbooks.attributes
options:
  on_failed_gate:
    description: The failed-gate policy (C(kaiops_rollout_on_failed_gate)).
    type: raw
  waves:
    description: The waves (C(kaiops_rollout_waves)).
    type: raw
  canary:
    description:
      - The canary group's name (C(kaiops_rollout_canary)), or none. Judged as the request gate
        C(canary_group) - a group of the inventory with clusters, all of them in this run and
        first in the play - its clusters are wave 1 and the recorded waves the play's serial.
    type: raw
  canary_hosts:
    description:
      - The canary group's clusters in inventory order (C(groups[kaiops_rollout_canary])), or
        none.
    type: list
    elements: str
  hosts:
    description: The play's hosts in order (C(ansible_play_hosts_all)).
    type: list
    elements: str
    default: []
  failure_budget:
    description:
      - Clusters per wave after the first (the canary) that may fail before the waves after it
        do not start (C(kaiops_rollout_failure_budget), judged by the request check). The canary
        allows none whatever the budget.
    type: int
    default: 0
  soak_s:
    description:
      - Seconds each cluster soaks after its verification passed before it is verified again
        (C(kaiops_rollout_soak_s), judged by the request check); recorded for the role and the
        report. 0 is no soak.
    type: int
    default: 0
  progress_deadline_s:
    description:
      - Seconds a cluster's change may take from the start of its upgrade to its decision
        (C(kaiops_rollout_progress_deadline_s), judged by the request check); over it the gate
        C(progress_deadline) fails at the decision. 0 is no deadline.
    type: int
    default: 0
  rate:
    description: Cost per available GPU-hour.
    type: raw
attributes:
  check_mode:
    support: full
    details:
      - Reads no cluster and changes nothing; runs the same under C(--check).
seealso:
  - module: kaiops.runbooks.kai_rollout_report
"""

EXAMPLES = r"""
- name: Judge the failed-gate policy and the waves
  kaiops.runbooks.kai_rollout_policy:
    on_failed_gate: rollback
    waves: [1, "25%", "100%"]
    canary: "{{ kaiops_rollout_canary | default('') }}"
    canary_hosts: "{{ groups.get(kaiops_rollout_canary | default('')) }}"
    hosts: "{{ ansible_play_hosts_all }}"
    failure_budget: 1
    soak_s: 600
    progress_deadline_s: 1800
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
well_formed:
  description: True when the change request is still well-formed.
  returned: always
  type: bool
"""

from ansible_collections.kaiops.runbooks.plugins.module_utils.ansible_module import run_module
from ansible_collections.kaiops.runbooks.plugins.module_utils.args_common import (
    JOURNAL_ARG_SPEC,
    merge_specs,
)
from ansible_collections.kaiops.runbooks.plugins.module_utils.rollout.change_runner import (
    run_rollout_policy,
)

# The shared action plugin gives `cluster`, when the task leaves it out, the host the task runs for.
CLUSTER_FROM_HOST = True


def argspec():
    return merge_specs(
        JOURNAL_ARG_SPEC,
        {
            "on_failed_gate": {"type": "raw"},
            "waves": {"type": "raw"},
            "canary": {"type": "raw"},
            "canary_hosts": {"type": "list", "elements": "str"},
            "hosts": {"type": "list", "elements": "str", "default": []},
            "failure_budget": {"type": "int", "default": 0},
            "soak_s": {"type": "int", "default": 0},
            "progress_deadline_s": {"type": "int", "default": 0},
            "rate": {"type": "raw"},
        },
    )


def main():
    run_module(argspec(), run_rollout_policy)


if __name__ == "__main__":
    main()
