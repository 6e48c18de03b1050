# Copyright: kaiops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Runner layer of the diagnose modules: params in, the result dict out.

The only layer that exits (``module.exit_json``). Failures are raised as KaiopsError and turned
into ``fail_json`` once, by ``ansible_module.run_module``.
"""

import datetime

from ansible_collections.kaiops.runbooks.plugins.module_utils.bundle import report as B
from ansible_collections.kaiops.runbooks.plugins.module_utils.diagnose.client import DiagnoseClient
from ansible_collections.kaiops.runbooks.plugins.module_utils.diagnose.report import (
    build,
    render_junit,
    render_markdown,
)
from ansible_collections.kaiops.runbooks.plugins.module_utils.diagnose.service import diagnose
from ansible_collections.kaiops.runbooks.plugins.module_utils.k8s.access import client_from
from ansible_collections.kaiops.runbooks.plugins.module_utils.k8s.client import KubeClient


def _utc_now():
    return datetime.datetime.now(datetime.timezone.utc)


def run_diagnose_info(module, client_factory=KubeClient.from_options, now=_utc_now):
    params = module.params
    client = client_from(params, client_factory)
    logs = (
        {"tail_lines": params["log_lines"], "since_s": params["log_since_s"]}
        if params["read_logs"]
        else None
    )
    raw = DiagnoseClient(client).collect(
        params["kai_namespace"],
        params["reservation_namespace"],
        params["scheduler_name"],
        logs=logs,
    )
    found = diagnose(raw, now(), params["cluster"], params.get("namespaces") or [])
    module.exit_json(changed=False, diagnosis=found)


def run_diagnose_report(module, now=_utc_now):
    params = module.params
    report = build(params["clusters"], B.stamp(now()), run_id=B.run_id(params.get("evidence_dir")))
    files = B.report_files(
        "report", report, params.get("template_dir"), render_markdown, render_junit
    )
    root, files = B.write_report(module, files)
    module.exit_json(
        changed=False,
        decision=report["decision"],
        summary=report["summary"],
        files=files,
        evidence_dir=root,
    )
