# Copyright: kaiops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The shared action plugin (plugin_utils/action.py): it runs kai_identify, and every module of
the collection without behaviour of its own, on the controller with its context.

meta/runtime.yml names it as those modules' ``action_plugin`` (``plugin_routing: modules``); the
plugin finds the module the task names through the module loader. It carries the name of a real
module because ansible-test sanity wants each action plugin to have one to document it.
"""

from ansible_collections.kaiops.runbooks.plugins.plugin_utils.action import KaiopsModuleAction


class ActionModule(KaiopsModuleAction):
    pass
