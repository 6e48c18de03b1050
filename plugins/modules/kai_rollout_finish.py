#!/usr/bin/python
# Copyright: kaiops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

DOCUMENTATION = r"""
module: kai_rollout_finish
short_description: Decide a cluster from everything its rollout record holds
version_added: 0.1.0
author:
  - kaiops contributors (@kaiops)
description:
  - The decision made from the record and the change's wall-clock
    duration.
  - Touches no cluster.
extends_documentation_fragment:
  - kaiops.runbooks.journal
  - kaiops.runbooks.attributes
options:
  started_wall:
    description: When the change began (epoch seconds).
    type: float
  finished_wall:
    description: When it ended (epoch seconds); now when omitted.
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
- name: Decide the cluster
  kaiops.runbooks.kai_rollout_finish:
    started_wall: "{{ kai_rollout_change_started }}"
  register: kai_rollout_finished
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
summary:
  description: The decision and every step with its status, on one line.
  returned: always
  type: str
  sample: APPROVED - request done, inventory done, governance done
"""

from ansible_collections.kaiops.runbooks.plugins.module_utils.ansible_module import run_module
from ansible_collections.kaiops.runbooks.plugins.module_utils.args_common import (
    JOURNAL_ARG_SPEC,
    merge_specs,
)
from ansible_collections.kaiops.runbooks.plugins.module_utils.rollout.change_runner import (
    run_rollout_finish,
)

# The shared action plugin gives `cluster`, when the task leaves it out, the host the task runs for.
CLUSTER_FROM_HOST = True


def argspec():
    return merge_specs(
        JOURNAL_ARG_SPEC,
        {
            "started_wall": {"type": "float"},
            "finished_wall": {"type": "float"},
        },
    )


def main():
    run_module(argspec(), run_rollout_finish)


if __name__ == "__main__":
    main()
