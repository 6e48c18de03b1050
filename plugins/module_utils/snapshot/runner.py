# Copyright: kaiops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Runner layer of kai_snapshot and kai_helm_snapshot: params in, the result dict out.

The only layer that exits. A bad ``evidence_dir`` fails before any cluster call.
"""

import time

from ansible_collections.kaiops.runbooks.plugins.module_utils.bundle.policy import policy_for
from ansible_collections.kaiops.runbooks.plugins.module_utils.bundle.report import evidence_writer
from ansible_collections.kaiops.runbooks.plugins.module_utils.errors import (
    STATUS_INVALID,
    KaiopsError,
)
from ansible_collections.kaiops.runbooks.plugins.module_utils.k8s.access import client_from
from ansible_collections.kaiops.runbooks.plugins.module_utils.k8s.client import KubeClient
from ansible_collections.kaiops.runbooks.plugins.module_utils.snapshot.client import HelmCli
from ansible_collections.kaiops.runbooks.plugins.module_utils.snapshot.report import (
    file_helm,
    file_objects,
)
from ansible_collections.kaiops.runbooks.plugins.module_utils.snapshot.service import (
    SnapshotService,
    capture_helm_release,
)


def run_snapshot(module, client_factory=KubeClient.from_options, clock=time.monotonic):
    params = module.params
    started = clock()
    writer, _root = evidence_writer(module)  # a bad evidence_dir fails before any cluster call
    client = client_from(params, client_factory)
    captured = SnapshotService(client, policy_for(params)).capture(params["selections"])
    root, folder, files = file_objects(module, params["name"], captured, writer=writer)
    result = {
        "changed": False,
        "name": params["name"],
        "selections": [
            {"selection": c["selection"], "count": len(c["items"]), "redactions": c["redactions"]}
            for c in captured
        ],
        "count": sum(len(c["items"]) for c in captured),
        "api_calls": client.calls,
        "duration_s": round(clock() - started, 3),
        "evidence_dir": root,
        "folder": folder,
        "files": len(files),
    }
    if params.get("return_objects"):
        result["objects"] = [item for c in captured for item in c["items"]]
    module.exit_json(**result)


def run_helm_snapshot(module):
    params = module.params
    evidence_writer(module)  # a bad evidence_dir fails before helm runs
    binary = params.get("binary_path") or module.get_bin_path("helm")
    if not binary:
        raise KaiopsError(
            "Failed to find helm: not on PATH; set binary_path", status=STATUS_INVALID
        )
    cli = HelmCli(module.run_command, binary, params.get("kubeconfig"), params.get("context"))
    snap = capture_helm_release(cli, params["release"], params["namespace"])
    root, folder, files = file_helm(module, params["name"], snap)
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
