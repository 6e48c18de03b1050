# -*- coding: utf-8 -*-
# Copyright: kaiops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Runner of kai_gpu_access_report: the only layer that exits.

Builds the report with ``gpu_access/report.build_report`` and writes ``gpu_access.json`` and
``gpu_access.md`` into the run's evidence folder through the one report writer. Touches no
cluster; writes under ``--check`` too (the report is the run's evidence), reporting
``changed=false``.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import datetime

from ansible_collections.kaiops.runbooks.plugins.module_utils.evidence.report import write_report
from ansible_collections.kaiops.runbooks.plugins.module_utils.gpu_access.report import build_report


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
