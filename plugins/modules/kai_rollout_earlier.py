#!/usr/bin/python
# Copyright: kaiops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

DOCUMENTATION = r"""
module: kai_rollout_earlier
short_description: Find the earlier runs of this change on a cluster in the evidence store
version_added: 0.1.0
author:
  - kaiops contributors (@kaiops)
description:
  - An approved run at the revision that runs now (a repeated run then changes nothing) and the
    interrupted runs (kept, listed, resumed from) of the change request's C(kai_version) on
    the cluster.
  - Reads the evidence store only.
extends_documentation_fragment:
  - kaiops.runbooks.journal
  - kaiops.runbooks.attributes
options:
  current:
    description: C(version) and C(revision) of KAI on the cluster now.
    type: dict
    default: {}
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
- name: Find earlier runs of this change on the cluster
  kaiops.runbooks.kai_rollout_earlier:
    current:
      version: v0.16.14
      revision: 3
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
    run_rollout_earlier,
)

# The shared action plugin gives `cluster`, when the task leaves it out, the host the task runs for.
CLUSTER_FROM_HOST = True


def argspec():
    return merge_specs(
        JOURNAL_ARG_SPEC,
        {
            "current": {"type": "dict", "default": {}},
            "evidence_root": {"type": "path"},
        },
    )


def main():
    run_module(argspec(), run_rollout_earlier)


if __name__ == "__main__":
    main()
