#!/usr/bin/python
# Copyright: kaiops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

DOCUMENTATION = r"""
module: kai_request
short_description: Judge a playbook's request before any cluster is read; report a refusal
version_added: 0.1.0
author:
  - kaiops contributors (@kaiops)
description:
  - The one request check of every playbook of the collection (role
    C(kaiops.runbooks.kai_request) runs it first), with the rules as data in
    the collection - types named in the message, numbers finite and
    within their bounds, release tags matched whole and ASCII only, lists never read letter by
    letter, unknown C(kaiops_*) names refused with the nearest known name, a kubeconfig that is a
    directory, a rollback bundle that is not one, an evidence store that cannot be written.
  - A field a person writes (owner, approver, reason, decision, waiver reasons, reproduce's
    override reason) whose value as written holds a template or lookup is refused; the template
    is never rendered by the check and never recorded.
  - Its action plugin reads the host's variables as written (before Ansible templates them),
    templates the others, resolves the paths a user gives from the directory the command runs
    in, and reads the evidence store's state from the run's context.
  - With O(refusals), writes the playbook's refusal report (C(<report>.json) and C(.md), decision
    C(refused), each item with its field, message and fix) into the run's bundle instead.
  - Never fails because a request was refused; the caller decides.
extends_documentation_fragment:
  - kaiops.runbooks.evidence
  - kaiops.runbooks.report
  - kaiops.runbooks.attributes
options:
  playbook:
    description: The playbook whose rules apply.
    type: str
    required: true
    choices: [inventory, reproduce, recovery, gpu_access, diagnose, rollout, rollback]
  cluster:
    description: The cluster (inventory host) the request is for, named in the message.
    type: str
  given:
    description: Variable -> value as templated. Default - given by the action plugin.
    type: dict
  raw:
    description: Variable -> value as written, for the fields a person writes. Default - given by
      the action plugin.
    type: dict
  names:
    description: Every variable name set for the host. Default - given by the action plugin.
    type: list
    elements: str
  paths:
    description: Path as given -> C(file), C(dir), C(missing) or C(unreadable). Default - given by
      the action plugin.
    type: dict
  errors:
    description: Variable -> why it could not be templated. Default - given by the action plugin.
    type: dict
  role_options:
    description:
      - The options of the playbook's role (its C(meta/argument_specs.yml)), which judge the role
        variables given for the host. Default - read by the action plugin.
    type: dict
  evidence_problem:
    description: Why the evidence store cannot hold the run's bundle. Default - from the run's
      context.
    type: str
  refusals:
    description: Cluster -> its problems; writes the refusal report instead of judging.
    type: dict
  all_refused:
    description:
      - With O(refusals) - every cluster of the play was refused, so the refusal report is the
        playbook's report (C(<report>.json), C(.md)); otherwise it is C(request.json) and
        C(request.md), next to the report the playbook writes for the other clusters.
    type: bool
    default: false
attributes:
  check_mode:
    support: full
    details:
      - Reads no cluster; runs the same under C(--check).
seealso:
  - module: kaiops.runbooks.kai_rollout_request
"""

EXAMPLES = r"""
- name: Judge the request (no cluster is read)
  kaiops.runbooks.kai_request:
    playbook: reproduce
    cluster: "{{ inventory_hostname }}"
  register: kai_request__output
"""

RETURN = r"""
passed:
  description: True when the request is valid.
  returned: when judging
  type: bool
problems:
  description: Each problem - C(field), C(message) (naming the field) and C(fix).
  returned: when judging
  type: list
  elements: dict
  sample: [{field: kaiops_thresholds, message: "kaiops_thresholds: must be a mapping", fix: "..."}]
request:
  description: The playbook's variables as read; a refused template is replaced by a note.
  returned: when judging
  type: dict
message:
  description: One message naming every problem and its fix; empty when valid.
  returned: when judging
  type: str
files:
  description: The refusal report's files, relative to the bundle.
  returned: with refusals
  type: list
  elements: str
evidence_dir:
  description: The run's bundle.
  returned: with refusals
  type: str
"""

from ansible_collections.kaiops.runbooks.plugins.module_utils.ansible_module import run_module
from ansible_collections.kaiops.runbooks.plugins.module_utils.args_common import (
    EVIDENCE_ARG_SPEC,
    REPORT_ARG_SPEC,
    merge_specs,
)
from ansible_collections.kaiops.runbooks.plugins.module_utils.request.runner import run_request

PLAYBOOKS = ["inventory", "reproduce", "recovery", "gpu_access", "diagnose", "rollout", "rollback"]


def argspec():
    return merge_specs(
        EVIDENCE_ARG_SPEC,
        REPORT_ARG_SPEC,
        {
            "playbook": {"type": "str", "required": True, "choices": PLAYBOOKS},
            "cluster": {"type": "str"},
            "given": {"type": "dict"},
            "raw": {"type": "dict"},
            "names": {"type": "list", "elements": "str"},
            "paths": {"type": "dict"},
            "errors": {"type": "dict"},
            "evidence_problem": {"type": "str"},
            "role_options": {"type": "dict"},
            "refusals": {"type": "dict"},
            "all_refused": {"type": "bool", "default": False},
        },
    )


def main():
    run_module(argspec(), run_request)


if __name__ == "__main__":
    main()
