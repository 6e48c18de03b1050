# -*- coding: utf-8 -*-
# Copyright: kaiops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Runner layer: turns module params into service calls and builds the result dict.

The only layer that exits (``module.exit_json``). Failures are raised as KaiopsError and
turned into ``fail_json`` once, by each module's main().
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import datetime
import time

from ansible_collections.kaiops.runbooks.plugins.module_utils.client import KubeClient
from ansible_collections.kaiops.runbooks.plugins.module_utils.errors import KaiopsError
from ansible_collections.kaiops.runbooks.plugins.module_utils.evidence import (
    ENV_EVIDENCE_DIR,
    EvidenceWriter,
    resolve_evidence_dir,
)
from ansible_collections.kaiops.runbooks.plugins.module_utils.inventory import (
    InventoryService,
    analyse,
)
from ansible_collections.kaiops.runbooks.plugins.module_utils.report import (
    render_markdown,
    summarize,
)
from ansible_collections.kaiops.runbooks.plugins.module_utils.snapshot import SnapshotService
from ansible_collections.kaiops.runbooks.plugins.module_utils.versions import parse_range

NO_EVIDENCE_WARNING = (
    "No evidence folder: set evidence_dir or %s (the kaiops.runbooks.evidence callback exports "
    "it); nothing was written" % ENV_EVIDENCE_DIR
)


def _client(params, client_factory):
    return client_factory(
        params.get("kubeconfig"), params.get("context"), params.get("request_timeout") or 30
    )


def _writer(module, params):
    root = resolve_evidence_dir(params.get("evidence_dir"))
    if root is None:
        module.warn(NO_EVIDENCE_WARNING)
        return None
    return EvidenceWriter(root)


def run_snapshot(module, client_factory=KubeClient.from_options, clock=time.monotonic):
    params = module.params
    started = clock()
    writer = _writer(module, params)  # a bad evidence_dir fails before any cluster call
    client = _client(params, client_factory)
    captured = SnapshotService(client).capture(params["selections"])
    folder, files = (None, [])
    if writer is not None:
        folder, files = SnapshotService.file(writer, params["name"], captured)
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
        "evidence_dir": writer.root if writer else None,
        "folder": folder,
        "files": len(files),
    }
    if params.get("return_objects"):
        result["objects"] = [item for c in captured for item in c["items"]]
    module.exit_json(**result)


def run_inventory_facts(module, client_factory=KubeClient.from_options, clock=time.monotonic):
    params = module.params
    started = clock()
    parse_range(params["affected_range"])  # bad input fails before any cluster call
    client = _client(params, client_factory)
    raw = InventoryService(client).collect(params["namespace"], params.get("helm_release"))
    inventory = analyse(
        raw,
        cluster=params["cluster"],
        affected_range=params["affected_range"],
        binder_name=params["binder_deployment"],
        operator_name=params["operator_deployment"],
        admission_name=params["admission_deployment"],
        restart_threshold=params.get("restart_threshold"),
    )
    if inventory["status"] == "forbidden":
        raise KaiopsError(
            "Failed to read Deployments in namespace %s: forbidden by RBAC" % params["namespace"],
            status="forbidden",
            details={"inventory": inventory},
        )
    inventory["duration_s"] = round(clock() - started, 3)
    module.exit_json(
        changed=False,
        inventory=inventory,
        helm_path=module.get_bin_path("helm"),
    )


def run_inventory_report(module, now=None):
    params = module.params
    clusters = params["clusters"]
    writer = _writer(module, params)
    generated_at = (now or datetime.datetime.now(datetime.timezone.utc)).strftime(
        "%Y-%m-%dT%H:%M:%SZ"
    )
    summary = summarize(clusters)
    files = []
    if writer is not None:
        document = {
            "generated_at": generated_at,
            "affected_range": params["affected_range"],
            "summary": summary,
            "clusters": clusters,
        }
        files.append(writer.write_json("inventory.json", document))
        files.append(
            writer.write_text(
                "inventory.md",
                render_markdown(clusters, summary, params["affected_range"], generated_at),
            )
        )
    module.exit_json(
        changed=False, summary=summary, files=files, evidence_dir=writer.root if writer else None
    )
