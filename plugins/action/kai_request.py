# Copyright: kaiops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action plugin of kai_request (plugin_utils/action.py): runs it on the controller.

It gives the module what only the controller knows: the host's variables as written (the task's
variables before Ansible templates them) for the fields a person writes - a template there is
never rendered -, the playbook's other variables templated, the names of the ``kaiops_*``
variables set for the host, what is at each path the user gave (resolved from the directory the
command runs in; a rollback bundle also from the evidence store), and whether the evidence store
could hold the run's bundle (the run's context, ``plugin_utils/run_context.py``).
"""

import os

import yaml

from ansible_collections.kaiops.runbooks.plugins.module_utils.request import rules
from ansible_collections.kaiops.runbooks.plugins.plugin_utils import paths, run_context
from ansible_collections.kaiops.runbooks.plugins.plugin_utils.action import KaiopsModuleAction

BUNDLE = "kaiops_rollout_rollback_bundle"
KUBECONFIG = "kaiops_kubeconfig"
COLLECTION = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def role_options(role):
    """The options of the collection's role ``role`` (its meta/argument_specs.yml), or None."""
    path = os.path.join(COLLECTION, "roles", role, "meta", "argument_specs.yml")
    try:
        with open(path) as handle:
            return yaml.safe_load(handle)["argument_specs"]["main"]["options"]
    except (OSError, KeyError, TypeError, yaml.YAMLError):
        return None


def _paths_given(given, root):
    """{path: what is there} for the kubeconfig and the bundle the request gives; the bundle
    is resolved from where the command runs (``root``), in ``given`` too."""
    found = {}
    if isinstance(given.get(KUBECONFIG), str) and given[KUBECONFIG]:
        found[given[KUBECONFIG]] = paths.kind(paths.resolve(given[KUBECONFIG]))
    if isinstance(given.get(BUNDLE), str) and given[BUNDLE].strip():
        resolved = paths.resolve(given[BUNDLE].strip(), root)
        given[BUNDLE] = resolved
        found[resolved] = paths.kind(resolved)
    return found


class ActionModule(KaiopsModuleAction):
    def _templated(self, task_vars, wanted):
        """({name: its value templated}, {name: why templating it failed}) of ``wanted``."""
        given, errors = {}, {}
        for name in wanted:
            try:
                given[name] = self._templar.template(task_vars[name])
            except Exception as exc:  # noqa: BLE001 - an undefined name, a bad template...
                errors[name] = (str(exc).splitlines() or [type(exc).__name__])[0][:300]
        return given, errors

    def extra_args(self, task_vars):
        args = self._task.args
        if args.get("refusals") is not None:
            return {}
        table = rules.PLAYBOOKS.get(args.get("playbook")) or {"vars": {}}
        names = [n for n in task_vars if isinstance(n, str)]
        raw = {
            n: task_vars[n]
            for n in rules.judged_names(args.get("playbook"), names)
            if n in task_vars
        }
        templated = {name for name, _field in rules.templated_fields(raw)}
        role = table.get("role")
        mine = [n for n in names if role and n.startswith(role + "_")]
        wanted = [n for n in list(table["vars"]) + mine if n in task_vars and n not in templated]
        given, errors = self._templated(task_vars, wanted)
        context = run_context.for_task(self._task) or {}
        found = _paths_given(given, context.get("root"))
        out = {
            "role_options": role_options(role) if role else None,
            "given": given,
            "raw": raw,
            "names": sorted(name for name in names if name.startswith("kaiops_")),
            "paths": found,
            "errors": errors,
        }
        if context.get("problem"):
            out["evidence_problem"] = context["problem"]
        return out
