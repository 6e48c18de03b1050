# -*- coding: utf-8 -*-
# Copyright: kaiops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Runner layer of the rollout modules: params in, result dict out; the only layer that exits.

Neither runner talks to a cluster: ``run_preflight_gates`` judges the change request (and the
evidence store on the controller) or a cluster's inventory; ``run_rollout_report`` writes the
report files. Failures are raised as KaiopsError and turned into fail_json by
``ansible_module.run_module``. The evidence store and the run's folder come from the run's
context (``evidence_root``, ``evidence_dir``), filled in by the action plugin.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import datetime
import os

from ansible_collections.kaiops.runbooks.plugins.module_utils.evidence.report import write_report
from ansible_collections.kaiops.runbooks.plugins.module_utils.rollout import gates as preflight
from ansible_collections.kaiops.runbooks.plugins.module_utils.rollout import (
    report as rollout_report,
)


def evidence_root(option=None):
    """The evidence store to search, as given (the run's context gives the store's root)."""
    return os.path.abspath(os.path.expanduser(option)) if option else None


def run_preflight_gates(module):
    params = module.params
    cluster = params["cluster"]
    detail = None
    if params["stage"] == "inputs":
        root = evidence_root(params.get("evidence_root"))
        gates, detail = preflight.input_gates(
            params.get("change_owner"),
            params.get("target_version"),
            params.get("thresholds"),
            params.get("rollback_target"),
            params.get("regression_waiver"),
            root,
        )
        if detail and detail.get("bundle"):
            report = os.path.join(root, detail["bundle"], "report.json")
            run_dir = params.get("evidence_dir")
            detail["link"] = os.path.relpath(report, run_dir) if run_dir else report
    else:
        gates = preflight.cluster_gates(
            cluster, params.get("inventory"), params.get("rollback_target")
        )
        selections, note = preflight.snapshot_selections(
            params.get("inventory"),
            params.get("namespace") or "kai-scheduler",
            params.get("reservation_namespace") or "kai-resource-reservation",
            params.get("helm_release") or "kai-scheduler",
        )
        detail = {"snapshot_selections": selections, "snapshot_note": note}
    failed = preflight.failed(gates)
    module.exit_json(
        changed=False,
        stage=params["stage"],
        cluster=cluster,
        gates=gates,
        failed_gates=[g["gate"] for g in failed],
        passed=not failed,
        message=preflight.refusal_message(cluster, gates),
        regression=detail if params["stage"] == "inputs" else None,
        snapshot=detail if params["stage"] == "cluster" else None,
    )


def run_rollout_report(module, now=None):
    params = module.params
    root = params.get("evidence_dir")
    generated_at = (now or datetime.datetime.now(datetime.timezone.utc)).strftime(
        "%Y-%m-%dT%H:%M:%SZ"
    )
    run_id = params.get("run_id") or (os.path.basename(os.path.abspath(root)) if root else None)
    report = rollout_report.build(
        params["request"],
        params["clusters"],
        generated_at,
        run_id,
        pending_steps=params.get("pending_steps") or (),
    )
    root, files = write_report(
        module,
        [
            ("report.json", report),
            ("report.md", rollout_report.render_markdown(report)),
            ("junit.xml", rollout_report.render_junit(report)),
        ],
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
        files=files,
        evidence_dir=root,
    )
