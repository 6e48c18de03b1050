# Copyright: kaiops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The base of the collection's action plugins: controller-side context for a module.

Every module of the collection runs through ``KaiopsModuleAction``. One shared action plugin,
``plugins/action/kai_identify.py``, serves every module that has no behaviour of its own:
``meta/runtime.yml`` names it as their ``action_plugin`` (``plugin_routing: modules: <name>:``;
kubernetes.core shares its action plugins too); a module with behaviour of its own (``kai_request``,
``kai_rollout_request``) keeps its file, a subclass that adds ``extra_args``. Before the module
runs the plugin:

1. fills in, when the task leaves them out, the options the module takes from KAI's release
   facts (``RELEASE_DEFAULTS`` in the module file; ``plugin_utils/releases.py``);
2. gives a module that writes evidence the run's bundle (``evidence_dir``) and a module that
   searches the evidence store its root (``evidence_root``), from the play's run context
   (``plugin_utils/run_context.py``, registered by the evidence callback) - no environment
   variable is involved;
3. gives a module that renders a report the collection's templates folder (``template_dir``):
   a module runs from a zip that holds Python files only;
4. drops the connection options (``kubeconfig``, ``context``, ``request_timeout``) that
   ``module_defaults: group/kaiops.runbooks.kai`` gives every module of the group, for modules
   that do not reach a cluster;
5. gives a module that keeps a cluster's record in the run's journal (``CLUSTER_FROM_HOST`` in
   its file) the host it runs for, ``inventory_hostname``, as ``cluster`` unless the task names
   one: a host of this collection is a cluster;
6. runs the module on the controller, in the Python that runs Ansible (where the collection's
   requirements are installed), whatever the host's connection: a host of this collection is
   a Kubernetes cluster, reached through its API server with a kubeconfig on the controller;
7. runs it in the background when the task says ``async`` (as Ansible's own action does):
   reproduce's recovery case watches the stuck work while the next build is installed.

The module is the one the task names, found through the module loader (redirects included):
the task's ``resolved_action`` names the action plugin, which for a routed module is the shared
one, not the module.
"""

import importlib
import os
import sys

from ansible.plugins.action import ActionBase
from ansible.plugins.loader import connection_loader

from ansible_collections.kaiops.runbooks.plugins.plugin_utils import releases, run_context

MODULES_PACKAGE = "ansible_collections.kaiops.runbooks.plugins.modules"
CONNECTION_OPTIONS = ("kubeconfig", "context", "request_timeout")
TEMPLATE_DIR = os.path.join(releases.COLLECTION_ROOT, "templates", "reports")


def module_code(resolved_action):
    """The module's Python file, imported on the controller for its argspec and declarations."""
    return importlib.import_module("%s.%s" % (MODULES_PACKAGE, resolved_action.split(".")[-1]))


def controller_args(code, args, context, facts=None):
    """The module's arguments with the controller's context filled in (pure; see the module doc)."""
    spec = code.argspec()
    out = dict(args)
    for option in CONNECTION_OPTIONS:
        if option in out and option not in spec:
            del out[option]
    for option, dotted in getattr(code, "RELEASE_DEFAULTS", {}).items():
        if out.get(option) is None:
            out[option] = releases.value(dotted, facts)
    if "template_dir" in spec and not out.get("template_dir"):
        out["template_dir"] = TEMPLATE_DIR
    if context:
        if "evidence_dir" in spec and not out.get("evidence_dir"):
            out["evidence_dir"] = context["dir"]
        if "evidence_root" in spec and not out.get("evidence_root"):
            out["evidence_root"] = context["root"]
    return out


class KaiopsModuleAction(ActionBase):
    TRANSFERS_FILES = False
    _supports_async = True

    def extra_args(self, task_vars):
        """Arguments a subclass adds from the task's variables (none by default)."""
        return {}

    def run(self, tmp=None, task_vars=None):
        task_vars = task_vars or {}
        result = super(KaiopsModuleAction, self).run(tmp, task_vars)
        del tmp  # tmp no longer has any effect
        module = self._module_name()
        code = module_code(module)
        args = controller_args(code, self._task.args, run_context.for_task(self._task))
        args.update(cluster_from_host(code, self._task.args, task_vars))
        args.update(self.extra_args(task_vars))
        result.update(self._run_on_controller(module, args, task_vars))
        return result

    def _module_name(self):
        """The FQCN of the module the task names, through meta/runtime.yml's redirects."""
        found = self._shared_loader_obj.module_loader.find_plugin_with_context(
            self._task.action, collection_list=self._task.collections
        )
        if found.resolved:
            return found.resolved_fqcn
        return self._task.resolved_action or self._task.action

    def _run_on_controller(self, action, args, task_vars):
        if not getattr(self._connection, "_remote_is_local", False):
            local = connection_loader.get("ansible.builtin.local", self._play_context)
            local.set_options()
            local._shell.set_options()
            self._connection = local
        task_vars = dict(task_vars, ansible_python_interpreter=sys.executable)
        # the module's temporary folder goes in ActionBase.cleanup, kept while an async job runs
        wrap_async = bool(self._task.async_val) and not self._connection.has_native_async
        if wrap_async:
            # where async_status looks: ~ as the user's home, not $HOME, which the job would use
            shell = self._connection._shell
            shell.set_option("async_dir", self._remote_expand_user(shell.get_option("async_dir")))
        return self._execute_module(
            module_name=action, module_args=args, task_vars=task_vars, wrap_async=wrap_async
        )


def cluster_from_host(code, args, task_vars):
    """``cluster`` for a module that declares ``CLUSTER_FROM_HOST``, unless the task names one."""
    if not getattr(code, "CLUSTER_FROM_HOST", False) or args.get("cluster"):
        return {}
    return {"cluster": task_vars.get("inventory_hostname")}
