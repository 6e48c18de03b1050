# Copyright: kaiops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action plugin of kai_rollout_request (plugin_utils/action.py): runs it on the controller.

It also gives the module the names of the kaiops_* variables set for the host (the module
refuses those outside the vocabulary), and extra vars that were neither name=value pairs nor a
mapping (ansible-playbook keeps such a -e as the variable _raw_params), unless the task gives
them.
"""

from ansible_collections.kaiops.runbooks.plugins.plugin_utils.action import KaiopsModuleAction


class ActionModule(KaiopsModuleAction):
    def extra_args(self, task_vars):
        extra = super(ActionModule, self).extra_args(task_vars)
        if "variables" not in self._task.args:
            extra["variables"] = sorted(name for name in task_vars if name.startswith("kaiops_"))
        if "stray_extra_vars" not in self._task.args and "_raw_params" in task_vars:
            extra["stray_extra_vars"] = [str(task_vars["_raw_params"])]
        return extra
