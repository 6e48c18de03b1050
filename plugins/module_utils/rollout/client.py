# Copyright: kaiops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Reads of the rollout: the evidence store on the controller (reproduce reports), I/O only.

The clusters are read by the inventory (``inventory/client.py``) and the snapshot
(``snapshot/``); what counts as regression evidence is decided in ``rollout/gates.py``.
"""

import glob
import json
import os

from ansible_collections.kaiops.runbooks.plugins.module_utils.evidence.manifest import (
    STATUS_FILE,
    verify_manifest,
)


def read_report(path):
    """The report.json at path as a dict, or None when it is unreadable JSON."""
    try:
        with open(path, "r") as handle:
            data = json.load(handle)
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def find_regression_reports(root, version):
    """Scan <root>/*/report.json for reproduce reports of ``version``.

    Returns (passing, considered): passing is the list of bundles (relative to root) whose
    report is kind=reproduce, kai_version=version, verdict=pass, in a complete bundle whose
    manifest verifies; considered lists every reproduce report of that version seen, with the
    reason it did not count.
    """
    passing, considered = [], []
    if not root or not os.path.isdir(root):
        return passing, considered
    for path in sorted(glob.glob(os.path.join(root, "*", "report.json"))):
        bundle = os.path.dirname(path)
        if os.path.islink(bundle):  # evidence/latest
            continue
        report = read_report(path)
        if not report or report.get("kind") != "reproduce":
            continue
        if report.get("kai_version") != version:
            continue
        rel = os.path.relpath(bundle, root)
        why = None
        if report.get("verdict") != "pass":
            why = "verdict is %s" % report.get("verdict")
        else:
            try:
                with open(os.path.join(bundle, STATUS_FILE)) as handle:
                    status = handle.read().strip()
            except OSError:
                status = "missing"
            problems = verify_manifest(bundle)
            if status != "complete":
                why = "bundle status is %s" % status
            elif problems:
                why = "manifest does not verify: %s" % "; ".join(problems[:3])
        considered.append({"bundle": rel, "verdict": report.get("verdict"), "rejected": why})
        if why is None:
            passing.append(rel)
    return passing, considered


# ---------------------------------------------------------------- earlier runs of the change

SNAPSHOT = "snapshots/before-change-%s"


def _json(path):
    try:
        with open(path, "r") as handle:
            return json.load(handle)
    except (OSError, ValueError):
        return None


def _status(bundle):
    try:
        with open(os.path.join(bundle, STATUS_FILE)) as handle:
            return handle.read().strip()
    except OSError:
        return "missing"


def _last_task(bundle, cluster):
    """The last task the run started on the cluster (tasks.jsonl), or None."""
    last = None
    try:
        with open(os.path.join(bundle, "tasks.jsonl")) as handle:
            for line in handle:
                try:
                    event = json.loads(line)
                except ValueError:
                    continue
                if event.get("host") == cluster:
                    last = event.get("task")
    except OSError:
        return None
    return last


def _is_rollout(bundle, report):
    if report:
        return report.get("kind") == "rollout"
    run = _json(os.path.join(bundle, "run.json")) or {}
    paths = [p.get("path") or "" for p in run.get("playbooks") or [] if isinstance(p, dict)]
    return any(os.path.basename(p) in ("rollout.yml",) for p in paths)


def find_rollout_runs(root, cluster, exclude=None):
    """The rollout bundles of the evidence store, oldest first (folder names sort by time):
    ``{bundle, status, verified, report, snapshot, snapshot_folder, baseline, last_task}``.

    ``exclude``: the run's own folder. ``snapshot`` is the cluster's Helm snapshot before the
    change (release.json) when the run got that far; ``baseline`` the figures of its
    verification before the change, when it measured them.
    """
    out = []
    if not root or not os.path.isdir(root):
        return out
    exclude = os.path.realpath(exclude) if exclude else None
    for bundle in sorted(glob.glob(os.path.join(root, "*"))):
        if os.path.islink(bundle) or not os.path.isdir(bundle):
            continue
        if exclude and os.path.realpath(bundle) == exclude:
            continue
        report = read_report(os.path.join(bundle, "report.json"))
        if not _is_rollout(bundle, report):
            continue
        status = _status(bundle)
        snapshot_folder = SNAPSHOT % cluster
        release = _json(os.path.join(bundle, snapshot_folder + "-helm", "release.json"))
        out.append(
            {
                "bundle": os.path.relpath(bundle, root),
                "path": bundle,
                "status": status,
                "verified": status == "complete" and not verify_manifest(bundle),
                "report": report,
                "snapshot": release,
                "snapshot_folder": snapshot_folder
                if os.path.isdir(os.path.join(bundle, snapshot_folder))
                else None,
                "baseline": _json(
                    os.path.join(bundle, "verify", cluster, "baseline", "figures.json")
                ),
                "last_task": _last_task(bundle, cluster) if status != "complete" else None,
            }
        )
    return out


def snapshot_objects(folder, kinds):
    """The objects of ``kinds`` (Kind names) recorded in a kai_snapshot folder."""
    out = []
    index = _json(os.path.join(folder, "index.json")) or {}
    for selection in index.get("selections") or []:
        if (selection.get("selection") or {}).get("kind") not in kinds:
            continue
        sub = os.path.join(os.path.dirname(os.path.dirname(folder)), selection.get("folder") or "")
        for path in sorted(glob.glob(os.path.join(sub, "*", "*.json"))):
            obj = _json(path)
            if isinstance(obj, dict) and obj.get("kind") in kinds:
                out.append(obj)
    return out
