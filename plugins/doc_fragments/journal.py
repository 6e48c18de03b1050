# Copyright: kaiops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The options of a module that keeps a cluster's rollout record in the run's journal; the
argument spec is module_utils/args_common.JOURNAL_ARG_SPEC."""


class ModuleDocFragment:
    DOCUMENTATION = r"""
options:
  cluster:
    description:
      - The cluster whose record the module reads and appends to.
      - When omitted, the module's action plugin gives it the host the task runs for
        (C(inventory_hostname)) - a host of this collection is a cluster.
    type: str
  evidence_dir:
    description:
      - The run's evidence folder (its bundle). The cluster's record lives in its
        C(journal.jsonl), appended to by the module that acts (C(bundle/journal.py)), and the
        module writes its other files there too.
      - When omitted, the module's action plugin gives it the run's folder on the controller, as
        the C(kaiops.runbooks.evidence) callback registered it for the task's play.
      - Without one (the callback is not enabled) there is no record to read or add to, and the
        module fails saying so.
      - The module never writes outside this folder and never replaces a file in it.
    type: path
"""
