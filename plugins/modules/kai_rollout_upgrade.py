#!/usr/bin/python
# Copyright: kaiops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

DOCUMENTATION = r"""
module: kai_rollout_upgrade
short_description: Record the upgrade's or the downgrade's result
version_added: 0.1.0
author:
  - kaiops contributors (@kaiops)
description:
  - Helm's result, the release after it, the version that runs (M(kaiops.runbooks.kai_identify))
    and the bounded rollout wait, judged as the upgrade's (O(stage=upgrade)) or the rollback's
    (O(stage=rollback)) gates. What the record knows - the revision and version before the
    change, the target - is filled in when O(result) leaves it out.
  - RV(passed) is true when the upgrade is done - every gate so far passed.
  - Touches no cluster.
extends_documentation_fragment:
  - kaiops.runbooks.journal
  - kaiops.runbooks.attributes
options:
  stage:
    description: C(upgrade) (to the version under test) or C(rollback) (the downgrade).
    type: str
    choices: [upgrade, rollback]
    default: upgrade
  result:
    description:
      - C(changed), C(revision_before), C(revision), C(chart), C(chart_ref), C(helm_status),
        C(identity) and C(reasons) (of M(kaiops.runbooks.kai_identify)), C(expected_version),
        C(rolled_out_s), C(timeout_s), C(started_at), C(duration_s), C(attempts), C(error),
        C(objects) (resourceVersions read right after the upgrade), C(values_repointed) (the
        paths of the release's values that named the version that ran); for a rollback also
        C(method), C(method_why), C(survivors_before), C(survivors_after),
        C(revision_target), C(hooks_deleted) (of M(kaiops.runbooks.kai_rollout_restore)
        with C(operation=hooks)).
    type: dict
    default: {}
attributes:
  check_mode:
    support: full
    details:
      - Reads no cluster and changes nothing; runs the same under C(--check).
seealso:
  - module: kaiops.runbooks.kai_rollout_report
"""

EXAMPLES = r"""
- name: Record the upgrade
  kaiops.runbooks.kai_rollout_upgrade:
    stage: upgrade
    result:
      changed: true
      revision: 3
      identity: "{{ kai_rollout_identity.identity }}"
  register: kai_rollout_upgraded
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
    run_rollout_upgrade,
)

# The shared action plugin gives `cluster`, when the task leaves it out, the host the task runs for.
CLUSTER_FROM_HOST = True


def argspec():
    return merge_specs(
        JOURNAL_ARG_SPEC,
        {
            "stage": {"type": "str", "choices": ["upgrade", "rollback"], "default": "upgrade"},
            "result": {"type": "dict", "default": {}},
        },
    )


def main():
    run_module(argspec(), run_rollout_upgrade)


if __name__ == "__main__":
    main()
