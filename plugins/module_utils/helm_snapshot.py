# -*- coding: utf-8 -*-
# Copyright: kaiops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Helm release snapshot: read a release's values and history with the helm CLI (read-only),
redact secret-looking values, and file them as evidence.

Layers: ``HelmCli`` is I/O only (``run_command`` is passed in: AnsibleModule.run_command or a
fake); ``capture`` and ``file`` are the service; the runner exits. Values never travel in the
task result: only counts, the revision and what was redacted.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json

from ansible_collections.kaiops.runbooks.plugins.module_utils.errors import (
    STATUS_NOT_FOUND,
    KaiopsError,
)
from ansible_collections.kaiops.runbooks.plugins.module_utils.evidence import (
    EvidenceWriter,
    resolve_evidence_dir,
    safe_name,
)
from ansible_collections.kaiops.runbooks.plugins.module_utils.redact import REDACTED, redact_values


class HelmCli(object):
    """Runs read-only helm commands; raises KaiopsError on failure."""

    def __init__(self, run_command, binary, kubeconfig=None, context=None):
        self._run = run_command
        self._base = [binary]
        if kubeconfig:
            self._base += ["--kubeconfig", kubeconfig]
        if context:
            self._base += ["--kube-context", context]

    def json(self, args, what):
        rc, out, err = self._run(self._base + args + ["-o", "json"])
        if rc != 0:
            status = STATUS_NOT_FOUND if "not found" in (err or "") else "error"
            raise KaiopsError(
                "Failed to read %s with helm: %s" % (what, (err or out or "").strip()),
                status=status,
            )
        try:
            return json.loads(out or "null")
        except ValueError as exc:
            raise KaiopsError("Failed to read %s with helm: output is not JSON" % what) from exc


def _redacted_paths(value, path=""):
    """Paths of the values replaced with REDACTED (so the evidence says what was left out)."""
    found = []
    if isinstance(value, dict):
        for key, item in value.items():
            found += _redacted_paths(item, "%s.%s" % (path, key) if path else str(key))
    elif isinstance(value, list):
        for n, item in enumerate(value):
            found += _redacted_paths(item, "%s[%d]" % (path, n))
    elif value == REDACTED:
        found.append(path)
    return found


def capture(cli, release, namespace):
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


def file(writer, name, snap):
    folder = writer.unique_dir("snapshots/" + safe_name(name))
    files = [
        writer.write_json(folder + "/values.json", snap["values"]),
        writer.write_json(folder + "/history.json", snap["history"]),
        writer.write_json(
            folder + "/release.json",
            {k: v for k, v in snap.items() if k not in ("values", "history")},
        ),
    ]
    return folder, files


def run_helm_snapshot(module):
    params = module.params
    root = resolve_evidence_dir(params.get("evidence_dir"))
    binary = params.get("binary_path") or module.get_bin_path("helm")
    if not binary:
        raise KaiopsError(
            "Failed to find helm: not on PATH; set binary_path", status="invalid_input"
        )
    cli = HelmCli(module.run_command, binary, params.get("kubeconfig"), params.get("context"))
    snap = capture(cli, params["release"], params["namespace"])
    folder, files = None, []
    if root is None:
        module.warn("No evidence folder: the Helm values were not written")
    else:
        folder, files = file(EvidenceWriter(root), params["name"], snap)
    module.exit_json(
        changed=False,
        release=snap["release"],
        namespace=snap["namespace"],
        revision=snap["revision"],
        chart=snap["chart"],
        app_version=snap["app_version"],
        status=snap["status"],
        redacted=snap["redacted"],
        evidence_dir=root,
        folder=folder,
        files=files,
    )
