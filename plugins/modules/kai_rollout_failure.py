#!/usr/bin/python
# Copyright: kaiops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

DOCUMENTATION = r"""
module: kai_rollout_failure
short_description: Record in a cluster's rollout record the task that failed
version_added: 0.1.0
author:
  - kaiops contributors (@kaiops)
description:
  - A task of an operation failed; O(stage) says where, and so how the record takes it.
  - C(request), C(cluster) - a failed gate and a failed step, both with the task's message.
  - C(change) - the change step that failed (the verification once the upgrade is recorded, the
    upgrade before), and the decision made from it.
  - C(rollback) - the rollback failed, with what was restored before it failed (O(restore)).
  - Touches no cluster.
extends_documentation_fragment:
  - kaiops.runbooks.journal
  - kaiops.runbooks.attributes
options:
  stage:
    description: Where the task failed.
    type: str
    choices: [request, cluster, change, rollback]
    required: true
  task:
    description: The name of the task that failed.
    type: str
  msg:
    description: Its message.
    type: str
  restore:
    description:
      - With O(stage=rollback), the C(restore) of M(kaiops.runbooks.kai_rollout_restore) when it
        ran.
    type: dict
attributes:
  check_mode:
    support: full
    details:
      - Reads no cluster and changes nothing; runs the same under C(--check).
seealso:
  - module: kaiops.runbooks.kai_rollout_report
"""

EXAMPLES = r"""
- name: Record why the cluster could not be checked
  kaiops.runbooks.kai_rollout_failure:
    stage: cluster
    task: "{{ ansible_failed_task.name }}"
    msg: "{{ ansible_failed_result.msg | default('no message') }}"
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
"""

from ansible_collections.kaiops.runbooks.plugins.module_utils.ansible_module import run_module
from ansible_collections.kaiops.runbooks.plugins.module_utils.args_common import (
    JOURNAL_ARG_SPEC,
    merge_specs,
)
from ansible_collections.kaiops.runbooks.plugins.module_utils.rollout.runner import (
    run_rollout_failure,
)

# The shared action plugin gives `cluster`, when the task leaves it out, the host the task runs for.
CLUSTER_FROM_HOST = True


def argspec():
    return merge_specs(
        JOURNAL_ARG_SPEC,
        {
            "stage": {
                "type": "str",
                "choices": ["request", "cluster", "change", "rollback"],
                "required": True,
            },
            "task": {"type": "str"},
            "msg": {"type": "str"},
            "restore": {"type": "dict"},
        },
    )


def main():
    run_module(argspec(), run_rollout_failure)


if __name__ == "__main__":
    main()
