# Copyright: kaiops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

DOCUMENTATION = r"""
name: upgrade_values
short_description: A KAI upgrade's Helm values - the release's own re-pointed, then the request's
version_added: 0.1.0
author:
  - kaiops contributors (@kaiops)
description:
  - The values the release was given, where every text equal to the version that ran is the
    version under test, then the change request's values merged over them key by key
    (C(upgrade_values) of C(plugins/module_utils/rollout/values.py) says why).
options:
  _input:
    description: The release's user-supplied values (C(helm get values)); null or V({}) for none.
    type: raw
    required: true
  requested:
    description: The change request's values (C(kaiops_kai_helm_values)).
    type: dict
    required: true
  before:
    description: The KAI version that ran before the change.
    type: str
    required: true
  target:
    description: The KAI version under test.
    type: str
    required: true
"""

EXAMPLES = r"""
- name: Upgrade KAI through helm
  kubernetes.core.helm:
    name: kai-scheduler
    chart_ref: /charts/kai-scheduler-v0.16.14.tgz
    values: "{{ (given | kaiops.runbooks.upgrade_values({}, 'v0.16.13', 'v0.16.14'))['values'] }}"
"""

RETURN = r"""
_value:
  description: The upgrade's values and where a value was re-pointed to the version under test.
  type: dict
  contains:
    values:
      description: The values to give helm.
      type: dict
    repointed:
      description: Dotted paths of the values that named the version that ran (never the values).
      type: list
      elements: str
"""

from ansible_collections.kaiops.runbooks.plugins.module_utils.rollout.values import (  # noqa: E402
    upgrade_values,
)


class FilterModule:
    def filters(self):
        return {"upgrade_values": upgrade_values}
