#!/usr/bin/python
# Copyright: kaiops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

DOCUMENTATION = r"""
module: kai_rollout_rollback
short_description: Record a rollback's restoration and its time to restore
version_added: 0.1.0
author:
  - kaiops contributors (@kaiops)
description:
  - The restoration of KAI's configuration (M(kaiops.runbooks.kai_rollout_restore)), the time to
    restore and to verified, and, after a failed gate, the time from the decision.
  - Touches no cluster.
extends_documentation_fragment:
  - kaiops.runbooks.journal
  - kaiops.runbooks.attributes
options:
  restore:
    description: The C(restore) of M(kaiops.runbooks.kai_rollout_restore).
    type: dict
  time_to_restore_s:
    description: From the start of the downgrade until KAI ran the recorded version, rolled out.
    type: float
  time_to_verified_s:
    description: From the start of the downgrade until the verification ended.
    type: float
attributes:
  check_mode:
    support: full
    details:
      - Reads no cluster and changes nothing; runs the same under C(--check).
seealso:
  - module: kaiops.runbooks.kai_rollout_report
"""

EXAMPLES = r"""
- name: Record the rollback and its time to restore
  kaiops.runbooks.kai_rollout_rollback:
    restore: "{{ kai_rollout_restored.restore }}"
    time_to_restore_s: 42.1
    time_to_verified_s: 130.4
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
    run_rollout_rollback,
)

# The shared action plugin gives `cluster`, when the task leaves it out, the host the task runs for.
CLUSTER_FROM_HOST = True


def argspec():
    return merge_specs(
        JOURNAL_ARG_SPEC,
        {
            "restore": {"type": "dict"},
            "time_to_restore_s": {"type": "float"},
            "time_to_verified_s": {"type": "float"},
        },
    )


def main():
    run_module(argspec(), run_rollout_rollback)


if __name__ == "__main__":
    main()
