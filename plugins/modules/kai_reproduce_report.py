#!/usr/bin/python
# Copyright: kaiops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

DOCUMENTATION = r"""
module: kai_reproduce_report
short_description: Write the reproduce report (report.json, report.md, junit.xml)
version_added: 0.1.0
author:
  - kaiops contributors (@kaiops)
description:
  - Decides the verdict for the release the run is about (the last build that is not exposed)
    over every case of every build, and writes C(report.json) (C(kind=reproduce)), C(report.md)
    with the builds side by side per case, and C(junit.xml) with one test case per case and build.
  - C(rollout.yml) counts a passing report as regression evidence for that release.
extends_documentation_fragment:
  - kaiops.runbooks.attributes
  - kaiops.runbooks.evidence
  - kaiops.runbooks.report
options:
  run_id:
    description: The run's id.
    type: str
    required: true
  cluster:
    description: The inventory host the run was about.
    type: str
    required: true
  plan:
    description: The plan (kai_reproduce_plan), whose builds and cases the report covers.
    type: dict
    required: true
  identities:
    description: Each build's identity (kai_identify), by version.
    type: dict
    default: {}
  results:
    description: Every case result (kai_reproduce_case), in the order they ran.
    type: list
    elements: dict
    required: true
  override_reason:
    description: The recorded reason when the cluster was not marked disposable.
    type: str
  provenance:
    description: Who ran it, the collection's git commit and the inventory (shown in report.md).
    type: dict
    default: {}
  leftovers:
    description: Namespaces of an earlier, interrupted run, removed before this one planted.
    type: list
    elements: dict
    default: []
  gpus:
    description: GPUs in the pool the window's cost is computed over.
    type: int
    default: 1
  rate:
    description: Cost per available GPU-hour.
    type: float
    default: 0
attributes:
  check_mode:
    support: full
    details:
      - It writes only evidence files (the run's record, not managed state), also under C(--check).
"""

EXAMPLES = r"""
- name: Write the report
  kaiops.runbooks.kai_reproduce_report:
    run_id: "{{ run_id }}"
    cluster: "{{ inventory_hostname }}"
    plan: "{{ plan.plan }}"
    identities: "{{ identities }}"
    results: "{{ results }}"
"""

RETURN = r"""
verdict:
  description: pass, fail or inconclusive.
  returned: success
  type: str
reasons:
  description: Why the verdict is not pass.
  returned: success
  type: list
  elements: str
kai_version:
  description: The release the report is about.
  returned: success
  type: str
files:
  description: Files written, relative to the bundle.
  returned: success
  type: list
  elements: str
evidence_dir:
  description: The bundle written into; null when none was known.
  returned: success
  type: str
"""

from ansible_collections.kaiops.runbooks.plugins.module_utils.ansible_module import run_module
from ansible_collections.kaiops.runbooks.plugins.module_utils.args_common import (
    EVIDENCE_ARG_SPEC,
    REPORT_ARG_SPEC,
    merge_specs,
)
from ansible_collections.kaiops.runbooks.plugins.module_utils.reproduce.runner import run_report


def argspec():
    return merge_specs(
        EVIDENCE_ARG_SPEC,
        REPORT_ARG_SPEC,
        {
            "run_id": {"type": "str", "required": True},
            "cluster": {"type": "str", "required": True},
            "plan": {"type": "dict", "required": True},
            "identities": {"type": "dict", "default": {}},
            "results": {"type": "list", "elements": "dict", "required": True},
            "override_reason": {"type": "str"},
            "leftovers": {"type": "list", "elements": "dict", "default": []},
            "provenance": {"type": "dict", "default": {}},
            "gpus": {"type": "int", "default": 1},
            "rate": {"type": "float", "default": 0},
        },
    )


def main():
    run_module(argspec(), run_report)


if __name__ == "__main__":
    main()
