# -*- coding: utf-8 -*-
# Copyright: kaiops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

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
options:
  _input:
    description: The waves as given.
    type: raw
    required: true
"""

EXAMPLES = r"""
- name: Rollout - change each cluster (in the waves of the change request)
  hosts: all
  serial: "{{ kaiops_rollout_waves | default([1]) | kaiops.runbooks.serial }}"
  tasks: []
"""

RETURN = r"""
_value:
  description: The waves as Ansible's serial takes them, or V([1]) for waves the rule refuses.
  type: list
  elements: raw
"""

from ansible_collections.kaiops.runbooks.plugins.module_utils.vocabulary import (  # noqa: E402
    serial_list,
)


def serial(value):
    """The serial list for ``value``: the waves as read, or [1] when they are refused (the
    rollout's failure budget reads the waves through the same ``serial_list``)."""
    return serial_list(value)


class FilterModule(object):
    def filters(self):
        return {"serial": serial}
