#!/usr/bin/python
# Copyright: kaiops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

DOCUMENTATION = r"""
module: kai_rollout_before
short_description: Record the snapshot and the release as they were before the change
version_added: 0.1.0
author:
  - kaiops contributors (@kaiops)
description:
  - The snapshot taken (results of M(kaiops.runbooks.kai_snapshot) and
    M(kaiops.runbooks.kai_helm_snapshot)) is recorded with its gate and evidence, then the
    release before the change - the version the inventory read, O(revision), O(chart),
    O(snapshot); when an interrupted run is resumed, the state that run recorded.
  - Touches no cluster.
extends_documentation_fragment:
  - kaiops.runbooks.journal
  - kaiops.runbooks.attributes
options:
  objects:
    description: The result of M(kaiops.runbooks.kai_snapshot) (its C(count) and C(folder)).
    type: dict
    default: {}
  helm:
    description:
      - The result of M(kaiops.runbooks.kai_helm_snapshot) (its C(revision) and C(folder)), or
        null when helm was not used.
    type: dict
  use_helm:
    description: Whether helm was used (a Helm snapshot is then expected).
    type: bool
    default: true
  revision:
    description: The Helm revision before the change.
    type: raw
  chart:
    description: The chart before the change.
    type: raw
  snapshot:
    description: The snapshot's folder in the bundle.
    type: str
attributes:
  check_mode:
    support: full
    details:
      - Reads no cluster and changes nothing; runs the same under C(--check).
seealso:
  - module: kaiops.runbooks.kai_rollout_report
"""

EXAMPLES = r"""
- name: Record the snapshot and the release before the change
  kaiops.runbooks.kai_rollout_before:
    objects: "{{ kai_rollout_snapshot_result }}"
    helm: "{{ kai_rollout_helm_snapshot_result }}"
    revision: 2
    chart: kai-scheduler-v0.16.13
    snapshot: snapshots/before-change-lab
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
from ansible_collections.kaiops.runbooks.plugins.module_utils.rollout.runner import (
    run_rollout_before,
)

# The shared action plugin gives `cluster`, when the task leaves it out, the host the task runs for.
CLUSTER_FROM_HOST = True


def argspec():
    return merge_specs(
        JOURNAL_ARG_SPEC,
        {
            "objects": {"type": "dict", "default": {}},
            "helm": {"type": "dict"},
            "use_helm": {"type": "bool", "default": True},
            "revision": {"type": "raw"},
            "chart": {"type": "raw"},
            "snapshot": {"type": "str"},
        },
    )


def main():
    run_module(argspec(), run_rollout_before)


if __name__ == "__main__":
    main()
