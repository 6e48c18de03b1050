# -*- coding: utf-8 -*-
# Copyright: kaiops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Runner layer of the rollout modules: params in, the result dict out; the only layer that exits.

None of them talks to a cluster:

- ``run_rollout_request`` judges one cluster's change request (and the evidence store on the
  controller) and returns the cluster's new record;
- ``run_rollout_record`` adds what an operation did (the inventory, the snapshot, a skip or a
  failure) to a record;
- ``run_rollout_report`` writes report.json, report.md and junit.xml from every record, and
  writes them whatever went wrong: when the report cannot be built, an error report is written
  and the module fails after.

The evidence store and the run's folder come from the run's context (``evidence_root``,
``evidence_dir``), filled in by the action plugin; so do the version pair's defaults.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import datetime
import os

from ansible_collections.kaiops.runbooks.plugins.module_utils.bundle.report import write_report
from ansible_collections.kaiops.runbooks.plugins.module_utils.errors import KaiopsError
from ansible_collections.kaiops.runbooks.plugins.module_utils.evidence.report import run_facts
from ansible_collections.kaiops.runbooks.plugins.module_utils.rollout import (
    gates,
    pipeline,
    request,
)
from ansible_collections.kaiops.runbooks.plugins.module_utils.rollout import (
    report as rollout_report,
)
from ansible_collections.kaiops.runbooks.plugins.module_utils.rollout.client import (
    find_regression_reports,
)
from ansible_collections.kaiops.runbooks.plugins.module_utils.rollout.request import (
    option_path,
    the_addition,
)


def run_rollout_request(module):
    params = module.params
    cluster = params["cluster"]
    root = option_path(params.get("evidence_root"))
    asked = request.normalize_request(params)
    judged, detail = gates.request_gates(asked, find_regression_reports, root)
    link = None
    if detail and detail.get("bundle"):
        report = os.path.join(root, detail["bundle"], "report.json")
        run_dir = option_path(params.get("evidence_dir"))
        link = os.path.relpath(report, run_dir) if run_dir else report
    record = pipeline.new_record(cluster, asked, judged, detail, link)
    bad = gates.failed(judged)
    module.exit_json(
        changed=False,
        cluster=cluster,
        record=record,
        gates=judged,
        failed_gates=[g["gate"] for g in bad],
        passed=not bad,
        well_formed=record["request_well_formed"],
        message=gates.refusal_message(cluster, judged),
    )


# What kai_rollout_record adds; exactly one per call.
ADDITIONS = ("skip", "inventory", "snapshot", "failure", "refusal")


def run_rollout_record(module):
    params = module.params
    the_addition(params, ADDITIONS)
    record = params.get("record") or {}
    if params.get("skip") is not None:
        record = pipeline.add_skip(record)
    elif params.get("inventory") is not None:
        record = pipeline.add_inventory(
            record,
            params["inventory"],
            params["namespace"],
            params["reservation_namespace"],
            params["helm_release"],
        )
    elif params.get("snapshot") is not None:
        snapshot = params["snapshot"]
        record = pipeline.add_snapshot(
            record,
            snapshot.get("objects") or {},
            snapshot.get("helm"),
            snapshot.get("use_helm", True),
        )
    elif params.get("refusal") is not None:
        record = pipeline.refused_record(params.get("cluster"), params["refusal"])
    else:
        failure = params["failure"]
        record = pipeline.add_failure(
            record,
            failure.get("stage") or "cluster",
            failure.get("task") or "unknown task",
            failure.get("msg"),
            cluster=params.get("cluster"),
        )
    bad = gates.failed(record.get("gates") or [])
    module.exit_json(
        changed=False,
        record=record,
        failed_gates=[g["gate"] for g in bad],
        passed=not bad,
        snapshot_due=bool(record.get("snapshot_due")),
        message=gates.refusal_message(record.get("cluster"), record.get("gates") or []),
    )


def _files(report, template_dir=None):
    return [
        ("report.json", report),
        ("report.md", rollout_report.render_markdown(report, template_dir)),
        ("junit.xml", rollout_report.render_junit(report)),
    ]


def refused_by_request(report):
    """Whether every cluster was refused on its request alone, before any cluster was read:
    only request gates were judged and no step after the request ran. The bundle's status then
    says ``refused`` (the evidence callback reads ``refused_by``), as for the other playbooks'
    refused requests."""
    clusters = list((report.get("clusters") or {}).values())
    return bool(clusters) and all(
        c["decision"] == "refused"
        and all(g.get("stage") == "request" for g in c["gates"])
        and all(s["status"] == "not_run" for s in c["steps"] if s["step"] != "request")
        for c in clusters
    )


def run_rollout_report(module, now=None):
    params = module.params
    root = params.get("evidence_dir")
    generated_at = (now or datetime.datetime.now(datetime.timezone.utc)).strftime(
        "%Y-%m-%dT%H:%M:%SZ"
    )
    run_id = params.get("run_id") or (os.path.basename(os.path.abspath(root)) if root else None)
    error = None
    try:
        report = rollout_report.build(
            params["request"],
            params["clusters"],
            generated_at,
            run_id,
            pending_steps=params.get("pending_steps"),
            run=run_facts(root),
        )
        if refused_by_request(report):
            report["refused_by"] = "request"
        files = _files(report, params.get("template_dir"))
    except Exception as exc:  # noqa: BLE001 - every run leaves its report, whatever failed
        error = "%s: %s" % (type(exc).__name__, exc)
        report = rollout_report.error_report(
            params.get("request"), params.get("clusters"), generated_at, run_id, error
        )
        try:
            files = _files(report, params.get("template_dir"))
        except Exception as render_exc:  # noqa: BLE001 - the templates themselves failed
            error += "; rendering the error report: %s: %s" % (
                type(render_exc).__name__,
                render_exc,
            )
            files = [("report.json", report)]
    root, written = write_report(module, files)
    if error:
        raise KaiopsError(
            "Failed to build the rollout report: %s (an error report was written: %s)"
            % (error, ", ".join(written) or "nothing, no evidence folder"),
            details={"files": written, "evidence_dir": root},
        )
    module.exit_json(
        changed=False,
        decision=report["decision"],
        refused_clusters=report["refused_clusters"],
        clusters={
            name: {"decision": c["decision"], "reasons": c["reasons"], "steps": c["steps"]}
            for name, c in report["clusters"].items()
        },
        summary=report["summary"],
        files=written,
        evidence_dir=root,
    )
