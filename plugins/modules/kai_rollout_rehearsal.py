#!/usr/bin/python
# Copyright: kaiops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

DOCUMENTATION = r"""
module: kai_rollout_rehearsal
short_description: Record the newest rollback rehearsal of the change's version pair
version_added: 0.1.0
author:
  - kaiops contributors (@kaiops)
description:
  - The newest rollback rehearsal of the change's version pair in the evidence store (a
    rollback.yml run, or a rollout that rolled back after a failed gate, from the target back
    to the version that ran before, done and verified) and, when every verification gate
    passed, the approval's gate and step - C(not_approved) without one, unless the request's
    C(rehearsal_waiver) waives it.
  - A rehearsal on one of O(peers), the other clusters of O(group), counts too, and is recorded as
    such.
  - Reads the evidence store only.
extends_documentation_fragment:
  - kaiops.runbooks.journal
  - kaiops.runbooks.attributes
options:
  group:
    description: The cluster's rehearsal group (C(kaiops_rollout_rehearsal_group)).
    type: str
  peers:
    description: The inventory's other clusters of that group.
    type: list
    elements: str
    default: []
  evidence_root:
    description: The evidence store. Default - the run's context, given by the action plugin.
    type: path
attributes:
  check_mode:
    support: full
    details:
      - Reads no cluster and changes nothing; runs the same under C(--check).
seealso:
  - module: kaiops.runbooks.kai_rollout_report
"""

EXAMPLES = r"""
- name: Find the newest rollback rehearsal of the change's version pair
  kaiops.runbooks.kai_rollout_rehearsal:
    group: gpu-prod
    peers: [lab-b]
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
from ansible_collections.kaiops.runbooks.plugins.module_utils.rollout.change_runner import (
    run_rollout_rehearsal,
)

# The shared action plugin gives `cluster`, when the task leaves it out, the host the task runs for.
CLUSTER_FROM_HOST = True


def argspec():
    return merge_specs(
        JOURNAL_ARG_SPEC,
        {
            "group": {"type": "str"},
            "peers": {"type": "list", "elements": "str", "default": []},
            "evidence_root": {"type": "path"},
        },
    )


def main():
    run_module(argspec(), run_rollout_rehearsal)


if __name__ == "__main__":
    main()
