#!/usr/bin/python
# Copyright: kaiops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

DOCUMENTATION = r"""
module: kai_rollout_report
short_description: Write the rollout report (report.json, report.md, junit.xml) as evidence
version_added: 0.1.0
author:
  - kaiops contributors (@kaiops)
description:
  - Reads, per cluster of O(hosts), its rollout record from the run's journal (the gates, the
    steps with their status C(done), C(failed), C(not_run) and reason, and the evidence paths, as
    the rollout modules journaled them) and the change request the first of them recorded;
    decides per cluster (C(refused) when any gate failed, C(proceed) otherwise) and for the run
    (C(refused) when any cluster was refused).
  - The steps not built yet come from the pipeline,
    each reported as not run with its reason, or with the refusal when the cluster was refused.
  - Writes its three files whatever goes wrong - when the report cannot be built from what it was
    given, an error report (decision C(refused), the error in report.md and as a junit
    C(<error>)) is written and the module fails after.
  - Writes C(report.json) (schema C(kaiops.report/v1), C(kind=rollout)), C(report.md) for the
    change board, and C(junit.xml) with one testcase per gate per cluster, a failed gate being a
    C(<failure>).
  - Touches no cluster. Never replaces a file, so a second report in the same run fails.
extends_documentation_fragment:
  - kaiops.runbooks.evidence
  - kaiops.runbooks.report
  - kaiops.runbooks.attributes
options:
  hosts:
    description:
      - The clusters to report on; each one's record is read from the run's journal
        (C(journal.jsonl) in O(evidence_dir)). A cluster with no entry failed before its request
        was judged - the report says so.
      - When given, O(request) and O(clusters) are not read.
    type: list
    elements: str
  request:
    description:
      - Without O(hosts), what was asked - C(change_owner), C(kai_version), C(rollback_target),
        C(thresholds), C(regression_waiver) (its reason and approver are shown). Recorded as
        given.
      - Typed raw so that a wrong shape is written into an error report, not refused unwritten.
    type: raw
  clusters:
    description:
      - Without O(hosts), per cluster name, its rollout record - C(gates), C(steps)
        (list of C({step, status, reason})), C(evidence) (paths relative to the run's folder)
        and C(current_version). A cluster without gates is refused; an empty record is a
        cluster that failed before its preflight ran.
      - Typed raw so that a wrong shape is written into an error report, not refused unwritten.
    type: raw
  run_id:
    description: Identifier of the run; default - the name of the evidence folder.
    type: str
  pending_steps:
    description:
      - Rollout steps after preflight that did not run (default - the pipeline's steps not built
        yet). A cluster that did not record a step gets it as C(not_run), with the refusal as the
        reason when the cluster was refused, else O(pending_steps[].reason).
    type: list
    elements: dict
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
  - module: kaiops.runbooks.kai_rollout_request
  - module: kaiops.runbooks.kai_rollout_finish
"""

EXAMPLES = r"""
- name: Write the rollout report from every cluster's record
  kaiops.runbooks.kai_rollout_report:
    hosts: "{{ ansible_play_hosts_all }}"
  register: kai_rollout_report_result
  run_once: true
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
inventoried:
  description: The clusters whose inventory was read, in the order of O(hosts).
  returned: always
  type: list
  elements: str
  sample: [lab]
evidence_dir:
  description: The evidence folder written into; null when none was known.
  returned: always
  type: str
"""

from ansible_collections.kaiops.runbooks.plugins.module_utils.ansible_module import run_module
from ansible_collections.kaiops.runbooks.plugins.module_utils.args_common import (
    EVIDENCE_ARG_SPEC,
    REPORT_ARG_SPEC,
    merge_specs,
)
from ansible_collections.kaiops.runbooks.plugins.module_utils.rollout.runner import (
    run_rollout_report,
)


def argspec():
    return merge_specs(
        EVIDENCE_ARG_SPEC,
        REPORT_ARG_SPEC,
        {
            "hosts": {"type": "list", "elements": "str"},
            "request": {"type": "raw"},
            "clusters": {"type": "raw"},
            "run_id": {"type": "str"},
            "pending_steps": {
                "type": "list",
                "elements": "dict",
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
