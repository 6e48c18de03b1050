#!/usr/bin/python
# Copyright: kaiops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

DOCUMENTATION = r"""
module: kai_inventory_report
short_description: Write the multi-cluster KAI inventory into the run's evidence folder
version_added: 0.1.0
author:
  - kaiops contributors (@kaiops)
description:
  - Takes the per-cluster inventories (as returned by M(kaiops.runbooks.kai_inventory_info), or
    a failure record with C(status) and C(error)) and writes C(inventory.json) and
    C(inventory.md) into the run's evidence folder.
  - Returns a summary with counts by status and by verdict, the clusters that could not be
    inventoried, and the exposed clusters.
  - Touches no cluster. Never replaces a file, so a second report in the same run fails.
extends_documentation_fragment:
  - kaiops.runbooks.attributes
  - kaiops.runbooks.evidence
  - kaiops.runbooks.report
options:
  clusters:
    description:
      - Inventory per cluster name. A cluster whose entry has C(status) V(unreachable),
        V(unauthorized), V(forbidden), V(invalid_input), V(error) or no status is listed as failed.
    type: dict
    required: true
  affected_range:
    description:
      - The affected binder range used, shown in the report header.
      - Default - C(affected_range) of the collection's C(meta/kai_releases.yml), given by the
        module's action plugin.
    type: str
  fixed_version:
    description:
      - The KAI release that fixes the defect, named in the report header.
      - Default - C(pair.patched) of the collection's C(meta/kai_releases.yml).
    type: str
attributes:
  check_mode:
    support: full
    details:
      - Changes nothing in any cluster and reports C(changed=false); the report files are written
        under C(--check) too, since they are the evidence of the run.
"""

EXAMPLES = r"""
- name: Write the inventory report
  kaiops.runbooks.kai_inventory_report:
    clusters:
      lab: "{{ hostvars['lab'].kai_inventory__output }}"
      prod-eu-west: "{{ hostvars['prod-eu-west'].kai_inventory__output }}"
  register: kai_inventory_report_result
"""

RETURN = r"""
summary:
  description: Counts and lists over all clusters.
  returned: always
  type: dict
  sample:
    clusters: 3
    by_status: {ok: 1, not_installed: 1, unreachable: 1}
    by_verdict: {exposed: 1, not_installed: 1}
    failed: [{cluster: prod-b, status: unreachable, error: "Failed to reach ..."}]
    exposed: [lab]
files:
  description: Files written, relative to RV(evidence_dir).
  returned: always
  type: list
  elements: str
  sample: [inventory.json, inventory.md]
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
from ansible_collections.kaiops.runbooks.plugins.module_utils.inventory.runner import (
    run_inventory_report,
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
    run_module(argspec(), run_inventory_report)


if __name__ == "__main__":
    main()
