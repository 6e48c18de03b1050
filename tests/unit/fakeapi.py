"""A tiny in-process Kubernetes API server for tests: discovery, GET, LIST, selectors, 403s.

It serves objects from a fixture (a list of manifests) over real HTTP on 127.0.0.1, so the
client layer and whole playbooks run against it without a cluster. Every request is logged.
"""

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlparse

import yaml

# (apiVersion, kind) -> (resource, namespaced)
KINDS = {
    ("v1", "ConfigMap"): ("configmaps", True),
    ("v1", "Pod"): ("pods", True),
    ("v1", "Secret"): ("secrets", True),
    ("v1", "ServiceAccount"): ("serviceaccounts", True),
    ("v1", "Node"): ("nodes", False),
    ("v1", "Namespace"): ("namespaces", False),
    ("apps/v1", "Deployment"): ("deployments", True),
    ("kai.scheduler/v1", "Config"): ("configs", False),
    ("scheduling.run.ai/v1alpha2", "BindRequest"): ("bindrequests", True),
    ("nvidia.com/v1", "ClusterPolicy"): ("clusterpolicies", False),
    ("v1", "Event"): ("events", True),
    ("scheduling.run.ai/v2alpha2", "PodGroup"): ("podgroups", True),
    ("scheduling.run.ai/v2", "Queue"): ("queues", False),
}
CORE_GROUPS = ("v1", "apps/v1")


def _match_labels(selector, labels):
    for clause in filter(None, (selector or "").split(",")):
        key, _unused, value = clause.partition("=")
        if labels.get(key) != value:
            return False
    return True


def _match_fields(selector, obj):
    for clause in filter(None, (selector or "").split(",")):
        key, _unused, value = clause.partition("=")
        current = obj
        for part in key.split("."):
            current = (current or {}).get(part)
        if current != value:
            return False
    return True


class FakeAPI:
    """objects: manifests; served: extra apiVersions (CRDs) to serve; forbidden: path prefixes."""

    def __init__(
        self, objects=(), served=(), forbidden=(), version="v1.35.4", token="t0ken", logs=None
    ):
        self.objects = [dict(o) for o in objects]
        self.logs = dict(logs or {})  # "<namespace>/<pod>" -> its log text
        self.served = set(CORE_GROUPS) | set(served) | {o["apiVersion"] for o in self.objects}
        self.forbidden = list(forbidden)
        self.version = version
        self.token = token
        self.requests = []
        self._server = None

    @classmethod
    def from_fixture(cls, path):
        with open(path) as handle:
            data = yaml.safe_load(handle)
        return cls(
            objects=data.get("objects") or [],
            served=data.get("served") or [],
            forbidden=data.get("forbidden") or [],
            version=data.get("version", "v1.35.4"),
            logs=data.get("logs") or {},
        )

    # -------------------------------------------------------------- lifecycle

    def start(self):
        api = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def _answer(self, status, body):
                text = isinstance(body, str)  # a pod's log
                data = body.encode() if text else json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "text/plain" if text else "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def _write(self, method):
                length = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(length) or b"{}")
                self._answer(*api.handle_write(method, self.path, self.headers, body))

            def do_GET(self):
                self._answer(*api.handle(self.path, self.headers))

            def do_DELETE(self):
                self._write("DELETE")

            def do_PATCH(self):
                self._write("PATCH")

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self._server.serve_forever, args=(0.05,), daemon=True).start()
        return self

    def handle_write(self, method, path, headers, body):
        """The base fake only reads; subclasses that accept writes override this."""
        return 405, _status(405, "%s is not served by this fake" % method)

    def stop(self):
        if self._server:
            self._server.shutdown()
            self._server.server_close()

    @property
    def url(self):
        return "http://127.0.0.1:%d" % self._server.server_address[1]

    def kubeconfig(self, path, context="fake", extra_contexts=()):
        contexts = [context, *extra_contexts]
        config = {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [{"name": "fake", "cluster": {"server": self.url}}],
            "users": [{"name": "fake", "user": {"token": self.token}}],
            "contexts": [
                {"name": c, "context": {"cluster": "fake", "user": "fake"}} for c in contexts
            ],
            "current-context": context,
        }
        with open(path, "w") as handle:
            yaml.safe_dump(config, handle)
        return str(path)

    # -------------------------------------------------------------- routing

    def handle(self, raw_path, headers):
        url = urlparse(raw_path)
        query = {k: v[0] for k, v in parse_qs(url.query).items()}
        self.requests.append({"path": url.path, "query": query, "accept": headers.get("Accept")})
        if headers.get("Authorization") != "Bearer " + self.token:
            return 401, _status(401, "Unauthorized")
        if any(url.path.startswith(prefix) for prefix in self.forbidden):
            return 403, _status(403, 'forbidden: cannot list resource at "%s"' % url.path)
        if url.path == "/version":
            major, minor = self.version.lstrip("v").split(".")[:2]
            return 200, {
                "gitVersion": self.version,
                "major": major,
                "minor": minor,
                "platform": "linux/amd64",
            }
        parts = [p for p in url.path.split("/") if p]
        if parts[:1] == ["api"]:
            group_version, rest = parts[1], parts[2:]
        elif parts[:1] == ["apis"] and len(parts) >= 3:
            group_version, rest = "/".join(parts[1:3]), parts[3:]
        else:
            return 404, _status(404, "not found")
        if group_version not in self.served:
            return 404, _status(404, "the server could not find the requested resource")
        if not rest:
            return 200, self._discovery(group_version)
        namespace = None
        if rest[0] == "namespaces" and len(rest) >= 3:
            namespace, rest = rest[1], rest[2:]
        if rest[0] == "pods" and rest[2:] == ["log"]:
            found = self.logs.get("%s/%s" % (namespace, rest[1]))
            return (200, found) if found is not None else (400, _status(400, "waiting to start"))
        kind = next(
            (k for (gv, k), (res, _n) in KINDS.items() if gv == group_version and res == rest[0]),
            None,
        )
        if kind is None:
            return 404, _status(404, "the server could not find the requested resource")
        items = [
            o
            for o in self.objects
            if o["apiVersion"] == group_version
            and o["kind"] == kind
            and (namespace is None or o["metadata"].get("namespace") == namespace)
        ]
        if len(rest) == 2:
            found = [o for o in items if o["metadata"]["name"] == rest[1]]
            if not found:
                return 404, _status(404, '%s "%s" not found' % (rest[0], rest[1]))
            return 200, found[0]
        items = [
            o
            for o in items
            if _match_labels(query.get("labelSelector"), o["metadata"].get("labels") or {})
            and _match_fields(query.get("fieldSelector"), o)
        ]
        if "PartialObjectMetadataList" in (headers.get("Accept") or ""):
            items = [
                {
                    "apiVersion": "meta.k8s.io/v1",
                    "kind": "PartialObjectMetadata",
                    "metadata": o["metadata"],
                }
                for o in items
            ]
        else:
            items = [{k: v for k, v in o.items() if k not in ("apiVersion", "kind")} for o in items]
        return 200, {
            "kind": kind + "List",
            "apiVersion": group_version,
            "items": items,
            "metadata": {"resourceVersion": "1"},
        }

    def _discovery(self, group_version):
        resources = [
            {"name": res, "kind": kind, "namespaced": namespaced, "verbs": ["get", "list"]}
            for (gv, kind), (res, namespaced) in KINDS.items()
            if gv == group_version
        ]
        return {"kind": "APIResourceList", "groupVersion": group_version, "resources": resources}


