#!/usr/bin/python
# Copyright: kaiops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

DOCUMENTATION = r"""
module: kai_rollout_decision
short_description: Apply the failed-gate policy to a cluster's verification
version_added: 0.1.0
author:
  - kaiops contributors (@kaiops)
description:
  - RV(action) says what to do next - C(none) (every verification gate passed), C(rollback),
    C(pause) or C(continue), as the change request's policy says for a failed gate
   .
  - Touches no cluster.
extends_documentation_fragment:
  - kaiops.runbooks.journal
  - kaiops.runbooks.attributes
attributes:
  check_mode:
    support: full
    details:
      - Reads no cluster and changes nothing; runs the same under C(--check).
seealso:
  - module: kaiops.runbooks.kai_rollout_report
"""

EXAMPLES = r"""
- name: Apply the failed-gate policy
  kaiops.runbooks.kai_rollout_decision:
  register: kai_rollout_decided
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
before:
  description: The release recorded before the change, which a rollback returns to.
  returned: always
  type: dict
  contains:
    version:
      description: The KAI version that ran before the change.
      type: str
    revision:
      description: Its Helm revision.
      type: int
    chart:
      description: Its chart.
      type: str
    snapshot:
      description: The snapshot folder of KAI's objects before the change.
      type: str
"""

from ansible_collections.kaiops.runbooks.plugins.module_utils.ansible_module import run_module
from ansible_collections.kaiops.runbooks.plugins.module_utils.args_common import (
    JOURNAL_ARG_SPEC,
    merge_specs,
)
from ansible_collections.kaiops.runbooks.plugins.module_utils.rollout.change_runner import (
    run_rollout_decision,
)

# The shared action plugin gives `cluster`, when the task leaves it out, the host the task runs for.
CLUSTER_FROM_HOST = True


def argspec():
    return merge_specs(
        JOURNAL_ARG_SPEC,
        {},
    )


def main():
    run_module(argspec(), run_rollout_decision)


if __name__ == "__main__":
    main()
