# Copyright: kaiops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

DOCUMENTATION = r"""
name: canary_first
short_description: The rollout's host pattern, a named canary group's clusters first
version_added: 0.1.0
author:
  - kaiops contributors (@kaiops)
description:
  - V(<group>:all) for a canary group's name (C(kaiops_rollout_canary)), so that the play's
    hosts start with the group's clusters and Ansible's serial makes them the first wave
    (C(serial)); V(all) when no name is given or it cannot be a group's (letters, digits and
    V(_), not starting with a digit) - the request check refuses such a name, so nothing changes.
options:
  _input:
    description: The canary group's name, or none.
    type: raw
    required: true
"""

EXAMPLES = r"""
- name: Rollout - change each cluster, the canary group's first
  hosts: "{{ kaiops_rollout_canary | default('') | kaiops.runbooks.canary_first }}"
  tasks: []
"""

RETURN = r"""
_value:
  description: The host pattern.
  type: str
"""

from ansible_collections.kaiops.runbooks.plugins.module_utils.vocabulary import (  # noqa: E402
    canary_first as _canary_first,
)


def canary_first(name):
    """``<group>:all`` for a canary group's name, ``all`` otherwise."""
    return _canary_first(name)


class FilterModule:
    def filters(self):
        return {"canary_first": canary_first}
