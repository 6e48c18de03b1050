#!/usr/bin/python
# Copyright: kaiops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

DOCUMENTATION = r"""
module: kai_recovery_report
short_description: Write recovery.json and recovery.md into the run's evidence folder
version_added: 0.1.0
author:
  - kaiops contributors (@kaiops)
description:
  - From each cluster's C(kai_recovery__output) - findings with classification and evidence,
    interventions (recorded, then applied), the observation's verdicts - writes C(recovery.json)
    (schema C(kaiops.report/v1), kind C(recovery)) and C(recovery.md).
  - Per cluster, a line on the B(prevention of recurrence) (the binder version read by
    kai_inventory_info against the affected range) kept apart from the B(remediation of
    existing damage) (what was found, applied and recovered).
  - Touches no cluster.
extends_documentation_fragment:
  - kaiops.runbooks.attributes
  - kaiops.runbooks.evidence
  - kaiops.runbooks.report
options:
  clusters:
    description: Cluster name to that cluster's C(kai_recovery__output).
    type: dict
    required: true
  affected_range:
    description:
      - The affected binder range of the prevention line when a cluster's inventory has none.
      - Default - C(affected_range) of the collection's C(meta/kai_releases.yml), given by the
        module's action plugin.
    type: str
  fixed_version:
    description:
      - The KAI release that fixes the defect, named in the prevention line.
      - Default - C(pair.patched) of the collection's C(meta/kai_releases.yml).
    type: str
attributes:
  check_mode:
    support: full
    details: Writes evidence only; the same under C(--check), always C(changed=false).
"""

EXAMPLES = r"""
- name: Write the recovery report
  kaiops.runbooks.kai_recovery_report:
    clusters: >-
      {{ dict(ansible_play_hosts_all
              | zip(ansible_play_hosts_all | map('extract', hostvars, 'kai_recovery__output'))) }}
"""

RETURN = r"""
summary:
  description:
    - C(clusters), C(failed), C(findings), C(interventions_applied),
      C(unrecovered_after_intervention).
  returned: success
  type: dict
clusters:
  description:
    - Per cluster C(status), C(prevention) and C(remediation) lines,
      C(unrecovered_after_intervention).
  returned: success
  type: dict
files:
  description: Files written, relative to RV(evidence_dir).
  returned: success
  type: list
  elements: str
evidence_dir:
  description: The evidence folder, or null when none was known.
  returned: success
  type: str
"""

from ansible_collections.kaiops.runbooks.plugins.module_utils.ansible_module import run_module
from ansible_collections.kaiops.runbooks.plugins.module_utils.args_common import (
    EVIDENCE_ARG_SPEC,
    REPORT_ARG_SPEC,
    merge_specs,
)
from ansible_collections.kaiops.runbooks.plugins.module_utils.recovery.runner import (
    run_recovery_report,
)

# Options the action plugin fills in from meta/kai_releases.yml when the task leaves them out.
RELEASE_DEFAULTS = {"affected_range": "affected_range", "fixed_version": "pair.patched"}


def argspec():
    return merge_specs(
        EVIDENCE_ARG_SPEC,
        REPORT_ARG_SPEC,
        {
            "clusters": {"type": "dict", "required": True},
            "affected_range": {"type": "str"},
            "fixed_version": {"type": "str"},
        },
    )


def main():
    run_module(argspec(), run_recovery_report)


if __name__ == "__main__":
    main()
