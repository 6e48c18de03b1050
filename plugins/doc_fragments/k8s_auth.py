# Copyright: kaiops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Options for reaching a cluster; the argument spec is module_utils/args_common.AUTH_ARG_SPEC."""


class ModuleDocFragment:
    DOCUMENTATION = r"""
options:
  kubeconfig:
    description:
      - Path to the kubeconfig file of the cluster, on the controller (the collection's modules
        run on the controller, whatever the host's connection, since a host is a cluster).
      - When omitted, the C(KUBECONFIG) environment variable, then C(~/.kube/config), then the
        in-cluster service account are tried, as C(kubectl) does.
    type: path
  context:
    description:
      - Name of the context in O(kubeconfig) to use. Defaults to the kubeconfig's current context.
    type: str
  request_timeout:
    description:
      - Seconds to wait for the API server to connect and to answer each request.
      - An API server that does not answer within this time is reported as unreachable.
    type: int
    default: 30
requirements:
  - kubernetes (Python client) >= 33
"""
