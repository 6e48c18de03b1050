#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: kaiops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
module: kai_rollout_step
short_description: Add a change-window step to a cluster's rollout record
version_added: 0.3.0
author:
  - kaiops contributors (@kaiops)
description:
  - The change window's additions to the cluster's rollout record that read no cluster, built in
    Python (C(plugins/module_utils/rollout/pipeline.py), rules in C(rollout/change.py)); the role
    C(kai_rollout) keeps what this module returns and writes no gate or step itself.
  - Give exactly one of O(policy), O(earlier), O(before), O(skip), O(prior), O(upgrade),
    O(decision), O(rollback), O(error), O(rehearsal), O(finish) and O(rollback_from).
  - O(policy) - the failed-gate policy (C(rollback), C(pause), or C(continue) with a recorded
    decision and approver) and the waves of the change request, judged as request gates.
  - O(earlier) - the evidence store's earlier runs of this change on the cluster; an approved run
    at the revision that runs now (a repeated run then changes nothing) and interrupted runs
    (kept, listed, resumed from).
  - O(decision) - the failed-gate policy applied to the verification; RV(action) says what to do
    next (C(none), C(rollback), C(pause), C(continue)).
  - Touches no cluster.
extends_documentation_fragment:
  - kaiops.runbooks.evidence
  - kaiops.runbooks.attributes
options:
  cluster:
    description: Name of the cluster, for a record that does not exist yet.
    type: str
  record:
    description: The record to add to (C(kai_rollout__output)).
    type: dict
    default: {}
  policy:
    description:
      - C(on_failed_gate), C(waves) and C(rate) (cost per available GPU-hour) of the change
        request.
    type: dict
  earlier:
    description:
      - C(version) (the target) and C(current) (C(version), C(revision) on the cluster now).
    type: dict
  before:
    description: The release before the change - C(version), C(revision), C(chart), C(snapshot).
    type: dict
  skip:
    description: Every change step not run, with this reason.
    type: str
  prior:
    description: Stand on the earlier approved run found by O(earlier).
    type: bool
  upgrade:
    description:
      - The upgrade's or the Helm rollback's result - C(stage) (C(upgrade) or C(rollback)),
        C(changed), C(revision_before), C(revision), C(chart), C(identity) (of
        M(kaiops.runbooks.kai_identify)), C(expected_version), C(rolled_out_s),
        C(timeout_s), C(started_at), C(finished_at), C(duration_s), C(error), C(objects).
    type: dict
  decision:
    description: Apply the failed-gate policy to the verification.
    type: bool
  rollback:
    description:
      - C(restore) (of M(kaiops.runbooks.kai_rollout_restore)), C(time_to_restore_s),
        C(time_to_verified_s), C(error).
    type: dict
  error:
    description: C(step), C(task) and C(msg) of a change task that failed.
    type: dict
  rehearsal:
    description:
      - Record the newest rollback rehearsal of the change's version pair found in the evidence
        store (a rollback.yml run, or a rollout that rolled back after a failed gate, from the
        target back to the version that ran before, done and verified) and, when every
        verification gate passed, the approval's gate and step - C(not_approved) without one,
        unless the request's C(rehearsal_waiver) waives it.
      - C(group) (C(kaiops_rollout_rehearsal_group)) and C(peers), the inventory's other clusters
        of that group - a rehearsal on one of them counts too, and is recorded as such.
    type: dict
  finish:
    description:
      - Decide the cluster; C(started_wall) and C(finished_wall) of the change (epoch seconds).
    type: dict
  rollback_from:
    description:
      - For rollback.yml, start the record from a rollout bundle - C(bundle) (a path, or a folder
        name in the evidence store), C(thresholds) and C(owner) (the inventory's, else the
        bundle's).
    type: dict
  evidence_root:
    description: The evidence store. Default - the run's context, given by the action plugin.
    type: path
attributes:
  check_mode:
    support: full
    details:
      - Reads no cluster and changes nothing; runs the same under C(--check).
seealso:
  - module: kaiops.runbooks.kai_rollout_record
  - module: kaiops.runbooks.kai_rollout_verify
"""

EXAMPLES = r"""
- name: Apply the failed-gate policy
  kaiops.runbooks.kai_rollout_step:
    record: "{{ kai_rollout__output }}"
    decision: true
  register: kai_rollout_step
"""

RETURN = r"""
record:
  description: The record with the addition.
  returned: always
  type: dict
decision:
  description: The cluster's decision so far (C(rollout/change.py) decide), or null.
  returned: always
  type: str
action:
  description: After O(decision), what to do next - none, rollback, pause or continue.
  returned: always
  type: str
failed_gates:
  description: Names of the record's failed gates so far.
  returned: always
  type: list
  elements: str
passed:
  description: True when every gate of the record passed so far.
  returned: always
  type: bool
"""

from ansible_collections.kaiops.runbooks.plugins.module_utils.ansible_module import run_module
from ansible_collections.kaiops.runbooks.plugins.module_utils.args_common import (
    EVIDENCE_ARG_SPEC,
    merge_specs,
)
from ansible_collections.kaiops.runbooks.plugins.module_utils.rollout.change_runner import (
    run_rollout_step,
)


def argspec():
    return merge_specs(
        EVIDENCE_ARG_SPEC,
        {
            "cluster": {"type": "str"},
            "record": {"type": "dict", "default": {}},
            "policy": {"type": "dict"},
            "earlier": {"type": "dict"},
            "before": {"type": "dict"},
            "skip": {"type": "str"},
            "prior": {"type": "bool"},
            "upgrade": {"type": "dict"},
            "decision": {"type": "bool"},
            "rollback": {"type": "dict"},
            "error": {"type": "dict"},
            "rehearsal": {"type": "dict"},
            "finish": {"type": "dict"},
            "rollback_from": {"type": "dict"},
            "evidence_root": {"type": "path"},
        },
    )


def main():
    run_module(argspec(), run_rollout_step)


if __name__ == "__main__":
    main()
