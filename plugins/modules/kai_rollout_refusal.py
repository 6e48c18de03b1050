#!/usr/bin/python
# Copyright: kaiops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

DOCUMENTATION = r"""
module: kai_rollout_refusal
short_description: Start a cluster's rollout record from the request the request check refused
version_added: 0.1.0
author:
  - kaiops contributors (@kaiops)
description:
  - The request check of every playbook (M(kaiops.runbooks.kai_request)) refused the request - the
    cluster's record, in the run's journal, starts with one failed request gate per problem.
    Nothing of the request is rendered or read.
  - Without a bundle to record it in, the module fails with the refusal's reasons.
  - Touches no cluster.
extends_documentation_fragment:
  - kaiops.runbooks.journal
  - kaiops.runbooks.attributes
options:
  problems:
    description: The check's problems, each C(field), C(message) and C(fix).
    type: list
    elements: dict
    default: []
  request:
    description: The request as read (a template a person should have written left out).
    type: dict
    default: {}
  operation:
    description: The playbook - C(rollout), or C(rollback) (rollback.yml).
    type: str
    choices: [rollout, rollback]
    default: rollout
attributes:
  check_mode:
    support: full
    details:
      - Reads no cluster and changes nothing; runs the same under C(--check).
seealso:
  - module: kaiops.runbooks.kai_rollout_report
"""

EXAMPLES = r"""
- name: Record the request the check refused
  kaiops.runbooks.kai_rollout_refusal:
    problems: "{{ kai_request__output.problems }}"
    request: "{{ kai_request__output.request }}"
  when: not kai_request__output.passed
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
message:
  description: One message naming every failed gate and its fix.
  returned: always
  type: str
"""

from ansible_collections.kaiops.runbooks.plugins.module_utils.ansible_module import run_module
from ansible_collections.kaiops.runbooks.plugins.module_utils.args_common import (
    JOURNAL_ARG_SPEC,
    merge_specs,
)
from ansible_collections.kaiops.runbooks.plugins.module_utils.rollout.runner import (
    run_rollout_refusal,
)

# The shared action plugin gives `cluster`, when the task leaves it out, the host the task runs for.
CLUSTER_FROM_HOST = True


def argspec():
    return merge_specs(
        JOURNAL_ARG_SPEC,
        {
            "problems": {"type": "list", "elements": "dict", "default": []},
            "request": {"type": "dict", "default": {}},
            "operation": {"type": "str", "choices": ["rollout", "rollback"], "default": "rollout"},
        },
    )


def main():
    run_module(argspec(), run_rollout_refusal)


if __name__ == "__main__":
    main()
