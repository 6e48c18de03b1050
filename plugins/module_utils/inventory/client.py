# Copyright: kaiops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Reads of kai_inventory_info: every read the inventory needs, in one dict.

About ten LIST/GET requests whatever the cluster size, plus one ConfigMap LIST per namespace
that holds GPU-sharing pods. A 403 or a missing API on an optional section is recorded in
``access`` and the rest carries on; failing to read the server version (unreachable, 401, 403)
raises, since nothing else can be trusted then. The decisions are in ``inventory/service.py``;
which pods and ConfigMaps to read is KAI's (``kai/facts.py``): a client never asks its service.
"""

from ansible_collections.kaiops.runbooks.plugins.module_utils.k8s.access import read_optional
from ansible_collections.kaiops.runbooks.plugins.module_utils.kai import facts


class InventoryClient:
    def __init__(self, client):
        self._client = client

    def _optional(self, access, section, read):
        """Run read(); record 'ok', 'forbidden' or 'absent' for the section."""
        return read_optional(access, section, read, not_found="absent")

    def collect(self, namespace, release_name=None):
        """Every read the inventory needs, in one dict; see module docstring for failures."""
        client = self._client
        access = {}
        raw = {"namespace": namespace, "release_name": release_name, "access": access}
        raw["version"] = client.server_version()  # fatal when it fails
        raw["deployments"] = self._optional(
            access, "deployments", lambda: client.list(*facts.DEPLOYMENT, namespace=namespace)
        )
        raw["kai_pods"] = self._optional(
            access, "kai_pods", lambda: client.list("v1", "Pod", namespace)
        )
        raw["kai_config"] = self._optional(
            access,
            "kai_config",
            lambda: client.read(facts.KAI_CONFIG[0], facts.KAI_CONFIG[1], facts.KAI_CONFIG_NAME),
        )
        raw["helm_secrets"] = self._optional(
            access,
            "helm_releases",
            lambda: client.list(
                "v1",
                "Secret",
                namespace,
                label_selector="owner=helm" + (",name=" + release_name if release_name else ""),
                metadata_only=True,
            ),
        )
        raw["pods"] = self._optional(
            access, "pods", lambda: client.list("v1", "Pod", metadata_only=True)
        )
        raw["nodes"] = self._optional(access, "nodes", lambda: client.list("v1", "Node"))
        raw["bind_requests"] = self._optional(
            access, "bind_requests", lambda: client.list(*facts.BIND_REQUEST)
        )
        raw["cluster_policies"] = self._optional(
            access, "cluster_policies", lambda: client.list(*facts.CLUSTER_POLICY)
        )
        raw["device_plugin_configmaps"] = []
        for name in facts.device_plugin_config_names(raw["cluster_policies"] or []):
            found = self._optional(
                access,
                "device_plugin_config",
                lambda name=name: client.list(
                    "v1", "ConfigMap", field_selector="metadata.name=" + name
                ),
            )
            raw["device_plugin_configmaps"].extend(found or [])
        raw["sharing_configmaps"] = {}
        fraction = facts.fraction_pods(raw["pods"] or [])
        for ns in sorted({p["metadata"]["namespace"] for p in fraction}):
            found = self._optional(
                access, "sharing_configmaps", lambda ns=ns: client.list("v1", "ConfigMap", ns)
            )
            raw["sharing_configmaps"][ns] = found or []
        raw["api_calls"] = client.calls
        return raw
