# Copyright: kaiops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Runner layer of the recovery modules: params in, service calls, the result dict out.

The only layer that exits; KaiopsError is turned into fail_json by ``ansible_module.run_module``.
"""

import datetime
import time

from ansible_collections.kaiops.runbooks.plugins.module_utils.bundle import report as B
from ansible_collections.kaiops.runbooks.plugins.module_utils.k8s.access import client_from
from ansible_collections.kaiops.runbooks.plugins.module_utils.k8s.client import (
    KubeClient,
    KubeWriter,
)
from ansible_collections.kaiops.runbooks.plugins.module_utils.k8s.objects import ref
from ansible_collections.kaiops.runbooks.plugins.module_utils.kai.facts import SCHEDULER_NAME
from ansible_collections.kaiops.runbooks.plugins.module_utils.recovery.apply import (
    InterventionJournal,
    RecoveryApplier,
)
from ansible_collections.kaiops.runbooks.plugins.module_utils.recovery.report import (
    build,
    render_markdown,
)
from ansible_collections.kaiops.runbooks.plugins.module_utils.recovery.service import (
    WINDOW_RULE,
    derive_window,
    observe,
    plan,
    start_latencies,
)
from ansible_collections.kaiops.runbooks.plugins.module_utils.scan.client import (
    PendingClient,
    RecoveryClient,
)
from ansible_collections.kaiops.runbooks.plugins.module_utils.scan.findings import find
from ansible_collections.kaiops.runbooks.plugins.module_utils.scan.pending import (
    classify,
    snapshot,
)


def _utc_now():
    return datetime.datetime.now(datetime.timezone.utc)


def pending_causes(client, raw, params, read_at):
    """Each Pending pod KAI schedules with its cause, as diagnose.yml gives it: the shared reads
    (the pods recovery listed already) and the shared classifier. No log is read: a component
    refused by the API server shows only when its Deployment has no ready replica."""
    reads = PendingClient(client).collect(
        params["kai_namespace"], params["reservation_namespace"], SCHEDULER_NAME, pods=raw["pods"]
    )
    found = classify(snapshot(reads), read_at, params.get("namespaces") or [])
    return {"by_cause": found["by_cause"], "pods": found["pods"], "notes": found["notes"]}


def run_recovery_info(
    module, client_factory=KubeClient.from_options, now=_utc_now, clock=time.time
):
    params = module.params
    client = client_from(params, client_factory)
    raw = RecoveryClient(client).collect(params["kai_namespace"], params["binder_deployment"])
    read_at = now()
    found = find(
        raw,
        read_at,
        namespaces=params.get("namespaces") or [],
        reservation_namespace=params["reservation_namespace"],
        min_age_s=params["min_age_s"],
    )
    rule = dict(WINDOW_RULE, **{k: v for k, v in (params.get("window_rule") or {}).items() if v})
    samples = start_latencies(raw["pods"], read_at, rule["lookback_s"], rule["max_samples"])
    result = {
        "changed": False,
        "cluster": params["cluster"],
        "findings": found["findings"],
        "notes": found["notes"],
        "summary": found["summary"],
        "access": raw["access"],
        "disposable": raw["disposable"],
        "binder": ref(raw["binder"]) if raw.get("binder") else None,
        "window": derive_window(samples, rule, params.get("window_s") or 0),
        "read_at": B.stamp(read_at),
        "api_calls": client.calls,
    }
    if params.get("baseline") is None:
        # The cause of each Pending pod, once, when finding (not at each observation poll).
        result["pending"] = pending_causes(client, raw, params, read_at)
        result["api_calls"] = client.calls
    else:
        observation = observe(
            params["baseline"],
            raw,
            params.get("interventions") or [],
            now=read_at,
            reservation_namespace=params["reservation_namespace"],
        )
        started = params.get("observe_started_at")
        observation["elapsed_s"] = round(clock() - float(started), 1) if started else 0.0
        result["observation"] = observation
    module.exit_json(**result)


def run_recovery_apply(module, client_factory=KubeWriter.from_options, clock=_utc_now):
    params = module.params
    planned, idle = plan(
        params["findings"],
        params["steps"],
        binder=params.get("binder"),
        kai_namespace=params["kai_namespace"],
        namespaces=params.get("namespaces") or [],
    )
    if not planned:
        module.exit_json(changed=False, interventions=[], idle_steps=idle, journal=None)
    writer, _root = B.evidence_writer(module)
    journal = InterventionJournal(writer) if writer else None
    applier = RecoveryApplier(
        client_from(params, client_factory), journal, params["cluster"], params["task"], clock
    )
    done = applier.apply(planned, check_mode=module.check_mode)
    module.exit_json(
        changed=any(d["outcome"] in ("deleted", "restarted") for d in done),
        interventions=done,
        idle_steps=idle,
        journal=journal.path,
    )


def run_recovery_report(module, now=_utc_now):
    params = module.params
    report = build(
        params["clusters"],
        B.stamp(now()),
        run_id=B.run_id(params.get("evidence_dir")),
        affected_range=params.get("affected_range"),
        fixed_version=params.get("fixed_version"),
    )
    files = B.report_files("recovery", report, params.get("template_dir"), render_markdown)
    root, files = B.write_report(module, files)
    module.exit_json(
        changed=False,
        summary=report["summary"],
        clusters={
            name: {
                "status": e["status"],
                "prevention": e["prevention"]["line"],
                "remediation": e["remediation"]["line"],
                "unrecovered_after_intervention": e["unrecovered_after_intervention"],
            }
            for name, e in report["clusters"].items()
        },
        files=files,
        evidence_dir=root,
    )