def _status(code, message):
    return {
        "kind": "Status",
        "apiVersion": "v1",
        "status": "Failure",
        "message": message,
        "code": code,
    }


class FakeClient:
    """In-memory stand-in for client.KubeClient (service-layer tests): same methods, no HTTP.

    forbidden: (apiVersion, kind) pairs that raise a 403 KaiopsError; unreachable: every call
    raises like a dead API server.
    """

    def __init__(
        self,
        objects=(),
        served=(),
        forbidden=(),
        version="v1.35.4",
        unreachable=False,
        logs=None,
    ):
        self.objects = [dict(o) for o in objects]
        self.logs = dict(logs or {})  # "<namespace>/<pod>" -> its log text
        self.served = set(CORE_GROUPS) | set(served) | {o["apiVersion"] for o in self.objects}
        self.forbidden = {tuple(f) for f in forbidden}
        self.version = version
        self.unreachable = unreachable
        self.calls = 0
        self.log = []

    @classmethod
    def from_fixture(cls, path, **overrides):
        with open(path) as handle:
            data = yaml.safe_load(handle)
        kwargs = {
            "objects": data.get("objects") or [],
            "served": data.get("served") or [],
            "version": data.get("version", "v1.35.4"),
        }
        kwargs.update(overrides)
        return cls(**kwargs)

    def _check(self, api_version, kind):
        from ansible_collections.kaiops.runbooks.plugins.module_utils.errors import KaiopsError

        self.calls += 1
        if self.unreachable:
            raise KaiopsError("Failed to reach the API server: refused", status="unreachable")
        if (api_version, kind) in self.forbidden:
            raise KaiopsError(
                "Failed to read %s: HTTP 403" % kind, status="forbidden", http_status=403
            )
        if api_version not in self.served:
            raise KaiopsError(
                "Failed to find kind %s in %s" % (kind, api_version), status="not_found"
            )

    def server_version(self):
        self._check("v1", "Version")
        major, minor = self.version.lstrip("v").split(".")[:2]
        return {"gitVersion": self.version, "major": major, "minor": minor}

    def list(
        self,
        api_version,
        kind,
        namespace=None,
        label_selector=None,
        field_selector=None,
        metadata_only=False,
    ):
        self._check(api_version, kind)
        self.log.append(
            ("list", api_version, kind, namespace, label_selector, field_selector, metadata_only)
        )
        items = [
            json.loads(json.dumps(o))
            for o in self.objects
            if o["apiVersion"] == api_version
            and o["kind"] == kind
            and (namespace is None or o["metadata"].get("namespace") == namespace)
            and _match_labels(label_selector, o["metadata"].get("labels") or {})
            and _match_fields(field_selector, o)
        ]
        if metadata_only:
            items = [
                {"apiVersion": api_version, "kind": kind, "metadata": o["metadata"]} for o in items
            ]
        return items

    def read(self, api_version, kind, name, namespace=None):
        self._check(api_version, kind)
        self.log.append(("read", api_version, kind, namespace, name))
        for o in self.objects:
            if (o["apiVersion"], o["kind"], o["metadata"]["name"]) == (api_version, kind, name):
                return json.loads(json.dumps(o))
        return None

    def text(self, path, what, query=None):
        """A pod's log (``/api/v1/namespaces/<ns>/pods/<pod>/log``) from ``logs``."""
        self._check("v1", "Pod")
        parts = path.strip("/").split("/")
        self.log.append(("text", path, dict(query or {})))
        return self.logs.get("%s/%s" % (parts[3], parts[5]), "")
