# Copyright: kaiops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Client layer: Kubernetes API I/O only, no decisions.

Talks to the API server with the ``kubernetes`` Python client's configuration and
connection pool, but builds paths itself: one discovery GET per apiVersion (cached)
maps a kind to its resource, then one LIST per selection. Every failure is raised as
KaiopsError with a status an operator can act on (unreachable, unauthorized,
forbidden, not_found, error).

- ``KubeClient``: GET and LIST (every feature's reads), on the one ``request`` primitive.
- ``KubeWriter``: the two writes recovery makes, on the same primitive: a DELETE of one named
  object with preconditions on its UID and resourceVersion (HTTP 409 otherwise; never a
  collection or label-selector delete), and a JSON merge patch carrying the resourceVersion.
"""

import importlib
import importlib.util
import json
import os
import time

from ansible_collections.kaiops.runbooks.plugins.module_utils.errors import (
    STATUS_ERROR,
    STATUS_FORBIDDEN,
    STATUS_INVALID,
    STATUS_NOT_FOUND,
    STATUS_UNAUTHORIZED,
    STATUS_UNREACHABLE,
    KaiopsError,
)

# The kubernetes client takes a third of a CPU second to import, and every module reaches this file
# through its module_utils: it is imported when a client is built (_kubernetes), so a module that
# only judges its inputs does not pay for it. Whether it is installed is known here.
HAS_KUBERNETES = importlib.util.find_spec("kubernetes") is not None
KUBERNETES_IMPORT_ERROR = None if HAS_KUBERNETES else ImportError("No module named 'kubernetes'")

# For ansible_module.run_module(libraries=...): modules that reach a cluster need it.
KUBERNETES = ("kubernetes", HAS_KUBERNETES, KUBERNETES_IMPORT_ERROR)

ACCEPT_JSON = "application/json"
MERGE_PATCH = "application/merge-patch+json"
# Server-side reduction to metadata: Secret data and Pod specs never cross the wire.
ACCEPT_METADATA = "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1," + ACCEPT_JSON

_HTTP_STATUS = {401: STATUS_UNAUTHORIZED, 403: STATUS_FORBIDDEN, 404: STATUS_NOT_FOUND}
# What a request does to its object, as its failure message says it.
_VERBS = {"GET": "read", "DELETE": "delete", "PATCH": "patch", "POST": "create"}


def group_version_path(api_version):
    """'v1' -> '/api/v1'; 'apps/v1' -> '/apis/apps/v1'."""
    return "/api/" + api_version if "/" not in api_version else "/apis/" + api_version


def _kubernetes():
    """(kubernetes.client, kubernetes.config, urllib3), imported on first use."""
    try:
        return tuple(
            importlib.import_module(name)
            for name in ("kubernetes.client", "kubernetes.config", "urllib3")
        )
    except ImportError as exc:
        raise KaiopsError(
            "Failed to import the kubernetes Python client: %s; install requirements.txt" % exc,
            status=STATUS_INVALID,
        ) from exc


def load_api_client(kubeconfig=None, context=None):
    """Build a kubernetes ApiClient from a kubeconfig (or in-cluster config); no request is made."""
    k8s_client, k8s_config, _urllib3 = _kubernetes()
    configuration = k8s_client.Configuration()
    path = kubeconfig or os.environ.get("KUBECONFIG") or None
    try:
        if path is None and not os.path.exists(os.path.expanduser("~/.kube/config")):
            k8s_config.load_incluster_config(client_configuration=configuration)
        else:
            if path is not None and not os.path.isfile(os.path.expanduser(path.split(":")[0])):
                raise KaiopsError(
                    "Failed to load kubeconfig %s: the file does not exist" % path,
                    status=STATUS_INVALID,
                )
            k8s_config.load_kube_config(
                config_file=path,
                context=context or None,
                client_configuration=configuration,
                persist_config=False,
            )
    except KaiopsError:
        raise
    except Exception as exc:
        raise KaiopsError(
            "Failed to load kubeconfig %s (context %s): %s"
            % (path or "~/.kube/config", context or "current", exc),
            status=STATUS_INVALID,
        ) from exc
    # One attempt per request: a dead API server is reported, not retried for minutes.
    configuration.retries = 0
    return k8s_client.ApiClient(configuration)


class KubeClient:
    """GET/LIST against one API server. ``calls`` counts HTTP requests, ``seconds`` their time."""

    def __init__(self, api_client, request_timeout=30, clock=time.monotonic):
        self._api = api_client
        self._timeout = (request_timeout, request_timeout)
        self._clock = clock
        self._resources = {}
        self.calls = 0
        self.seconds = 0.0

    @classmethod
    def from_options(cls, kubeconfig=None, context=None, request_timeout=30):
        return cls(load_api_client(kubeconfig, context), request_timeout)

    @property
    def host(self):
        return self._api.configuration.host

    def _exchange(self, method, path, purpose, headers, body=None, query=None):
        """(response, raw body) of one HTTP exchange, counted and timed; a server that cannot be
        reached (or trusted: TLS) raises as unreachable, other client errors by their status."""
        k8s_client, _k8s_config, urllib3 = _kubernetes()  # imported already: the client exists
        started = self._clock()
        self.calls += 1
        try:
            http_method, url, headers, data, _post = self._api.param_serialize(
                method,
                path,
                query_params=[(k, v) for k, v in (query or {}).items() if v not in (None, "")],
                header_params=headers,
                body=body,
                auth_settings=["BearerToken"],
            )
            response = self._api.call_api(
                http_method, url, header_params=headers, body=data, _request_timeout=self._timeout
            )
            raw = response.read()
        except (urllib3.exceptions.HTTPError, OSError) as exc:
            raise KaiopsError(
                "Failed to reach the API server at %s %s: %s"
                % (self.host, purpose, _short(_reason(exc))),
                status=STATUS_UNREACHABLE,
            ) from exc
        except k8s_client.exceptions.ApiException as exc:
            # The client raises status 0 for TLS failures: the server cannot be trusted/reached.
            raise KaiopsError(
                "Failed to reach the API server at %s %s: %s"
                % (self.host, purpose, _short(exc.reason)),
                status=STATUS_UNREACHABLE
                if not exc.status
                else _HTTP_STATUS.get(exc.status, STATUS_ERROR),
                http_status=exc.status or None,
            ) from exc
        finally:
            self.seconds += self._clock() - started
        return response, raw

    def request(
        self, method, path, what, body=None, query=None, accept=ACCEPT_JSON, content_type=None
    ):
        """One HTTP request; returns the decoded JSON answer. ``what`` names the object.

        Failures read "Failed to reach the API server at <host> for <what>" (a read) or "... to
        <verb> <what>" (a write), and "Failed to <verb> <what>: HTTP <status> <message>".
        """
        verb = _VERBS[method]
        purpose = "for " + what if method == "GET" else "to %s %s" % (verb, what)
        headers = {"Accept": accept}
        if body is not None:
            headers["Content-Type"] = content_type or ACCEPT_JSON
        response, raw = self._exchange(method, path, purpose, headers, body, query)
        if not 200 <= response.status < 300:
            raise KaiopsError(
                "Failed to %s %s: HTTP %s %s" % (verb, what, response.status, _api_message(raw)),
                status=_HTTP_STATUS.get(response.status, STATUS_ERROR),
                http_status=response.status,
            )
        try:
            return json.loads(raw)
        except ValueError as exc:
            if method != "GET":
                # The server accepted the write (2xx): an unreadable answer does not undo it.
                return {}
            raise KaiopsError(
                "Failed to decode %s: the API server did not answer JSON" % what
            ) from exc

    def get(self, path, query=None, accept=ACCEPT_JSON, what=None):
        """GET path and return the decoded JSON body."""
        return self.request("GET", path, what or path, query=query, accept=accept)

    def server_version(self):
        return self.get("/version", what="the server version")

    def text(self, path, what, query=None):
        """GET path whose answer is text, not JSON (a pod's log); failures as ``request``'s."""
        response, raw = self._exchange("GET", path, "for " + what, {"Accept": "*/*"}, query=query)
        if not 200 <= response.status < 300:
            raise KaiopsError(
                "Failed to get %s: HTTP %s %s" % (what, response.status, _api_message(raw)),
                status=_HTTP_STATUS.get(response.status, STATUS_ERROR),
                http_status=response.status,
            )
        return raw.decode("utf-8", "replace") if isinstance(raw, bytes) else str(raw)

    def resource(self, api_version, kind):
        """Discovery: (plural, namespaced) of a kind; one GET per apiVersion, cached."""
        if api_version not in self._resources:
            listing = self.get(
                group_version_path(api_version), what="the resources of %s" % api_version
            )
            self._resources[api_version] = {
                r["kind"]: (r["name"], bool(r.get("namespaced")))
                for r in listing.get("resources", [])
                if "/" not in r.get("name", "")
            }
        found = self._resources[api_version].get(kind)
        if found is None:
            raise KaiopsError(
                "Failed to find kind %s in %s: the API server does not serve it"
                % (kind, api_version),
                status=STATUS_NOT_FOUND,
            )
        return found

    def collection_path(self, api_version, kind, namespace=None, name=None):
        plural, namespaced = self.resource(api_version, kind)
        path = group_version_path(api_version)
        if namespaced and namespace:
            path += "/namespaces/" + namespace
        path += "/" + plural
        if name:
            path += "/" + name
        return path

    def list(
        self,
        api_version,
        kind,
        namespace=None,
        label_selector=None,
        field_selector=None,
        metadata_only=False,
    ):
        """One LIST request; items come back with apiVersion and kind filled in."""
        path = self.collection_path(api_version, kind, namespace)
        what = "%s %s%s" % (api_version, kind, " in namespace " + namespace if namespace else "")
        body = self.get(
            path,
            query={"labelSelector": label_selector, "fieldSelector": field_selector},
            accept=ACCEPT_METADATA if metadata_only else ACCEPT_JSON,
            what="the list of " + what,
        )
        items = body.get("items") or []
        for item in items:
            item["apiVersion"] = api_version
            item["kind"] = kind
        return items

    def read(self, api_version, kind, name, namespace=None):
        """GET one object; None when it does not exist."""
        path = self.collection_path(api_version, kind, namespace, name)
        try:
            obj = self.get(path, what="%s %s %s" % (api_version, kind, name))
        except KaiopsError as exc:
            if exc.status == STATUS_NOT_FOUND:
                return None
            raise
        obj.setdefault("apiVersion", api_version)
        obj.setdefault("kind", kind)
        return obj


class KubeWriter(KubeClient):
    """KubeClient plus a precondition DELETE and a merge PATCH of one named object."""

    def delete(self, api_version, kind, name, namespace, uid, resource_version):
        """Delete one object, only if it still has this UID and resourceVersion."""
        path = self.collection_path(api_version, kind, namespace, name)
        body = {
            "apiVersion": "v1",
            "kind": "DeleteOptions",
            "propagationPolicy": "Background",
            "preconditions": {"uid": uid, "resourceVersion": resource_version},
        }
        return self.request("DELETE", path, "%s %s/%s" % (kind, namespace or "", name), body=body)

    def patch(self, api_version, kind, name, namespace, patch, resource_version):
        """Merge-patch one object, only if it still has this resourceVersion."""
        path = self.collection_path(api_version, kind, namespace, name)
        body = dict(patch)
        body["metadata"] = dict(body.get("metadata") or {}, resourceVersion=resource_version)
        return self.request(
            "PATCH",
            path,
            "%s %s/%s" % (kind, namespace or "", name),
            body=body,
            content_type=MERGE_PATCH,
        )


def _reason(exc):
    """The innermost readable reason of a urllib3 error, without connection object reprs."""
    reason = getattr(exc, "reason", None) or exc
    if isinstance(reason, Exception) and reason.args and isinstance(reason.args[-1], str):
        return reason.args[-1]
    return reason


def _short(exc):
    text = str(exc)
    return text if len(text) <= 300 else text[:297] + "..."


def _api_message(body):
    try:
        return json.loads(body).get("message", "")
    except (ValueError, AttributeError, TypeError):
        return ""
