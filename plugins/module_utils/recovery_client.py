# -*- coding: utf-8 -*-
# Copyright: kaiops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Client layer for recovery: the read client plus the two writes recovery makes.

- ``delete``: DELETE one named object with preconditions on its UID and resourceVersion, so
  only the exact version that was recorded can be deleted (HTTP 409 otherwise). Never a
  collection or label-selector delete.
- ``patch``: a JSON merge patch of one named object carrying its resourceVersion (optimistic
  concurrency: HTTP 409 when the object changed since it was read).

I/O only: every failure is raised as KaiopsError with ``http_status`` set.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json

from ansible_collections.kaiops.runbooks.plugins.module_utils.client import (
    _HTTP_STATUS,
    ACCEPT_JSON,
    KubeClient,
    _api_message,
    _reason,
    _short,
    load_api_client,
)
from ansible_collections.kaiops.runbooks.plugins.module_utils.errors import (
    STATUS_ERROR,
    STATUS_UNREACHABLE,
    KaiopsError,
)

try:
    import urllib3
    from kubernetes import client as k8s_client
except ImportError:  # pragma: no cover - client.py reports the missing library
    pass

MERGE_PATCH = "application/merge-patch+json"


class RecoveryClient(KubeClient):
    """KubeClient plus a precondition DELETE and a merge PATCH of one named object."""

    @classmethod
    def from_options(cls, kubeconfig=None, context=None, request_timeout=30):
        return cls(load_api_client(kubeconfig, context), request_timeout)

    def _send(self, method, path, body, content_type, what):
        started = self._clock()
        self.calls += 1
        try:
            method, url, headers, data, _post = self._api.param_serialize(
                method,
                path,
                header_params={"Accept": ACCEPT_JSON, "Content-Type": content_type},
                body=body,
                auth_settings=["BearerToken"],
            )
            response = self._api.call_api(
                method, url, header_params=headers, body=data, _request_timeout=self._timeout
            )
            raw = response.read()
        except (urllib3.exceptions.HTTPError, OSError) as exc:
            raise KaiopsError(
                "Failed to reach the API server at %s to %s: %s"
                % (self.host, what, _short(_reason(exc))),
                status=STATUS_UNREACHABLE,
            ) from exc
        except k8s_client.exceptions.ApiException as exc:
            raise KaiopsError(
                "Failed to %s: %s" % (what, _short(exc.reason)),
                status=STATUS_UNREACHABLE
                if not exc.status
                else _HTTP_STATUS.get(exc.status, STATUS_ERROR),
                http_status=exc.status or None,
            ) from exc
        finally:
            self.seconds += self._clock() - started
        if not 200 <= response.status < 300:
            raise KaiopsError(
                "Failed to %s: HTTP %s %s" % (what, response.status, _api_message(raw)),
                status=_HTTP_STATUS.get(response.status, STATUS_ERROR),
                http_status=response.status,
            )
        try:
            return json.loads(raw) if raw else {}
        except ValueError:
            return {}

    def delete(self, api_version, kind, name, namespace, uid, resource_version):
        """Delete one object, only if it still has this UID and resourceVersion."""
        path = self.collection_path(api_version, kind, namespace, name)
        body = {
            "apiVersion": "v1",
            "kind": "DeleteOptions",
            "propagationPolicy": "Background",
            "preconditions": {"uid": uid, "resourceVersion": resource_version},
        }
        return self._send(
            "DELETE",
            path,
            body,
            "application/json",
            "delete %s %s/%s" % (kind, namespace or "", name),
        )

    def patch(self, api_version, kind, name, namespace, patch, resource_version):
        """Merge-patch one object, only if it still has this resourceVersion."""
        path = self.collection_path(api_version, kind, namespace, name)
        body = dict(patch)
        body["metadata"] = dict(body.get("metadata") or {}, resourceVersion=resource_version)
        return self._send(
            "PATCH", path, body, MERGE_PATCH, "patch %s %s/%s" % (kind, namespace or "", name)
        )
