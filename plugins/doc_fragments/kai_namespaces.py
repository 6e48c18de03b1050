# Copyright: kaiops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""KAI's namespaces, documented once; the argument specs are
module_utils/args_common.KAI_NAMESPACE_ARG_SPEC and RESERVATION_NAMESPACE_ARG_SPEC (kept in step:
tests/unit/plugins/doc_fragments/test_kai_namespaces.py)."""


class ModuleDocFragment:
    # kaiops.runbooks.kai_namespaces
    DOCUMENTATION = r"""
options:
  kai_namespace:
    description:
      - Namespace of the KAI release, where its component Deployments (admission, binder,
        scheduler, operator) and their pods and logs are read.
    type: str
    default: kai-scheduler
"""

    # kaiops.runbooks.kai_namespaces.reservation
    RESERVATION = r"""
options:
  reservation_namespace:
    description:
      - Namespace of KAI's GPU reservation pods.
    type: str
    default: kai-resource-reservation
"""
