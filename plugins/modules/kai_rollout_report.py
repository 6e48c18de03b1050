#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: kaiops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
module: kai_rollout_report
short_description: Write the rollout report (report.json, report.md, junit.xml) as evidence
version_added: 0.1.0
author:
  - kaiops contributors
description:
  - Takes the change request and, per cluster, the preflight gates, the steps with their status
    (C(done), C(failed), C(not_run)) and reason, and the evidence paths; decides per cluster
    (C(refused) when any gate failed, C(proceed) otherwise) and for the run (C(refused) when any
    cluster was refused).
  - Writes C(report.json) (schema C(kaiops.report/v1), C(kind=rollout)), C(report.md) for the
    change board, and C(junit.xml) with one testcase per gate per cluster, a failed gate being a
    C(<failure>).
  - Touches no cluster. Never replaces a file, so a second report in the same run fails.
extends_documentation_fragment:
  - kaiops.runbooks.evidence
options:
  request:
    description:
      - What was asked - C(change_owner), C(target_version), C(rollback_target), C(thresholds),
        C(regression_waiver). Recorded as given.
    type: dict
    required: true
  clusters:
    description:
      - Per cluster name, a dict with C(gates) (as returned by
        M(kaiops.runbooks.kai_preflight_gates)), C(steps) (list of C({step, status, reason})),
        C(evidence) (paths relative to the run's folder) and C(current_version).
        A cluster without gates is refused.
    type: dict
    required: true
  run_id:
    description: Identifier of the run; default - the name of the evidence folder.
    type: str
  pending_steps:
    description:
      - Rollout steps after preflight (e.g. upgrade, verify, rollback). A cluster that did not
        record a step gets it as C(not_run), with the refusal as the reason when the cluster was
        refused, else O(pending_steps[].reason).
    type: list
    elements: dict
    default: []
    suboptions:
      step:
        description: Name of the step.
        type: str
        required: true
      reason:
        description: Why the step did not run when the cluster was not refused.
        type: str
        default: ""
attributes:
  check_mode:
    support: full
    details:
      - Changes nothing in any cluster and reports C(changed=false); the report is written under
        C(--check) too, since it is the evidence of the run.
seealso:
  - module: kaiops.runbooks.kai_preflight_gates
"""

EXAMPLES = r"""
- name: Write the rollout report
  kaiops.runbooks.kai_rollout_report:
    request:
      change_owner: gpu-platform-oncall@example.com
      target_version: v0.16.14
      rollback_target: v0.16.13
      thresholds: "{{ kaiops_rollout_thresholds }}"
    clusters:
      lab:
        gates: "{{ kai_preflight__output.gates }}"
        steps:
          - {step: upgrade, status: not_run, reason: "preflight refused"}
  register: kai_preflight_report_result
"""

RETURN = r"""
decision:
  description: The run's decision, C(refused) or C(proceed).
  returned: always
  type: str
  sample: refused
refused_clusters:
  description: Clusters refused.
  returned: always
  type: list
  elements: str
  sample: [lab]
clusters:
  description: Per cluster, the decision, the reasons (failed gates' messages) and the steps.
  returned: always
  type: dict
  sample: {lab: {decision: refused, reasons: ["no KAI release on cluster lab"], steps: []}}
summary:
  description: Counts of clusters, gates and failed gates.
  returned: always
  type: dict
  sample: {clusters: 1, gates: 14, gates_failed: 2}
files:
  description: Files written, relative to RV(evidence_dir).
  returned: always
  type: list
  elements: str
  sample: [report.json, report.md, junit.xml]
evidence_dir:
  description: The evidence folder written into; null when none was known.
  returned: always
  type: str
"""

from ansible_collections.kaiops.runbooks.plugins.module_utils.ansible_module import run_module
from ansible_collections.kaiops.runbooks.plugins.module_utils.args_common import (
    EVIDENCE_ARG_SPEC,
    merge_specs,
)
from ansible_collections.kaiops.runbooks.plugins.module_utils.rollout.runner import (
    run_rollout_report,
)


def argspec():
    return merge_specs(
        EVIDENCE_ARG_SPEC,
        {
            "request": {"type": "dict", "required": True},
            "clusters": {"type": "dict", "required": True},
            "run_id": {"type": "str"},
            "pending_steps": {
                "type": "list",
                "elements": "dict",
                "default": [],
                "options": {
                    "step": {"type": "str", "required": True},
                    "reason": {"type": "str", "default": ""},
                },
            },
        },
    )


def main():
    run_module(argspec(), run_rollout_report)


if __name__ == "__main__":
    main()
