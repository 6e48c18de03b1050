# Copyright: kaiops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Reads of kai_inventory_info: every read the inventory needs, in one dict.

About ten LIST/GET requests whatever the cluster size, plus one ConfigMap LIST per namespace
that holds GPU-sharing pods. A 403 or a missing API on an optional section is recorded in
``access`` and the rest carries on; failing to read the server version (unreachable, 401, 403)
raises, since nothing else can be trusted then. The decisions are in ``inventory/service.py``;
which pods and ConfigMaps to read is KAI's (``kai/facts.py``): a client never asks its service.
"""

from ansible_collections.kaiops.runbooks.plugins.module_utils.k8s.access import Reads
from ansible_collections.kaiops.runbooks.plugins.module_utils.kai import facts


class InventoryClient:
    def __init__(self, client):
        self._client = client

    def collect(self, namespace, release_name=None):
        """Every read the inventory needs, in one dict; see module docstring for failures."""
        client = self._client
        reads = Reads(not_found="absent")
        read = reads.optional
        raw = {"namespace": namespace, "release_name": release_name, "access": reads.access}
        raw["version"] = client.server_version()  # fatal when it fails
        raw["deployments"] = read(
            "deployments", client.list, *facts.DEPLOYMENT, namespace=namespace
        )
        raw["kai_pods"] = read("kai_pods", client.list, "v1", "Pod", namespace)
        raw["kai_config"] = read(
            "kai_config", client.read, *facts.KAI_CONFIG, facts.KAI_CONFIG_NAME
        )
        helm = "owner=helm" + (",name=" + release_name if release_name else "")
        query = {"label_selector": helm, "metadata_only": True}
        raw["helm_secrets"] = read("helm_releases", client.list, "v1", "Secret", namespace, **query)
        raw["pods"] = read("pods", client.list, "v1", "Pod", metadata_only=True)
        raw["nodes"] = read("nodes", client.list, "v1", "Node")
        raw["bind_requests"] = read("bind_requests", client.list, *facts.BIND_REQUEST)
        raw["cluster_policies"] = read("cluster_policies", client.list, *facts.CLUSTER_POLICY)
        raw["device_plugin_configmaps"] = []
        for name in facts.device_plugin_config_names(raw["cluster_policies"] or []):
            selector = "metadata.name=" + name
            found = read(
                "device_plugin_config", client.list, "v1", "ConfigMap", field_selector=selector
            )
            raw["device_plugin_configmaps"].extend(found or [])
        raw["sharing_configmaps"] = {}
        fraction = facts.fraction_pods(raw["pods"] or [])
        for ns in sorted({p["metadata"]["namespace"] for p in fraction}):
            found = read("sharing_configmaps", client.list, "v1", "ConfigMap", ns)
            raw["sharing_configmaps"][ns] = found or []
        raw["api_calls"] = client.calls
        return raw
