#!/usr/bin/python
# Copyright: kaiops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

DOCUMENTATION = r"""
module: kai_rollout_request
short_description: Judge a KAI rollout's change request and start the cluster's rollout record
version_added: 0.1.0
author:
  - kaiops contributors (@kaiops)
description:
  - Judges one cluster's change request without reading any cluster, with one gate per item
    (declared as data) - the variables (every
    C(kaiops_*) name set for the host must be in the collection's vocabulary, the nearest known
    name is given otherwise; C(-e) must give name=value pairs or a mapping), the change owner,
    the KAI version under test (an exact release tag), the acceptance thresholds (type and range,
    p50 not above p95, no unknown names), the rollback target (a Helm revision or a release tag
    other than the KAI version) and the regression evidence - a passing C(reproduce) report for
    the KAI version in the evidence store, unless a waiver with a reason and an approver is given;
    and, when given, the rehearsal waiver (a reason and an approver).
  - Reads the request first - numeric text is read as the number it says (C(" 300 ") is 300), a
    Helm revision given as text as a number - and records it so.
  - A reproduce report counts when C(<evidence_root>/<bundle>/report.json) has C(kind=reproduce),
    C(kai_version) equal to the KAI version and C(verdict=pass), and its bundle's C(status) is
    C(complete) and its C(manifest.sha256) verifies. Reports that match the version but do not
    count are listed with the reason.
  - Starts the cluster's rollout record in the run's journal and returns
    every gate with its figure, threshold and pass or fail, and one message naming every failed
    gate and its fix. The module never fails because a gate failed; the caller decides.
extends_documentation_fragment:
  - kaiops.runbooks.journal
  - kaiops.runbooks.attributes
options:
  change_owner:
    description: Who answers for the change (C(kaiops_change_owner)).
    type: raw
  kai_version:
    description:
      - The KAI release under test, the rollout's target, an exact tag (C(kaiops_kai_version)).
      - Default - C(pair.patched) of the collection's C(meta/kai_releases.yml), given by the
        module's action plugin.
    type: raw
  thresholds:
    description:
      - Acceptance thresholds (C(kaiops_thresholds)), a mapping with C(bind_latency_p50_s),
        C(bind_latency_p95_s), C(ready_latency_p50_s), C(ready_latency_p95_s) (seconds, above
        0), C(completion_rate_min) (fraction in (0, 1]), C(binder_restarts_max),
        C(stale_objects_max) (whole numbers, 0 or more) and C(observation_window_s) (60 to
        86400); C(component_restarts_max) (the inventory's) is known too. Numbers or numeric text.
    type: raw
  rollback_target:
    description:
      - A Helm revision number or a release tag to return to (C(kaiops_rollout_rollback_target)).
      - Default - C(pair.pre) of the collection's C(meta/kai_releases.yml), given by the module's
        action plugin.
    type: raw
  regression_waiver:
    description:
      - Waives the regression evidence; a mapping C({reason, approved_by}), both non-empty text.
        Anything else (a string, a list, a mapping without either) fails the gate.
    type: raw
  rehearsal_waiver:
    description:
      - Approves the change without a rollback rehearsal of its version pair on record
        (C(kaiops_rollout_rehearsal_waiver)); a mapping C({reason, approved_by}), both non-empty
        text, shown in the report. Given, it is judged as the gate C(rehearsal_waiver); anything
        else than such a mapping fails it and the request is malformed (no cluster is read).
    type: raw
  evidence_root:
    description:
      - The evidence store to search for reproduce reports. Default - the store the run's own
        bundle is in (the run's context, given by the action plugin).
    type: path
  variables:
    description:
      - The C(kaiops_*) variable names set for the host. Default - given by the action plugin from
        the task's variables.
    type: list
    elements: str
    default: []
  stray_extra_vars:
    description:
      - Extra vars that were neither name=value pairs nor a mapping (C(-e '"just a string"')).
        Default - given by the action plugin from the task's variables.
    type: list
    elements: str
    default: []
attributes:
  check_mode:
    support: full
    details:
      - Reads no cluster and changes nothing; runs the same under C(--check).
seealso:
  - module: kaiops.runbooks.kai_rollout_policy
  - module: kaiops.runbooks.kai_rollout_report
"""

EXAMPLES = r"""
- name: Judge the change request (the KAI version and rollback target from the version pair)
  kaiops.runbooks.kai_rollout_request:
    change_owner: gpu-platform-oncall@example.com
    thresholds:
      bind_latency_p50_s: 2
      bind_latency_p95_s: 5
      ready_latency_p50_s: 5
      ready_latency_p95_s: 15
      completion_rate_min: 1.0
      binder_restarts_max: 0
      stale_objects_max: 0
      observation_window_s: 300
    regression_waiver:
      reason: reproduce run filed with the change ticket
      approved_by: change-board@example.com
  register: kai_rollout_requested
"""

RETURN = r"""
gates:
  description: Every gate of the request, in order.
  returned: always
  type: list
  elements: dict
  sample:
    - {stage: request, gate: change_owner, figure: missing, threshold: non-empty,
       passed: false, message: change owner is missing,
       fix: set kaiops_change_owner (who answers for this change) for the cluster}
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
decision:
  description: Null - the change window decides a cluster.
  returned: always
  type: str
action:
  description: Null - the failed-gate policy acts after the verification.
  returned: always
  type: str
kai_version:
  description:
    - The KAI version under test as the request reads it (C(kaiops_kai_version), else the
      version pair's patched release) - the one name it keeps from the request to
      C(report.json).
  returned: always
  type: str
well_formed:
  description:
    - True when every gate passed but possibly the regression evidence - the read-only cluster
      checks then still run, so the one refusal names every reason.
  returned: always
  type: bool
message:
  description: One message naming every failed gate and its fix; empty when all passed.
  returned: always
  type: str
  sample: "Rollout refused for lab: change owner is missing (fix: set kaiops_change_owner ...)"
cluster:
  description: The cluster name as given.
  returned: always
  type: str
"""

from ansible_collections.kaiops.runbooks.plugins.module_utils.ansible_module import run_module
from ansible_collections.kaiops.runbooks.plugins.module_utils.args_common import (
    JOURNAL_ARG_SPEC,
    merge_specs,
)
from ansible_collections.kaiops.runbooks.plugins.module_utils.rollout.runner import (
    run_rollout_request,
)

# Options the action plugin fills in from meta/kai_releases.yml when the task leaves them out.
RELEASE_DEFAULTS = {"kai_version": "pair.patched", "rollback_target": "pair.pre"}


# The shared action plugin gives `cluster`, when the task leaves it out, the host the task runs for.
CLUSTER_FROM_HOST = True


def argspec():
    return merge_specs(
        JOURNAL_ARG_SPEC,
        {
            "change_owner": {"type": "raw"},
            "kai_version": {"type": "raw"},
            "thresholds": {"type": "raw"},
            "rollback_target": {"type": "raw"},
            "regression_waiver": {"type": "raw"},
            "rehearsal_waiver": {"type": "raw"},
            "evidence_root": {"type": "path"},
            "variables": {"type": "list", "elements": "str", "default": []},
            "stray_extra_vars": {"type": "list", "elements": "str", "default": []},
        },
    )


def main():
    run_module(argspec(), run_rollout_request)


if __name__ == "__main__":
    main()
