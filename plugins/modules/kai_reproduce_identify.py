#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: kaiops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
module: kai_reproduce_identify
short_description: Identify the KAI build a reproduce run exercises, before anything is planted
version_added: 0.2.0
author:
  - kaiops contributors (@kaiops)
description:
  - Reads KAI's Deployments (images, the binder's flags, the implementation label), Config
    C(kai-config) (GPU sharing) and the API server's version; read-only, also under check mode.
  - Fails when the binder does not run I(expected_version) or a Deployment is still rolling out.
extends_documentation_fragment:
  - kaiops.runbooks.attributes
  - kaiops.runbooks.k8s_auth
options:
  kai_namespace:
    description: KAI's namespace.
    type: str
    default: kai-scheduler
  expected_version:
    description: The build the run is about to exercise.
    type: str
  helm:
    description: The release as helm reports it (chart, app version, revision), recorded as given.
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
  kaiops.runbooks.kai_reproduce_identify:
    expected_version: v0.16.13
"""

RETURN = r"""
identity:
  description: Version (binder image tag), implementation, components, binder flags, GPU sharing.
  returned: success
  type: dict
"""

from ansible_collections.kaiops.runbooks.plugins.module_utils.ansible_module import run_module
from ansible_collections.kaiops.runbooks.plugins.module_utils.args_common import (
    AUTH_ARG_SPEC,
    merge_specs,
)
from ansible_collections.kaiops.runbooks.plugins.module_utils.k8s.client import KUBERNETES
from ansible_collections.kaiops.runbooks.plugins.module_utils.reproduce.runner import run_identify


def argspec():
    return merge_specs(
        AUTH_ARG_SPEC,
        {
            "kai_namespace": {"type": "str", "default": "kai-scheduler"},
            "expected_version": {"type": "str"},
            "helm": {"type": "dict", "default": {}},
        },
    )


def main():
    run_module(argspec(), run_identify, libraries=[KUBERNETES])


if __name__ == "__main__":
    main()
