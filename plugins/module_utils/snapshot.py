# -*- coding: utf-8 -*-
# Copyright: kaiops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Service layer for kai_snapshot: capture selections of objects, sanitized, and file them.

One LIST request per selection (plus one discovery GET per apiVersion), never one GET
per object. Objects pass through redact.sanitize_object before they are returned or
written. Reading is the same in check mode: nothing in the cluster changes either way.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.kaiops.runbooks.plugins.module_utils.errors import (
    STATUS_INVALID,
    KaiopsError,
)
from ansible_collections.kaiops.runbooks.plugins.module_utils.evidence import safe_name
from ansible_collections.kaiops.runbooks.plugins.module_utils.redact import sanitize_object

# Folder of cluster-scoped objects; "_" cannot start a namespace name, so it never clashes.
CLUSTER_SCOPE = "_cluster"


def normalize_selection(selection):
    """Fill defaults and join selector lists; raises KaiopsError for a selection without kind."""
    if not selection.get("kind"):
        raise KaiopsError(
            "Failed to read selection %r: 'kind' is required (e.g. kind: ConfigMap)" % (selection,),
            status=STATUS_INVALID,
        )
    return {
        "api_version": selection.get("api_version") or "v1",
        "kind": selection["kind"],
        "namespace": selection.get("namespace") or None,
        "label_selectors": list(selection.get("label_selectors") or []),
        "field_selectors": list(selection.get("field_selectors") or []),
    }


def selection_label(selection):
    parts = [selection["api_version"], selection["kind"], selection["namespace"] or "*"]
    if selection["label_selectors"]:
        parts.append(",".join(selection["label_selectors"]))
    if selection["field_selectors"]:
        parts.append(",".join(selection["field_selectors"]))
    return " ".join(parts)


class SnapshotService(object):
    """Capture and file snapshots; the client is the layer below (mocked in tests)."""

    def __init__(self, client):
        self._client = client

    def capture(self, selections):
        """Return a list of {selection, items, redactions}; one LIST per selection."""
        captured = []
        for raw in selections:
            selection = normalize_selection(raw)
            items = self._client.list(
                selection["api_version"],
                selection["kind"],
                namespace=selection["namespace"],
                label_selector=",".join(selection["label_selectors"]) or None,
                field_selector=",".join(selection["field_selectors"]) or None,
            )
            clean_items, redactions = [], []
            for item in items:
                clean, removed = sanitize_object(item)
                clean_items.append(clean)
                if removed:
                    meta = clean.get("metadata") or {}
                    redactions.append(
                        {
                            "kind": selection["kind"],
                            "namespace": meta.get("namespace"),
                            "name": meta.get("name"),
                            "removed": removed,
                        }
                    )
            captured.append(
                {"selection": selection, "items": clean_items, "redactions": redactions}
            )
        return captured

    @staticmethod
    def file(writer, name, captured):
        """Write snapshots/<name>/<kind>/<namespace>/<object>.json and an index.json.

        Returns the folder (relative to the evidence root) and the files written.
        """
        folder = writer.unique_dir("snapshots/" + safe_name(name))
        files, index = [], []
        for number, entry in enumerate(captured):
            selection = entry["selection"]
            kind_dir = "%02d-%s" % (number, safe_name(selection["kind"].lower()))
            for item in entry["items"]:
                meta = item.get("metadata") or {}
                relpath = "/".join(
                    (
                        folder,
                        kind_dir,
                        safe_name(meta["namespace"]) if meta.get("namespace") else CLUSTER_SCOPE,
                        safe_name(meta.get("name")) + ".json",
                    )
                )
                files.append(writer.write_json(relpath, item))
            index.append(
                {
                    "selection": selection,
                    "label": selection_label(selection),
                    "folder": "%s/%s" % (folder, kind_dir),
                    "count": len(entry["items"]),
                    "redactions": entry["redactions"],
                }
            )
        files.append(writer.write_json(folder + "/index.json", {"name": name, "selections": index}))
        return folder, files
