# -*- coding: utf-8 -*-
# Copyright: kaiops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action plugin of kai_inventory_info (plugin_utils/action.py): runs it on the controller."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.kaiops.runbooks.plugins.plugin_utils.action import KaiopsModuleAction


class ActionModule(KaiopsModuleAction):
    pass
