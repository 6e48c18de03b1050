# Copyright: kaiops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

DOCUMENTATION = r"""
name: serial
short_description: A play's serial from the waves of a change request, never one Ansible rejects
version_added: 0.1.0
author:
  - kaiops contributors (@kaiops)
description:
  - Reads the waves (C(kaiops_rollout_waves)) by the rollout's own rule (C(read_waves) of
    C(plugins/module_utils/vocabulary.py)) - numbers of clusters (1 or more) or percentages.
  - Waves that rule refuses give V([1]) (one cluster at a time) - the request play has refused every
    cluster already (gate C(waves)), so nothing changes in them; Ansible's serial never sees them.
  - With a canary group (C(kaiops_rollout_canary)), a first wave of as many clusters as the
    group has, the waves as read after it (the play's hosts put the group first -
    C(canary_first)).
options:
  _input:
    description: The waves as given.
    type: raw
    required: true
  canary:
    description:
      - The canary group's name (C(kaiops_rollout_canary)); none, or not a group's, adds no wave.
    type: raw
    default: ""
  groups:
    description:
      - The inventory's groups (Ansible's C(groups)), where the canary group's clusters are.
    type: dict
    default: {}
"""

EXAMPLES = r"""
- name: Rollout - change each cluster (in the waves of the change request)
  hosts: all
  serial: "{{ kaiops_rollout_waves | default([1]) | kaiops.runbooks.serial }}"
  tasks: []

- name: The same with a canary group given with -e kaiops_rollout_canary=canary
  hosts: "{{ kaiops_rollout_canary | default('') | kaiops.runbooks.canary_first }}"
  serial: >-
    {{ kaiops_rollout_waves | default([1])
       | kaiops.runbooks.serial(kaiops_rollout_canary | default(''), groups) }}
  tasks: []
"""

RETURN = r"""
_value:
  description: The waves as Ansible's serial takes them, or V([1]) for waves the rule refuses.
  type: list
  elements: raw
"""

from ansible_collections.kaiops.runbooks.plugins.module_utils.vocabulary import (  # noqa: E402
    canary_hosts,
    serial_list,
)


def serial(value, canary="", groups=None):
    """The serial list for ``value``: the waves as read, or [1] when they are refused (the
    rollout's failure budget reads the waves through the same ``serial_list``); the canary
    group's clusters a wave of their own before them."""
    return serial_list(value, len(canary_hosts(canary, groups or {})))


class FilterModule:
    def filters(self):
        return {"serial": serial}
