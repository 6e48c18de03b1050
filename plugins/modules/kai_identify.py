#!/usr/bin/python
# Copyright: kaiops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

DOCUMENTATION = r"""
module: kai_identify
short_description: Read what KAI runs from its running components, and whether they agree
version_added: 0.1.0
author:
  - kaiops contributors (@kaiops)
description:
  - Reads KAI's component Deployments (images, owner, rollout state), the operator
    C(kai-operator), Config C(kai-config) (the image tags its spec names, its status conditions
    and their C(observedGeneration)), the admission webhooks that call a Service in KAI's
    namespace with the ready endpoints behind each (EndpointSlices), and the API server's
    version; read-only, also under check mode. The version that runs is the binder's image tag.
  - >-
    Names every disagreement between helm's release (given in I(helm)), the operator,
    C(kai-config) and the components as a finding, for example C(helm says v0.16.13, binder runs
    v0.16.14: split).
  - Rolled out to a version means every component Deployment runs it and is rolled out and, on an
    operator install, C(kai-config)'s conditions are current for its generation and Available and
    Ready, and every KAI webhook has a ready endpoint (with failurePolicy Fail, the API server
    refuses every pod the webhook admits until one is ready).
  - Without I(wait_s), fails when the binder does not run I(expected_version) or KAI is not rolled
    out. With I(wait_s), reads until KAI is rolled out to I(expected_version) or the bound passed
    and returns the measured seconds; not rolled out in time is returned, not a failure.
extends_documentation_fragment:
  - kaiops.runbooks.kai_namespaces
  - kaiops.runbooks.attributes
  - kaiops.runbooks.k8s_auth
options:
  expected_version:
    description: The version KAI must run (a release tag).
    type: str
  wait_s:
    description:
      - Seconds to wait for KAI to be rolled out to I(expected_version); 0 reads once.
    type: int
    default: 0
  helm:
    description:
      - The release as helm reports it (C(status), C(revision), C(chart), C(app_version)), compared
        with what runs; other keys are recorded as given.
    type: dict
    default: {}
attributes:
  check_mode:
    support: full
    details:
      - Read-only; it runs unchanged under C(--check).
"""

EXAMPLES = r"""
- name: Identify the installed build
  kaiops.runbooks.kai_identify:
    expected_version: v0.16.13

- name: Wait (bounded) for KAI's operator to roll every component to the target
  kaiops.runbooks.kai_identify:
    expected_version: v0.16.14
    wait_s: 180
"""

RETURN = r"""
identity:
  description: What runs, read from the components.
  returned: success
  type: dict
  contains:
    version:
      description: The binder's image tag.
      type: str
    implementation:
      description: C(kai), or C(standin) for the lab's stand-in.
      type: str
    components:
      description: Each component Deployment (name, images, tag, rolled_out, owner, managed_by).
      type: list
      elements: dict
    operator:
      description: The operator's version and rollout state, or null without an operator.
      type: dict
    config:
      description: kai-config's generation, image tags, conditions, C(current) and C(ready).
      type: dict
    helm:
      description: helm's release as given, with the release tag it names (C(version)).
      type: dict
    findings:
      description: Every disagreement between helm, the operator, kai-config and the components.
      type: list
      elements: str
    webhooks:
      description:
        - Each webhook that calls a Service in KAI's namespace (C(configuration), C(webhook),
          C(service), C(failure_policy)) with C(ready_endpoints), the ready endpoints behind it.
      type: list
      elements: dict
    all_rolled_out:
      description:
        - Every component rolled out (and the operator's Config reconciled), every webhook with a
          ready endpoint.
      type: bool
rolled_out:
  description: KAI runs I(expected_version) everywhere, rolled out.
  returned: success
  type: bool
rolled_out_s:
  description: Seconds the wait took (0 without I(wait_s)).
  returned: success
  type: float
reasons:
  description: Why KAI is not rolled out to I(expected_version).
  returned: success
  type: list
  elements: str
"""

from ansible_collections.kaiops.runbooks.plugins.module_utils.ansible_module import run_module
from ansible_collections.kaiops.runbooks.plugins.module_utils.args_common import (
    AUTH_ARG_SPEC,
    KAI_NAMESPACE_ARG_SPEC,
    merge_specs,
)
from ansible_collections.kaiops.runbooks.plugins.module_utils.k8s.client import KUBERNETES
from ansible_collections.kaiops.runbooks.plugins.module_utils.kai.runner import run_identify


def argspec():
    return merge_specs(
        KAI_NAMESPACE_ARG_SPEC,
        AUTH_ARG_SPEC,
        {
            "expected_version": {"type": "str"},
            "wait_s": {"type": "int", "default": 0},
            "helm": {"type": "dict", "default": {}},
        },
    )


def main():
    run_module(argspec(), run_identify, libraries=[KUBERNETES])


if __name__ == "__main__":
    main()
