#!/usr/bin/python
# Copyright: kaiops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

DOCUMENTATION = r"""
module: kai_rollout_governance
short_description: Who can edit KAI's coordination objects, read from RBAC (read-only)
version_added: 0.1.0
author:
  - kaiops contributors (@kaiops)
description:
  - Lists ClusterRoles, ClusterRoleBindings and, in O(namespaces), Roles and RoleBindings, and
    resolves the bindings to subjects - who may create, update, patch or delete Config
    C(kai-config), the queues, the SchedulingShards, the binder and scheduler Deployments and the
    ConfigMaps (GPU-sharing ones among them) in the namespaces the change touches
   .
  - Flags broad grants - a subject that is not a system one holding cluster-wide ConfigMap
    write, or a wildcard rule, cluster-wide.
  - Adds a C(governance) gate to the record that passes unless O(rule) sets
    C(refuse_broad_grants) and a broad grant is flagged; names where the regression evidence is
    kept. Writes C(governance/<cluster>.json) into the run's evidence.
extends_documentation_fragment:
  - kaiops.runbooks.kai_namespaces
  - kaiops.runbooks.k8s_auth
  - kaiops.runbooks.journal
  - kaiops.runbooks.attributes
options:
  namespaces:
    description:
      - The namespaces the change touches (KAI's, the reservation namespace, those of
        GPU-sharing pods).
    type: list
    elements: str
    default: []
  rule:
    description:
      - The change request's rule, e.g. C({refuse_broad_grants - true}); empty reports only.
    type: dict
    default: {}
attributes:
  check_mode:
    support: full
    details:
      - Reads only; runs the same under C(--check).
seealso:
  - module: kaiops.runbooks.kai_rollout_preflight
"""

EXAMPLES = r"""
- name: Read who can edit KAI's coordination objects
  kaiops.runbooks.kai_rollout_governance:
    namespaces: [kai-scheduler, kai-resource-reservation]
  register: kai_rollout_governed
"""

RETURN = r"""
decision:
  description:
    - The cluster's decision so far, or null before the change
      window decided it.
  returned: always
  type: str
  sample: approved
action:
  description:
    - What the failed-gate policy said to do after the verification (C(none), C(rollback),
      C(pause), C(continue)), or null before the decision.
  returned: always
  type: str
passed:
  description: True when every gate of the cluster's record passed so far.
  returned: always
  type: bool
failed_gates:
  description: Names of the record's failed gates so far.
  returned: always
  type: list
  elements: str
  sample: [kai_release]
governance:
  description:
    - C(targets) (per object, its editors and through what) and C(broad) (the grants flagged).
  returned: always
  type: dict
"""

from ansible_collections.kaiops.runbooks.plugins.module_utils.ansible_module import run_module
from ansible_collections.kaiops.runbooks.plugins.module_utils.args_common import (
    AUTH_ARG_SPEC,
    JOURNAL_ARG_SPEC,
    KAI_NAMESPACE_ARG_SPEC,
    merge_specs,
)
from ansible_collections.kaiops.runbooks.plugins.module_utils.k8s.client import KUBERNETES
from ansible_collections.kaiops.runbooks.plugins.module_utils.rollout.change_runner import (
    run_rollout_governance,
)

# The shared action plugin gives `cluster`, when the task leaves it out, the host the task runs for.
CLUSTER_FROM_HOST = True


def argspec():
    return merge_specs(
        KAI_NAMESPACE_ARG_SPEC,
        AUTH_ARG_SPEC,
        JOURNAL_ARG_SPEC,
        {
            "namespaces": {"type": "list", "elements": "str", "default": []},
            "rule": {"type": "dict", "default": {}},
        },
    )


def main():
    run_module(argspec(), run_rollout_governance, libraries=[KUBERNETES])


if __name__ == "__main__":
    main()
