# Copyright: kaiops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Client layer of the probes: the fixture's writes and the watches that record it. I/O only.

Shared by reproduce (its cases' fixtures) and the rollout (its verification's probes).

Writes are limited to what a fixture needs, in namespaces the run created: create an
object, JSON-patch a pod (the scheduling gate), delete a namespace the run labelled.
Watches run on their own threads from the moment a case starts, so every version of
every object is kept, including BindRequests the scheduler deletes a second later; each
record carries the controller's monotonic and wall clocks.
"""

import json
import threading
import time

from ansible_collections.kaiops.runbooks.plugins.module_utils.errors import (
    STATUS_NOT_FOUND,
    KaiopsError,
)
from ansible_collections.kaiops.runbooks.plugins.module_utils.k8s.client import (
    ACCEPT_JSON,
    KubeWriter,
)

JSON_PATCH = "application/json-patch+json"


class FixtureClient(KubeWriter):
    """KubeWriter plus create, JSON patch, pod logs and a namespace delete."""

    def create(self, obj):
        api_version, kind = obj["apiVersion"], obj["kind"]
        namespace = (obj.get("metadata") or {}).get("namespace")
        path = self.collection_path(api_version, kind, namespace)
        what = "%s %s/%s" % (kind, namespace or "", obj["metadata"].get("name", ""))
        return self.request("POST", path, what, body=obj)

    def json_patch(self, api_version, kind, name, namespace, ops):
        path = self.collection_path(api_version, kind, namespace, name)
        what = "%s %s/%s" % (kind, namespace, name)
        return self.request("PATCH", path, what, body=ops, content_type=JSON_PATCH)

    def delete_namespace(self, name):
        path = "/api/v1/namespaces/" + name
        try:
            return self.request("DELETE", path, "namespace " + name)
        except KaiopsError as exc:
            if exc.status == STATUS_NOT_FOUND:
                return {}
            raise

    def logs(self, namespace, pod, container=None, previous=False, tail=2000):
        """A pod's log as text; '' when there is none (e.g. no previous container)."""
        path = "/api/v1/namespaces/%s/pods/%s/log" % (namespace, pod)
        query = {"tailLines": tail, "timestamps": "true"}
        if container:
            query["container"] = container
        if previous:
            query["previous"] = "true"
        try:
            return self.raw("GET", path, query)
        except KaiopsError as exc:
            if exc.http_status in (400, 404):
                return ""
            raise

    def raw(self, method, path, query=None):
        """A request whose answer is text, not JSON (pod logs)."""
        http_method, url, headers, data, _post = self._api.param_serialize(
            method,
            path,
            query_params=[(k, v) for k, v in (query or {}).items() if v not in (None, "")],
            header_params={"Accept": "*/*"},
            auth_settings=["BearerToken"],
        )
        try:
            response = self._api.call_api(
                http_method, url, header_params=headers, body=data, _request_timeout=self._timeout
            )
            text = response.read().decode("utf-8", "replace")
        except Exception as exc:  # noqa: BLE001 - the client raises many kinds; all mean no log
            raise KaiopsError(
                "Failed to read %s: %s" % (path, exc),
                http_status=getattr(exc, "status", None),
            ) from exc
        if not 200 <= response.status < 300:
            raise KaiopsError(
                "Failed to read %s: HTTP %s" % (path, response.status), http_status=response.status
            )
        return text

    def stream(self, path, query, read_timeout):
        """An open watch: the urllib3 response, read line by line by the caller."""
        http_method, url, headers, _data, _post = self._api.param_serialize(
            "GET",
            path,
            query_params=[(k, v) for k, v in query.items() if v not in (None, "")],
            header_params={"Accept": ACCEPT_JSON},
            auth_settings=["BearerToken"],
        )
        response = self._api.call_api(
            http_method, url, header_params=headers, _request_timeout=(10, read_timeout)
        )
        if not 200 <= response.status < 300:
            raise KaiopsError(
                "Failed to watch %s: HTTP %s" % (path, response.status), http_status=response.status
            )
        return response.response


class Recorder:
    """Watches collections until stopped; keeps every event with both clocks.

    ``records`` maps a key to a list of {"t": monotonic, "at": wall ISO, "type", "object"}.
    A LIST first gives the starting objects (recorded as type INITIAL) and the
    resourceVersion the watch continues from, so nothing between them is lost; a watch
    the server ends (timeout) is resumed from the last version seen.
    """

    def __init__(self, client, clock=time.monotonic, wall=time.time):
        self.client = client
        self.clock = clock
        self.wall = wall
        self.records = {}
        self.errors = []
        self._stop = threading.Event()
        self._threads = []
        self._lock = threading.Lock()
        self._responses = []

    def _add(self, key, kind, obj):
        now = self.wall()
        rec = {
            "t": self.clock(),
            "at": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(now))
            + ".%03dZ" % (now % 1 * 1000),
            "type": kind,
            "object": obj,
        }
        with self._lock:
            self.records.setdefault(key, []).append(rec)

    def watch(self, key, api_version, kind, namespace=None, label_selector=None):
        path = self.client.collection_path(api_version, kind, namespace)
        listing = self.client.get(
            path,
            query={"labelSelector": label_selector},
            what="the list of %s %s" % (api_version, kind),
        )
        for item in listing.get("items") or []:
            item.setdefault("apiVersion", api_version)
            item.setdefault("kind", kind)
            self._add(key, "INITIAL", item)
        self.records.setdefault(key, [])
        version = (listing.get("metadata") or {}).get("resourceVersion")
        thread = threading.Thread(
            target=self._run, args=(key, path, label_selector, version), daemon=True
        )
        thread.start()
        self._threads.append(thread)

    def _run(self, key, path, label_selector, version):
        while not self._stop.is_set():
            query = {
                "watch": "1",
                "resourceVersion": version,
                "labelSelector": label_selector,
                "timeoutSeconds": 30,
                "allowWatchBookmarks": "true",
            }
            try:
                resp = self.client.stream(path, query, read_timeout=40)
            except Exception as exc:  # noqa: BLE001 - noted and retried: a watch observes, it is no gate
                self.errors.append("%s: %s" % (key, exc))
                if self._stop.wait(1.0):
                    return
                continue
            with self._lock:
                self._responses.append(resp)
            buf = b""
            try:
                for chunk in resp.stream(4096):
                    buf += chunk
                    while b"\n" in buf:
                        line, buf = buf.split(b"\n", 1)
                        if not line.strip():
                            continue
                        event = json.loads(line)
                        obj = event.get("object") or {}
                        rv = (obj.get("metadata") or {}).get("resourceVersion")
                        if event.get("type") == "ERROR":
                            version = None  # expired: start over from a fresh LIST version
                            break
                        if rv:
                            version = rv
                        if event.get("type") != "BOOKMARK":
                            self._add(key, event.get("type"), obj)
                    if self._stop.is_set():
                        return
            except Exception as exc:  # noqa: BLE001 - a broken stream is noted and resumed
                if not self._stop.is_set():
                    self.errors.append("%s: %s" % (key, exc))
            finally:
                resp.release_conn()

    def stop(self):
        self._stop.set()
        with self._lock:
            for resp in self._responses:
                try:
                    resp.shutdown() if hasattr(resp, "shutdown") else resp.close()
                except Exception:  # noqa: BLE001, S110 - closing a finished response may raise
                    pass
        for thread in self._threads:
            thread.join(timeout=5)

    def objects(self, key):
        with self._lock:
            return list(self.records.get(key, []))
