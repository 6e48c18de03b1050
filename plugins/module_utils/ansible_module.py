# Copyright: kaiops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Every module's main(): build the AnsibleModule, check libraries, run the runner, turn the
package's exception into ``fail_json`` once, at the top.

    def main():
        run_module(argspec(), run_inventory_info, libraries=[KUBERNETES])

The runner is the only layer that exits (``module.exit_json``); lower layers raise
KaiopsError. ``libraries`` are ``(name, imported, import error)`` triples.
"""

from ansible.module_utils.basic import AnsibleModule, missing_required_lib

from ansible_collections.kaiops.runbooks.plugins.module_utils.errors import KaiopsError


def run_module(argspec, runner, libraries=(), **module_kwargs):
    module = AnsibleModule(argument_spec=argspec, supports_check_mode=True, **module_kwargs)
    for name, imported, error in libraries:
        if not imported:
            module.fail_json(msg=missing_required_lib(name), exception=str(error))
    try:
        runner(module)
    except KaiopsError as exc:
        module.fail_json(msg=exc.msg, **exc.result())
