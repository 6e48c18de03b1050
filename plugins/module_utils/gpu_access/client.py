# Copyright: kaiops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Client layer of gpu_access: the reads, I/O only, no decisions.

Two reads, each one dict of what the API server answered:

- ``configuration``: what the cluster is configured to enforce, read before any workload is
  declared: KAI's Config ``kai-config``, the admission and binder Deployments (their container
  arguments), the queues, the nodes. Each section is optional: a 403 or an API the cluster does
  not serve is recorded in ``access`` and the rest carries on.
- ``case_state``: the KAI side of one case's pods while they run: the pods, their PodGroups and
  BindRequests, the ConfigMaps of the namespace and the reservation pods (namespace
  ``kai-resource-reservation``). The namespace is the run's own; nothing else is read there.

The decisions are in ``plan.py`` (configuration) and ``service.py`` (the rules).
"""

from ansible_collections.kaiops.runbooks.plugins.module_utils.k8s.access import Reads
from ansible_collections.kaiops.runbooks.plugins.module_utils.kai import facts

CASE_LABEL = "kaiops.dev/gpu-access-case"


class GpuAccessClient:
    """Reads of kai_gpu_access_plan and kai_gpu_access_watch over one KubeClient."""

    def __init__(self, client):
        self._client = client

    def configuration(self, kai_namespace):
        """KAI's configuration, its admission and binder arguments, the queues and the nodes."""
        client = self._client
        reads = Reads(not_found="absent")
        read = reads.optional
        raw = {"access": reads.access, "kai_namespace": kai_namespace}
        raw["kai_config"] = read(
            "kai_config", client.read, *facts.KAI_CONFIG, facts.KAI_CONFIG_NAME
        )
        raw["deployments"] = read(
            "deployments", client.list, *facts.DEPLOYMENT, namespace=kai_namespace
        )
        raw["queues"] = read("queues", client.list, *facts.QUEUE)
        raw["nodes"] = read("nodes", client.list, "v1", "Node")
        return raw

    def case_state(self, namespace, case, reservation_namespace=facts.RESERVATION_NAMESPACE):
        """One read of a case's pods and what KAI made for them (see the module docstring)."""
        client = self._client
        reads = Reads(not_found="absent")
        read = reads.optional
        selector = "%s=%s" % (CASE_LABEL, case)
        raw = {"access": reads.access}
        raw["pods"] = client.list("v1", "Pod", namespace, label_selector=selector)
        raw["pod_groups"] = read("pod_groups", client.list, *facts.POD_GROUP, namespace=namespace)
        raw["bind_requests"] = read(
            "bind_requests", client.list, *facts.BIND_REQUEST, namespace=namespace
        )
        raw["configmaps"] = read("configmaps", client.list, "v1", "ConfigMap", namespace)
        raw["reservation_pods"] = read(
            "reservation_pods",
            client.list,
            "v1",
            "Pod",
            reservation_namespace,
            label_selector=facts.RESERVATION_APP_LABEL,
        )
        return raw
