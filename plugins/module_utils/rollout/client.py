# -*- coding: utf-8 -*-
# Copyright: kaiops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Reads of the rollout: the evidence store on the controller (reproduce reports), I/O only.

The clusters are read by the inventory (``inventory/client.py``) and the snapshot
(``snapshot/``); what counts as regression evidence is decided in ``rollout/gates.py``.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

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
