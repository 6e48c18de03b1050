# Copyright: kaiops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Runner layer of the inventory modules: params in, the result dict out.

The only layer that exits (``module.exit_json``). Failures are raised as KaiopsError and turned
into ``fail_json`` once, by ``ansible_module.run_module``.
"""

import time

from ansible_collections.kaiops.runbooks.plugins.module_utils.bundle import report as B
from ansible_collections.kaiops.runbooks.plugins.module_utils.errors import KaiopsError
from ansible_collections.kaiops.runbooks.plugins.module_utils.inventory.client import (
    InventoryClient,
)
from ansible_collections.kaiops.runbooks.plugins.module_utils.inventory.report import (
    render_markdown,
    summarize,
)
from ansible_collections.kaiops.runbooks.plugins.module_utils.inventory.service import analyse
from ansible_collections.kaiops.runbooks.plugins.module_utils.k8s.access import client_from
from ansible_collections.kaiops.runbooks.plugins.module_utils.k8s.client import KubeClient
from ansible_collections.kaiops.runbooks.plugins.module_utils.kai.identify import all_findings
from ansible_collections.kaiops.runbooks.plugins.module_utils.versions import parse_range


def run_inventory_info(module, client_factory=KubeClient.from_options, clock=time.monotonic):
    params = module.params
    started = clock()
    parse_range(params["affected_range"])  # bad input fails before any cluster call
    client = client_from(params, client_factory)
    raw = InventoryClient(client).collect(params["namespace"], params.get("helm_release"))
    inventory = analyse(
        raw,
        cluster=params["cluster"],
        affected_range=params["affected_range"],
        binder_name=params["binder_deployment"],
        operator_name=params["operator_deployment"],
        admission_name=params["admission_deployment"],
        restart_threshold=params.get("restart_threshold"),
        releases=params.get("releases"),
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


def with_findings(entry):
    """The cluster's findings with helm's voice added (helm is read after the facts, on the
    controller): a release helm cannot upgrade, or helm naming another version than the binder."""
    kai = entry.get("kai")
    if not kai or not kai.get("installed"):
        return entry
    return dict(entry, kai=dict(kai, findings=all_findings(kai)))


def run_inventory_report(module, now=None):
    params = module.params
    clusters = params["clusters"]
    generated_at = B.stamp(now)
    clusters = {name: with_findings(entry) for name, entry in clusters.items()}
    summary = summarize(clusters)
    document = {
        "generated_at": generated_at,
        "affected_range": params["affected_range"],
        "fixed_version": params.get("fixed_version"),
        "summary": summary,
        "clusters": clusters,
    }
    markdown = render_markdown(
        clusters,
        summary,
        params["affected_range"],
        generated_at,
        params.get("fixed_version"),
        params.get("template_dir"),
    )
    root, files = B.write_report(module, [("inventory.json", document), ("inventory.md", markdown)])
    module.exit_json(changed=False, summary=summary, files=files, evidence_dir=root)
