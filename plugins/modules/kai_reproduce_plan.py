#!/usr/bin/python
# Copyright: kaiops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

DOCUMENTATION = r"""
module: kai_reproduce_plan
short_description: Check a reproduce run's options and plan its builds and cases
version_added: 0.1.0
author:
  - kaiops contributors (@kaiops)
description:
  - Checks every option and names each bad one with its fix, all at once; makes no request.
  - Resolves each build (C(pre), C(patched) or a release tag) against KAI's release facts in
    C(meta/kai_releases.yml) - its ConfigMap-write behaviour, whether it is exposed to the
    nil-data panic, where that fact came from, and the chart helm installs it from.
extends_documentation_fragment:
  - kaiops.runbooks.attributes
options:
  cases:
    description: Cases to run; empty means all.
    type: list
    elements: str
    default: []
  builds:
    description: Builds to compare, each installed on its own, in order.
    type: list
    elements: str
    default: [pre, patched]
  chart_ref:
    description: Chart reference; C({version}) in it is replaced by each build's version.
    type: str
    default: ""
  install:
    description: Whether the run installs each build through helm (else each must already run).
    type: bool
    default: true
  window_s:
    description: How long each case follows its pods.
    type: int
    default: 60
  concurrency:
    description: Simultaneous submissions in the concurrency case.
    type: int
    default: 20
  allow_non_disposable:
    description: Plant fixtures on a cluster not marked disposable.
    type: bool
    default: false
  override_reason:
    description: Why, when I(allow_non_disposable) is set; recorded in the report.
    type: str
    default: ""
  pair:
    description: The version pair; given by the action plugin from the release facts.
    type: dict
  releases:
    description: The release table; given by the action plugin from the release facts.
    type: list
    elements: dict
  behaviours:
    description: The behaviours; given by the action plugin from the release facts.
    type: dict
attributes:
  check_mode:
    support: full
    details:
      - It makes no request; it checks options and returns the plan, also under C(--check).
"""

EXAMPLES = r"""
- name: Plan the run
  kaiops.runbooks.kai_reproduce_plan:
    builds: [pre, patched]
    chart_ref: /srv/charts/kai-scheduler-{version}.tgz
"""

RETURN = r"""
plan:
  description: Builds (version, exposed, behaviour, source, chart), ordered cases, window, override.
  returned: success
  type: dict
"""

from ansible_collections.kaiops.runbooks.plugins.module_utils.ansible_module import run_module
from ansible_collections.kaiops.runbooks.plugins.module_utils.reproduce.runner import run_plan

RELEASE_DEFAULTS = {"pair": "pair", "releases": "releases", "behaviours": "behaviours"}


def argspec():
    return {
        "cases": {"type": "list", "elements": "str", "default": []},
        "builds": {"type": "list", "elements": "str", "default": ["pre", "patched"]},
        "chart_ref": {"type": "str", "default": ""},
        "install": {"type": "bool", "default": True},
        "window_s": {"type": "int", "default": 60},
        "concurrency": {"type": "int", "default": 20},
        "allow_non_disposable": {"type": "bool", "default": False},
        "override_reason": {"type": "str", "default": ""},
        "pair": {"type": "dict"},
        "releases": {"type": "list", "elements": "dict"},
        "behaviours": {"type": "dict"},
    }


def main():
    run_module(argspec(), run_plan)


if __name__ == "__main__":
    main()
