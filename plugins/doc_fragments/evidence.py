# Copyright: kaiops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The evidence folder option; the argument spec is module_utils/args_common.EVIDENCE_ARG_SPEC."""


class ModuleDocFragment:
    DOCUMENTATION = r"""
options:
  evidence_dir:
    description:
      - The run's evidence folder, into which the module writes its files.
      - When omitted, the module's action plugin gives it the run's folder on the controller, as
        the C(kaiops.runbooks.evidence) callback registered it for the task's play (the run's
        context), whatever the host's connection.
      - When there is none (the callback is not enabled) the module writes nothing and warns;
        its result is unchanged.
      - The module never writes outside this folder and never replaces a file in it.
    type: path
"""
