# Copyright: kaiops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Reads of the shared scans, one LIST per kind, never one request per object.

``RecoveryClient``: the reads of the recovery scan: one LIST per kind (Pods, ConfigMaps,
BindRequests), one GET of the binder Deployment and one of namespace kube-system. Shared: recovery
scans before it intervenes, the rollout's verification counts the stale objects it finds.

An API the cluster does not serve, or one the credentials may not read, is recorded in
``access``; only a failure to list Pods is fatal (nothing can be judged then). The writes
recovery makes are ``k8s/client.KubeWriter``'s; the decisions are in ``scan/findings.py``
and ``recovery/service.py``.

``PendingClient``: the reads of the Pending diagnosis (``scan/pending.py``), shared by
diagnose.yml and recovery.yml's cause per Pending pod: every Pod (fatal when it fails: nothing
can be judged then), PodGroups, Queues, BindRequests, Nodes, KAI's Deployments and Config; Events
of the namespaces that hold Pending pods KAI schedules, of KAI's namespace and of the reservation
namespace; ConfigMaps of the namespaces that hold Pending GPU-sharing pods; the recent log of
KAI's scheduler, binder and pod grouper pods (``tailLines``, ``sinceSeconds``). A 403 or an API
the cluster does not serve is recorded in ``access`` and the rest carries on.
"""

from ansible_collections.kaiops.runbooks.plugins.module_utils.errors import KaiopsError
from ansible_collections.kaiops.runbooks.plugins.module_utils.k8s.access import Reads
from ansible_collections.kaiops.runbooks.plugins.module_utils.kai import facts
from ansible_collections.kaiops.runbooks.plugins.module_utils.scan.pending import (
    COMPONENT_DEPLOYMENTS,
    pending_pods,
)


class RecoveryClient:
    def __init__(self, client):
        self._client = client

    def collect(self, kai_namespace=facts.NAMESPACE, binder_deployment=facts.BINDER):
        """Every read recovery needs, in one dict."""
        client = self._client
        reads = Reads(not_found="not_served")
        access, read = reads.access, reads.optional
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
        raw["configmaps"] = read("configmaps", client.list, "v1", "ConfigMap")
        raw["bind_requests"] = read("bind_requests", client.list, *facts.BIND_REQUEST)
        binder = {"name": binder_deployment, "namespace": kai_namespace}
        raw["binder"] = read("binder", client.read, *facts.DEPLOYMENT, **binder)
        if access["binder"] == "ok" and raw["binder"] is None:
            access["binder"] = "absent"
        kube_system = read("kube_system", client.read, "v1", "Namespace", "kube-system")
        raw["disposable"] = (
            facts.annotations(kube_system).get(facts.DISPOSABLE_ANNOTATION) == "true"
            if kube_system is not None
            else None
        )
        raw["api_calls"] = client.calls
        return raw


# The components whose recent log can show the API server refusing them (401/403).
LOGGED_COMPONENTS = ("scheduler", "binder", "pod-grouper")


def _merge(access, section, parts):
    """One access entry for a section read in several requests: the worst of them."""
    for worst in ("forbidden", "not_served"):
        if worst in parts:
            access[section] = worst
            return
    access[section] = "ok"


class PendingClient:
    """Reads of the Pending diagnosis (diagnose.yml, and recovery.yml's cause per Pending pod)."""

    def __init__(self, client):
        self._client = client

    def _per_namespace(self, access, section, namespaces, read):
        """read(ns) for each namespace, concatenated; access is the worst of the reads."""
        items, parts = [], []
        for ns in sorted(namespaces):
            part = Reads(not_found="not_served")
            items.extend(part.optional(section, read, ns) or [])
            parts.append(part.access.get(section))
        _merge(access, section, parts)
        return items

    def _pods(self):
        try:
            return self._client.list("v1", "Pod")
        except KaiopsError as exc:
            raise KaiopsError(
                "Failed to list pods: %s" % exc.msg, status=exc.status, http_status=exc.http_status
            ) from exc

    def collect(self, kai_namespace, reservation_namespace, scheduler_name, logs=None, pods=None):
        """Every read the diagnosis needs; ``logs``: {tail_lines, since_s} or None (no log);
        ``pods``: every pod, when the caller listed them already (recovery's scan)."""
        client = self._client
        reads = Reads(not_found="not_served", access={"pods": "ok"})
        access, read = reads.access, reads.optional
        raw = {
            "access": access,
            "kai_namespace": kai_namespace,
            "reservation_namespace": reservation_namespace,
            "scheduler_name": scheduler_name,
        }
        raw["pods"] = self._pods() if pods is None else pods
        for section, kind in (
            ("podgroups", facts.POD_GROUP),
            ("queues", facts.QUEUE),
            ("bindrequests", facts.BIND_REQUEST),
            ("nodes", ("v1", "Node")),
        ):
            raw[section] = read(section, client.list, *kind)
        raw["deployments"] = read(
            "deployments", client.list, *facts.DEPLOYMENT, namespace=kai_namespace
        )
        raw["kai_config"] = Reads(not_found="not_served").optional(
            "kai_config", client.read, *facts.KAI_CONFIG, name=facts.KAI_CONFIG_NAME
        )
        pending = list(pending_pods(raw["pods"], scheduler_name, reservation_namespace))
        namespaces = {p["metadata"]["namespace"] for p in pending}
        raw["events"] = self._per_namespace(
            access,
            "events",
            namespaces | {kai_namespace, reservation_namespace},
            lambda ns: client.list("v1", "Event", ns),
        )
        sharing_ns = {p["metadata"]["namespace"] for p in pending if facts.on_sharing_path(p)}
        raw["configmaps"] = self._per_namespace(
            access, "configmaps", sharing_ns, lambda ns: client.list("v1", "ConfigMap", ns)
        )
        raw["logs"] = self._logs(access, raw, kai_namespace, logs) if logs else {}
        if not logs:
            access["logs"] = "not_asked"
        raw["api_calls"] = client.calls
        return raw

    def _log(self, path, what, query):
        """A pod's recent log; '' when it has none yet (400: its container is waiting to start)
        or no longer (404: the pod is gone): neither says anything about the API server."""
        try:
            return self._client.text(path, what, query)
        except KaiopsError as exc:
            if exc.http_status in (400, 404):
                return ""
            raise

    def _logs(self, access, raw, kai_namespace, logs):
        """{pod name: its recent log} of the scheduler, binder and pod grouper pods."""
        names = [
            d["metadata"]["name"]
            for d in raw.get("deployments") or []
            if any(COMPONENT_DEPLOYMENTS[c](d["metadata"]["name"]) for c in LOGGED_COMPONENTS)
        ]
        out, parts = {}, []
        for pod in raw["pods"]:
            pod_name = pod["metadata"]["name"]
            if pod["metadata"].get("namespace") != kai_namespace:
                continue
            if not any(pod_name.startswith(n + "-") for n in names):
                continue
            part = Reads(not_found="not_served")
            path = "/api/v1/namespaces/%s/pods/%s/log" % (kai_namespace, pod_name)
            query = {"tailLines": logs["tail_lines"], "sinceSeconds": logs["since_s"]}
            what = "the log of pod %s/%s" % (kai_namespace, pod_name)
            text = part.optional("logs", self._log, path, what, query)
            parts.append(part.access.get("logs"))
            if text:
                out[pod_name] = text
        _merge(access, "logs", parts)
        return out
