#!/usr/bin/python
# Copyright: kaiops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

DOCUMENTATION = r"""
module: kai_rollout_bundle
short_description: Start rollback.yml's record of a cluster from a rollout bundle
version_added: 0.1.0
author:
  - kaiops contributors (@kaiops)
description:
  - The revision, version and snapshot that the rollout bundle O(bundle) recorded before its
    change on the cluster; a bundle that is missing, not a rollout's, or without this
    cluster's record refuses (RV(well_formed) is false) before any cluster is read.
  - Touches no cluster.
extends_documentation_fragment:
  - kaiops.runbooks.journal
  - kaiops.runbooks.attributes
options:
  bundle:
    description: A rollout bundle - a path, or a folder name in the evidence store.
    type: str
  thresholds:
    description: The thresholds to verify the rollback against (else the bundle's).
    type: raw
  owner:
    description: The change owner (else the bundle's).
    type: raw
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
- name: Read the rollout bundle to restore from
  kaiops.runbooks.kai_rollout_bundle:
    bundle: 20261201T100000Z-rollout-abc
  register: kai_rollout_bundle
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
well_formed:
  description: True when the bundle can be rolled back to.
  returned: always
  type: bool
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
    run_rollout_bundle,
)

# The shared action plugin gives `cluster`, when the task leaves it out, the host the task runs for.
CLUSTER_FROM_HOST = True


def argspec():
    return merge_specs(
        JOURNAL_ARG_SPEC,
        {
            "bundle": {"type": "str"},
            "thresholds": {"type": "raw"},
            "owner": {"type": "raw"},
            "evidence_root": {"type": "path"},
        },
    )


def main():
    run_module(argspec(), run_rollout_bundle)


if __name__ == "__main__":
    main()
