# Copyright: kaiops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What a snapshot leaves in the run's bundle, through the one report writer.

- objects: ``snapshots/<name>/<NN>-<kind>/<namespace or _cluster>/<object>.json`` and an
  ``index.json`` (selection, label, folder, count, redactions per selection);
- a Helm release: ``snapshots/<name>/values.json`` (redacted), ``history.json`` and
  ``release.json`` (everything but values and history).

A folder is never reused: a second snapshot of the same name gets ``<name>-2``.
"""

from ansible_collections.kaiops.runbooks.plugins.module_utils.bundle.report import write_report
from ansible_collections.kaiops.runbooks.plugins.module_utils.evidence.writer import safe_name
from ansible_collections.kaiops.runbooks.plugins.module_utils.snapshot.service import (
    selection_label,
)

# Folder of cluster-scoped objects; "_" cannot start a namespace name, so it never clashes.
CLUSTER_SCOPE = "_cluster"


def object_files(folder, name, captured):
    """(relative name, object) per captured object, then index.json."""
    files, index = [], []
    for number, entry in enumerate(captured):
        selection = entry["selection"]
        kind_dir = "%02d-%s" % (number, safe_name(selection["kind"].lower()))
        for item in entry["items"]:
            meta = item.get("metadata") or {}
            relpath = "/".join(
                (
                    kind_dir,
                    safe_name(meta["namespace"]) if meta.get("namespace") else CLUSTER_SCOPE,
                    safe_name(meta.get("name")) + ".json",
                )
            )
            files.append((relpath, item))
        index.append(
            {
                "selection": selection,
                "label": selection_label(selection),
                "folder": "%s/%s" % (folder, kind_dir),
                "count": len(entry["items"]),
                "redactions": entry["redactions"],
            }
        )
    files.append(("index.json", {"name": name, "selections": index}))
    return files


def helm_files(snap):
    return [
        ("values.json", snap["values"]),
        ("history.json", snap["history"]),
        ("release.json", {k: v for k, v in snap.items() if k not in ("values", "history")}),
    ]


def snapshot_folder(name):
    return "snapshots/" + safe_name(name)


def file_objects(module, name, captured, writer=None):
    """Write the objects; returns (evidence_dir, folder relative to it or None, files)."""
    holder = {}

    def files(folder):
        holder["folder"] = folder
        return object_files(folder, name, captured)

    root, written = write_report(
        module, files, folder=snapshot_folder(name), what="the snapshot", writer=writer
    )
    return root, holder.get("folder"), written


def file_helm(module, name, snap):
    holder = {}

    def files(folder):
        holder["folder"] = folder
        return helm_files(snap)

    root, written = write_report(
        module, files, folder=snapshot_folder(name), what="the Helm values"
    )
    return root, holder.get("folder"), written
