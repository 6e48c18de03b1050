# Copyright: kaiops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Runners of the gpu_access modules: the only layer that exits.

- ``run_gpu_access_plan`` (kai_gpu_access_plan): the configuration reads, then ``plan.build_plan``.
- ``run_gpu_access_watch`` (kai_gpu_access_watch): one case's pods followed through its stages
  by ``waiter.watch``, each stage kept as an observation.
- ``run_gpu_access_report`` (kai_gpu_access_report): builds the report with
  ``report.build_report`` and writes ``gpu_access.json`` and ``gpu_access.md`` into the run's
  evidence folder through the one report writer. Touches no cluster; writes under ``--check``
  too (the report is the run's evidence).

All three change nothing on any cluster and report ``changed=false``.
"""

import datetime
import time

from ansible_collections.kaiops.runbooks.plugins.module_utils.bundle.report import write_report
from ansible_collections.kaiops.runbooks.plugins.module_utils.gpu_access.client import (
    GpuAccessClient,
)
from ansible_collections.kaiops.runbooks.plugins.module_utils.gpu_access.plan import build_plan
from ansible_collections.kaiops.runbooks.plugins.module_utils.gpu_access.records import (
    case_snapshot,
)
from ansible_collections.kaiops.runbooks.plugins.module_utils.gpu_access.report import build_report
from ansible_collections.kaiops.runbooks.plugins.module_utils.gpu_access.waiter import (
    check_stages,
    watch,
)
from ansible_collections.kaiops.runbooks.plugins.module_utils.k8s.access import client_from
from ansible_collections.kaiops.runbooks.plugins.module_utils.k8s.client import KubeClient


def utc_now():
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def run_gpu_access_report(module, now=utc_now):
    params = module.params
    document, markdown = build_report(params, now())
    root, files = write_report(module, [("gpu_access.json", document), ("gpu_access.md", markdown)])
    module.exit_json(
        changed=False,
        summary=document["summary"],
        cases=[
            {"id": c["id"], "verdict": c["verdict"], "observed": c["observed"]}
            for c in document["cases"]
        ],
        cost=document["cost"],
        files=files,
        evidence_dir=root,
    )


# ------------------------------------------------------------------ the reads: plan and watch


def run_gpu_access_plan(module, client_factory=KubeClient.from_options):
    """Read the cluster's configuration and plan the run (plan.build_plan). Reads only."""
    params = module.params
    reads = GpuAccessClient(client_from(params, client_factory))
    raw = reads.configuration(params["kai_namespace"])
    plan = build_plan(raw, params, params.get("kai") or {}, module.check_mode)
    module.exit_json(changed=False, plan=plan)


def run_gpu_access_watch(
    module,
    client_factory=KubeClient.from_options,
    clock=time.monotonic,
    now=utc_now,
    sleep=time.sleep,
):
    """Follow one case's pods through its stages (waiter.watch). Reads only."""
    params = module.params
    check_stages(params["stages"])  # bad input fails before any cluster call
    reads = GpuAccessClient(client_from(params, client_factory))

    def read():
        return case_snapshot(
            reads.case_state(params["namespace"], params["case"], params["reservation_namespace"])
        )

    snapshots = watch(
        read,
        params["stages"],
        params["timeout_s"],
        params["poll_s"],
        clock,
        now,
        sleep,
        reasons=params.get("reasons") or {},
    )
    module.exit_json(
        changed=False,
        case=params["case"],
        snapshots=snapshots,
        met=all(s["met"] for s in snapshots),
    )
