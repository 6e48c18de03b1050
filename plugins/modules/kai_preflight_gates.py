#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: kaiops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
module: kai_preflight_gates
short_description: Judge a KAI rollout's change request or a cluster against the preflight gates
version_added: 0.1.0
author:
  - kaiops contributors
description:
  - O(stage=inputs) checks the change request without reading any cluster - change owner,
    target version (an exact release tag), the acceptance thresholds (type and range, p50 not
    above p95, no unknown names), the rollback target (a Helm revision or a release tag other
    than the target) and the regression evidence - a passing C(reproduce) report for the
    target version in the evidence store, unless a waiver with a reason is given.
  - A reproduce report counts when C(<evidence_root>/<bundle>/report.json) has C(kind=reproduce),
    C(kai_version) equal to the target and C(verdict=pass), and its bundle's C(status) is
    C(complete) and its C(manifest.sha256) verifies. Reports that match the version but do not
    count are listed with the reason.
  - O(stage=cluster) judges one cluster from the output of the C(kai_inventory) role -
    reachable, a KAI Helm release found, the current version readable, and the rollback target
    recorded (the version running now, or a revision that exists).
  - Returns every gate with its figure, threshold and pass or fail, and one message naming every
    failed gate and its fix. The module never fails because a gate failed; the caller decides.
extends_documentation_fragment:
  - kaiops.runbooks.evidence
options:
  cluster:
    description: Name of the cluster (inventory host) the gates are for.
    type: str
    required: true
  stage:
    description: Which gates to evaluate.
    type: str
    choices: [inputs, cluster]
    required: true
  change_owner:
    description: Who answers for the change. Used with O(stage=inputs).
    type: raw
  target_version:
    description: The KAI release to roll out, e.g. C(v0.16.14). Used with O(stage=inputs).
    type: raw
  thresholds:
    description:
      - Acceptance thresholds, a dict with C(bind_latency_p50_s), C(bind_latency_p95_s),
        C(ready_latency_p50_s), C(ready_latency_p95_s) (seconds, above 0),
        C(completion_rate_min) (fraction in (0, 1]), C(binder_restarts_max),
        C(stale_objects_max) (whole numbers, 0 or more) and C(observation_window_s)
        (60 to 86400). Used with O(stage=inputs).
    type: raw
  rollback_target:
    description:
      - A Helm revision number or a release tag to return to.
      - With O(stage=cluster), a tag must be the version running now and a revision must not be
        above the release's current revision.
    type: raw
  regression_waiver:
    description:
      - Waives the regression evidence; a dict C({reason, approved_by}) or a string (the reason).
        The reason must not be empty. Used with O(stage=inputs).
    type: raw
  evidence_root:
    description:
      - The evidence store to search for reproduce reports. Default - the store the run's own
        bundle is in (the run's context, given by the action plugin).
    type: path
  inventory:
    description: The cluster's C(kai_inventory__output). Used with O(stage=cluster).
    type: dict
  namespace:
    description: Namespace of the KAI release (snapshot selections). Used with O(stage=cluster).
    type: str
    default: kai-scheduler
  reservation_namespace:
    description: Namespace of the GPU reservation pods. Used with O(stage=cluster).
    type: str
    default: kai-resource-reservation
  helm_release:
    description: Name of KAI's Helm release. Used with O(stage=cluster).
    type: str
    default: kai-scheduler
attributes:
  check_mode:
    support: full
    details:
      - Reads no cluster and changes nothing; runs the same under C(--check).
seealso:
  - module: kaiops.runbooks.kai_rollout_report
"""

EXAMPLES = r"""
- name: Check the change request
  kaiops.runbooks.kai_preflight_gates:
    cluster: "{{ inventory_hostname }}"
    stage: inputs
    change_owner: gpu-platform-oncall@example.com
    target_version: v0.16.14
    rollback_target: 7
    thresholds:
      bind_latency_p50_s: 2
      bind_latency_p95_s: 5
      ready_latency_p50_s: 5
      ready_latency_p95_s: 15
      completion_rate_min: 1.0
      binder_restarts_max: 0
      stale_objects_max: 0
      observation_window_s: 300
  register: kai_preflight_inputs_result

- name: Judge the cluster's inventory
  kaiops.runbooks.kai_preflight_gates:
    cluster: "{{ inventory_hostname }}"
    stage: cluster
    inventory: "{{ kai_inventory__output }}"
  register: kai_preflight_cluster_result
"""

RETURN = r"""
gates:
  description: Every gate evaluated, in order.
  returned: always
  type: list
  elements: dict
  sample:
    - {stage: inputs, gate: change_owner, figure: missing, threshold: non-empty,
       passed: false, message: change owner is missing,
       fix: set kaiops_rollout_change_owner (who answers for this change)}
failed_gates:
  description: Names of the failed gates.
  returned: always
  type: list
  elements: str
  sample: [change_owner, regression_evidence]
passed:
  description: True when every gate passed.
  returned: always
  type: bool
message:
  description: One message naming every failed gate and its fix; empty when all passed.
  returned: always
  type: str
  sample: "Rollout refused for lab: change owner is missing (fix: set ...)"
regression:
  description:
    - With O(stage=inputs) - the evidence store searched (C(root)), the passing bundle
      (C(bundle)) or the waiver (C(waiver)), and every matching reproduce report considered
      with why it did not count (C(considered)). Null when the target version was invalid or
      the waiver malformed.
  returned: always
  type: dict
snapshot:
  description:
    - With O(stage=cluster) - C(snapshot_selections), the M(kaiops.runbooks.kai_snapshot)
      selections of the state a rollback needs (KAI Deployments, Config, SchedulingShards,
      queues, reservation pods, Helm release Secrets' metadata, each GPU-sharing ConfigMap),
      and C(snapshot_note) when fewer ConfigMaps were listed than exist. Null otherwise.
  returned: always
  type: dict
stage:
  description: The stage evaluated.
  returned: always
  type: str
cluster:
  description: The cluster name as given.
  returned: always
  type: str
"""

from ansible_collections.kaiops.runbooks.plugins.module_utils.ansible_module import run_module
from ansible_collections.kaiops.runbooks.plugins.module_utils.args_common import (
    EVIDENCE_ARG_SPEC,
    merge_specs,
)
from ansible_collections.kaiops.runbooks.plugins.module_utils.rollout.runner import (
    run_preflight_gates,
)


def argspec():
    return merge_specs(
        EVIDENCE_ARG_SPEC,
        {
            "cluster": {"type": "str", "required": True},
            "stage": {"type": "str", "choices": ["inputs", "cluster"], "required": True},
            "change_owner": {"type": "raw"},
            "target_version": {"type": "raw"},
            "thresholds": {"type": "raw"},
            "rollback_target": {"type": "raw"},
            "regression_waiver": {"type": "raw"},
            "evidence_root": {"type": "path"},
            "inventory": {"type": "dict"},
            "namespace": {"type": "str", "default": "kai-scheduler"},
            "reservation_namespace": {"type": "str", "default": "kai-resource-reservation"},
            "helm_release": {"type": "str", "default": "kai-scheduler"},
        },
    )


def main():
    run_module(argspec(), run_preflight_gates)


if __name__ == "__main__":
    main()
