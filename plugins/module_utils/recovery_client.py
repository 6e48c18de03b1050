# -*- coding: utf-8 -*-
# Copyright: kaiops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Client layer for recovery: the read client plus the two writes recovery makes.

- ``delete``: DELETE one named object with preconditions on its UID and resourceVersion, so
  only the exact version that was recorded can be deleted (HTTP 409 otherwise). Never a
  collection or label-selector delete.
- ``patch``: a JSON merge patch of one named object carrying its resourceVersion (optimistic
  concurrency: HTTP 409 when the object changed since it was read).

I/O only: both go through ``KubeClient.request``, so every failure is raised as KaiopsError
with ``http_status`` set, as for the reads.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.kaiops.runbooks.plugins.module_utils.client import KubeClient

MERGE_PATCH = "application/merge-patch+json"


class RecoveryClient(KubeClient):
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
