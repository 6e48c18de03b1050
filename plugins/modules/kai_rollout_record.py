#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: kaiops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
module: kai_rollout_record
short_description: Add what a rollout operation did to a cluster's rollout record
version_added: 0.1.0
author:
  - kaiops contributors (@kaiops)
description:
  - The rollout's record of one cluster is built in Python
    (C(plugins/module_utils/rollout/pipeline.py)); the role C(kai_rollout) keeps what this
    module returns and writes no gate or step itself.
  - Give exactly one of O(skip), O(inventory), O(snapshot) and O(failure).
  - O(skip) - the change request was malformed, so the cluster steps are recorded as not run.
  - O(inventory) - the cluster's read-only inventory (C(kai_inventory__output)) is judged
    against the cluster gates (reachable, a KAI Helm release, the current version, the rollback
    target recorded, declared as data in C(rollout/gates.py)), and the snapshot of the state a
    rollback needs is planned; RV(snapshot_due) says whether to take it.
  - O(snapshot) - the snapshot taken (results of M(kaiops.runbooks.kai_snapshot) and
    M(kaiops.runbooks.kai_helm_snapshot)) is recorded, with its evidence.
  - O(failure) - a task of an operation failed; a failed gate and a failed step say where and why.
  - Touches no cluster.
extends_documentation_fragment:
  - kaiops.runbooks.attributes
options:
  cluster:
    description: Name of the cluster, for a record that does not exist yet (a failure).
    type: str
  record:
    description: The record to add to (C(kai_rollout__output)); empty for none yet.
    type: dict
    default: {}
  skip:
    description: Record the cluster steps as not run, the change request being malformed.
    type: bool
  inventory:
    description: The cluster's C(kai_inventory__output).
    type: dict
  snapshot:
    description:
      - C(objects) (the result of M(kaiops.runbooks.kai_snapshot)), C(helm) (of
        M(kaiops.runbooks.kai_helm_snapshot), or null when helm was not used) and C(use_helm).
    type: dict
  failure:
    description: C(stage), C(task) (its name) and C(msg) of the task that failed.
    type: dict
  refusal:
    description:
      - The request refused by the request check of every playbook (M(kaiops.runbooks.kai_request))
        - C(problems) (each C(field), C(message), C(fix)), C(request) (the request as read, a
        template a person should have written left out) and C(operation) (C(rollout) or
        C(rollback)); starts the record with one failed request gate per problem.
    type: dict
  namespace:
    description: Namespace of the KAI release (snapshot selections). Used with O(inventory).
    type: str
    default: kai-scheduler
  reservation_namespace:
    description: Namespace of the GPU reservation pods. Used with O(inventory).
    type: str
    default: kai-resource-reservation
  helm_release:
    description: Name of KAI's Helm release. Used with O(inventory).
    type: str
    default: kai-scheduler
attributes:
  check_mode:
    support: full
    details:
      - Reads no cluster and changes nothing; runs the same under C(--check).
seealso:
  - module: kaiops.runbooks.kai_rollout_request
  - module: kaiops.runbooks.kai_rollout_report
"""

EXAMPLES = r"""
- name: Judge the cluster's inventory
  kaiops.runbooks.kai_rollout_record:
    record: "{{ kai_rollout__output }}"
    inventory: "{{ kai_inventory__output }}"
  register: kai_rollout_step

- name: Keep the record
  ansible.builtin.set_fact:
    kai_rollout__output: "{{ kai_rollout_step.record }}"
"""

RETURN = r"""
record:
  description: The record with the addition - C(gates), C(steps), C(evidence), C(snapshot_plan).
  returned: always
  type: dict
failed_gates:
  description: Names of the record's failed gates so far.
  returned: always
  type: list
  elements: str
  sample: [kai_release]
passed:
  description: True when every gate of the record passed so far.
  returned: always
  type: bool
snapshot_due:
  description: With O(inventory), whether every gate passed and the snapshot is to be taken.
  returned: always
  type: bool
message:
  description: One message naming every failed gate and its fix; empty when all passed.
  returned: always
  type: str
"""

from ansible_collections.kaiops.runbooks.plugins.module_utils.ansible_module import run_module
from ansible_collections.kaiops.runbooks.plugins.module_utils.rollout.runner import (
    run_rollout_record,
)


def argspec():
    return {
        "cluster": {"type": "str"},
        "record": {"type": "dict", "default": {}},
        "skip": {"type": "bool"},
        "inventory": {"type": "dict"},
        "snapshot": {"type": "dict"},
        "failure": {"type": "dict"},
        "refusal": {"type": "dict"},
        "namespace": {"type": "str", "default": "kai-scheduler"},
        "reservation_namespace": {"type": "str", "default": "kai-resource-reservation"},
        "helm_release": {"type": "str", "default": "kai-scheduler"},
    }


def main():
    run_module(argspec(), run_rollout_record)


if __name__ == "__main__":
    main()
