#!/usr/bin/python
# Copyright: kaiops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

DOCUMENTATION = r"""
module: kai_rollout_start
short_description: Decide whether the change runs on a cluster
version_added: 0.1.0
author:
  - kaiops contributors (@kaiops)
description:
  - The cluster's wave (its batch of the play's serial over O(peers), 1 the canary) is recorded
    first.
  - RV(action) is C(skip) when the change does not run - a failed preflight gate, an earlier wave
    that failed more than it allows (the canary none, later waves the failure budget; the
    cluster is then decided C(not_started)), or C(--check) (for rollback.yml, C(--check) or a
    refused bundle) - and every change step is recorded as not run with that reason.
  - RV(action) is C(prior) when an approved run of this change at the revision that runs now
    stands - nothing is upgraded or probed again.
  - RV(action) is C(change) otherwise; RV(kai_version) is the version to install.
  - Touches no cluster. Under C(--check) the module runs (it records why nothing changes).
extends_documentation_fragment:
  - kaiops.runbooks.journal
  - kaiops.runbooks.attributes
options:
  peers:
    description:
      - The play's clusters in its order (C(ansible_play_hosts_all)), the waves are made of; a
        change that ended rolled back, paused or failed counts against its wave's failure budget.
    type: list
    elements: str
    default: []
attributes:
  check_mode:
    support: full
    details:
      - Reads no cluster and changes nothing; runs the same under C(--check).
seealso:
  - module: kaiops.runbooks.kai_rollout_report
"""

EXAMPLES = r"""
- name: Decide whether the change runs on this cluster
  kaiops.runbooks.kai_rollout_start:
    peers: "{{ ansible_play_hosts_all }}"
  register: kai_rollout_started
"""

RETURN = r"""
decision:
  description:
    - The cluster's decision so far, or null before the change
      window decided it.
  returned: always
  type: str
  sample: approved
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
action:
  description:
    - Whether the change runs on this cluster - C(change), C(skip) (every change step not run,
      the reason in the record) or C(prior) (a repeated run stands on the earlier approved one).
      This module's own; the failed-gate policy's action comes from
      M(kaiops.runbooks.kai_rollout_decision).
  returned: always
  type: str
  sample: change
kai_version:
  description:
    - The KAI version this operation installs - the change request's C(kai_version) (the
      version under test) for a rollout, the version recorded before the change for
      rollback.yml.
  returned: always
  type: str
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
    run_rollout_start,
)

# The shared action plugin gives `cluster`, when the task leaves it out, the host the task runs for.
CLUSTER_FROM_HOST = True


def argspec():
    return merge_specs(
        JOURNAL_ARG_SPEC,
        {
            "peers": {"type": "list", "elements": "str", "default": []},
        },
    )


def main():
    run_module(argspec(), run_rollout_start)


if __name__ == "__main__":
    main()
