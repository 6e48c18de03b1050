#!/usr/bin/python
# Copyright: kaiops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

DOCUMENTATION = r"""
module: kai_diagnose_report
short_description: Write the Pending diagnosis report into the run's evidence folder
version_added: 0.1.0
author:
  - kaiops contributors (@kaiops)
description:
  - From each cluster's diagnosis (as returned by M(kaiops.runbooks.kai_diagnose_info), or a
    failure record with C(status) and C(error)) writes C(report.json) (schema
    C(kaiops.report/v1), kind C(diagnose)), C(report.md) (the Pending pods grouped by cause
    with counts, the oldest wait and the recovery step or owner, then each pod with the objects
    that prove its cause) and C(junit.xml) (a case per Pending pod, failed when no cause was
    proven; an error per cluster not read).
  - Touches no cluster. Never replaces a file, so a second report in the same run fails.
extends_documentation_fragment:
  - kaiops.runbooks.attributes
  - kaiops.runbooks.evidence
  - kaiops.runbooks.report
options:
  clusters:
    description:
      - Diagnosis per cluster name. An entry whose C(status) is V(unreachable),
        V(unauthorized), V(forbidden), V(invalid_input), V(error) or missing was not diagnosed.
    type: dict
    required: true
attributes:
  check_mode:
    support: full
    details:
      - Changes nothing in any cluster and reports C(changed=false); the report files are written
        under C(--check) too, since they are the evidence of the run.
"""

EXAMPLES = r"""
- name: Write the diagnosis report
  kaiops.runbooks.kai_diagnose_report:
    clusters:
      lab: "{{ hostvars['lab'].kai_diagnose__output }}"
  register: kai_diagnose_report_result
"""

RETURN = r"""
decision:
  description: V(diagnosed) when every cluster was read, else V(incomplete).
  returned: always
  type: str
summary:
  description: Counts over all clusters.
  returned: always
  type: dict
  contains:
    clusters:
      description: Clusters in the report.
      type: int
    failed:
      description: Clusters that could not be diagnosed.
      type: list
      elements: str
    pending:
      description: Pending pods diagnosed.
      type: int
    by_cause:
      description: Cause to number of pods, in the order causes are tried.
      type: dict
    unknown:
      description: Pods no cause could be proven for.
      type: int
  sample:
    clusters: 1
    failed: []
    pending: 3
    by_cause: {queue_missing: 1, gang_waiting: 2}
    unknown: 0
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
    REPORT_ARG_SPEC,
    merge_specs,
)
from ansible_collections.kaiops.runbooks.plugins.module_utils.diagnose.runner import (
    run_diagnose_report,
)


def argspec():
    return merge_specs(
        EVIDENCE_ARG_SPEC,
        REPORT_ARG_SPEC,
        {"clusters": {"type": "dict", "required": True}},
    )


def main():
    run_module(argspec(), run_diagnose_report)


if __name__ == "__main__":
    main()
