# -*- coding: utf-8 -*-
# Copyright: kaiops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Reads of the recovery scan: one LIST per kind (Pods, ConfigMaps, BindRequests), one GET of the
binder Deployment and one of namespace kube-system, never one request per object. Shared: recovery
scans before it intervenes, the rollout's verification counts the stale objects it finds.

An API the cluster does not serve, or one the credentials may not read, is recorded in
``access``; only a failure to list Pods is fatal (nothing can be judged then). The writes
recovery makes are ``k8s/client.KubeWriter``'s; the decisions are in ``scan/findings.py``
and ``recovery/service.py``.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.kaiops.runbooks.plugins.module_utils.errors import KaiopsError
from ansible_collections.kaiops.runbooks.plugins.module_utils.k8s.access import read_optional
from ansible_collections.kaiops.runbooks.plugins.module_utils.kai import facts


class RecoveryClient(object):
    def __init__(self, client):
        self._client = client

    def _optional(self, access, section, read):
        """Run read(); record 'ok', 'forbidden' or 'not_served' for the section."""
        return read_optional(access, section, read, not_found="not_served")

    def collect(self, kai_namespace=facts.NAMESPACE, binder_deployment=facts.BINDER):
        """Every read recovery needs, in one dict."""
        client = self._client
        access = {}
        raw = {"access": access}
        try:
            raw["pods"] = client.list("v1", "Pod")
        except KaiopsError as exc:
            raise KaiopsError(
                "Failed to list pods: %s" % exc.msg,
                status=exc.status,
                http_status=exc.http_status,
            ) from exc
        access["pods"] = "ok"
        raw["configmaps"] = self._optional(
            access, "configmaps", lambda: client.list("v1", "ConfigMap")
        )
        raw["bind_requests"] = self._optional(
            access, "bind_requests", lambda: client.list(*facts.BIND_REQUEST)
        )
        raw["binder"] = self._optional(
            access,
            "binder",
            lambda: client.read(*facts.DEPLOYMENT, name=binder_deployment, namespace=kai_namespace),
        )
        if access["binder"] == "ok" and raw["binder"] is None:
            access["binder"] = "absent"
        kube_system = self._optional(
            access, "kube_system", lambda: client.read("v1", "Namespace", "kube-system")
        )
        raw["disposable"] = (
            facts.annotations(kube_system).get(facts.DISPOSABLE_ANNOTATION) == "true"
            if kube_system is not None
            else None
        )
        raw["api_calls"] = client.calls
        return raw
