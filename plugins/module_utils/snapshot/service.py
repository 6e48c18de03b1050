# Copyright: kaiops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Service layer of kai_snapshot and kai_helm_snapshot: capture objects or a Helm release.

One LIST request per selection (plus one discovery GET per apiVersion), never one GET per
object; the client (``k8s/client.py``) is the layer below. Objects pass through
the redaction policy (``bundle/policy.py``: Secret data, secrets in args, env and text, the
values of ConfigMaps outside GPU sharing unless ``configmap_values``) before they are returned
or written. Reading is the same in check mode: nothing in the cluster changes either way.
``capture_helm_release`` reads a release's history and values through ``snapshot/client.HelmCli``
and redacts them by the same policy; values never travel in the task result. Filing is in
``snapshot/report.py``.
"""

from ansible_collections.kaiops.runbooks.plugins.module_utils.bundle.policy import (
    DEFAULT_POLICY,
    redact_values,
)
from ansible_collections.kaiops.runbooks.plugins.module_utils.errors import (
    STATUS_INVALID,
    STATUS_NOT_FOUND,
    KaiopsError,
)
from ansible_collections.kaiops.runbooks.plugins.module_utils.evidence.redact import has_redaction


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


class SnapshotService:
    """Capture and file snapshots; the client is the layer below (mocked in tests)."""

    def __init__(self, client, policy=None):
        self._client = client
        self._policy = policy or DEFAULT_POLICY

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
                clean, removed = self._policy.sanitize_object(item)
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


def _redacted_paths(value, path=""):
    """Paths of the values the policy replaced (so the evidence says what was left out)."""
    found = []
    if isinstance(value, dict):
        for key, item in value.items():
            found += _redacted_paths(item, "%s.%s" % (path, key) if path else str(key))
    elif isinstance(value, list):
        for n, item in enumerate(value):
            found += _redacted_paths(item, "%s[%d]" % (path, n))
    elif has_redaction(value):
        found.append(path)
    return found


def capture_helm_release(cli, release, namespace):
    """History and user-supplied values of the release at its current revision."""
    ns = ["--namespace", namespace]
    history = cli.json(["history", release, "--max", "20"] + ns, "history of release %s" % release)
    if not history:
        raise KaiopsError(
            "Failed to read release %s: no history" % release, status=STATUS_NOT_FOUND
        )
    current = max(history, key=lambda h: int(h.get("revision", 0)))
    revision = int(current["revision"])
    values = cli.json(
        ["get", "values", release, "--revision", str(revision)] + ns,
        "values of release %s revision %d" % (release, revision),
    )
    clean = redact_values(values or {})
    return {
        "release": release,
        "namespace": namespace,
        "revision": revision,
        "chart": current.get("chart"),
        "app_version": current.get("app_version"),
        "status": current.get("status"),
        "history": history,
        "values": clean,
        "redacted": _redacted_paths(clean),
    }
