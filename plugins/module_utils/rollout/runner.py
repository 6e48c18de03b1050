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

import os

from ansible_collections.kaiops.runbooks.plugins.module_utils.bundle import report as B
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
from ansible_collections.kaiops.runbooks.plugins.module_utils.rollout.record import (
    RolloutRecord,
    outcome,
    records,
)
from ansible_collections.kaiops.runbooks.plugins.module_utils.rollout.request import option_path


def _exit(module, record, **extra):
    """The small values a role branches on (``record.outcome``), never the record."""
    module.exit_json(changed=False, **dict(outcome(record), **extra))


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
    started = pipeline.new_record(cluster, asked, judged, detail, link)
    record = RolloutRecord(params.get("evidence_dir"), cluster).add("request", {"record": started})
    _exit(
        module,
        record,
        cluster=cluster,
        gates=judged,
        well_formed=record["request_well_formed"],
        kai_version=(record.get("request") or {}).get("kai_version"),
        message=gates.refusal_message(cluster, judged),
    )


def run_rollout_refusal(module):
    """The request the request check of every playbook refused: the record starts with one
    failed request gate per problem. Without a bundle there is nowhere to record it: the
    refusal is the failure."""
    params = module.params
    refusal = {k: params.get(k) for k in ("problems", "request", "operation")}
    if not params.get("evidence_dir"):
        found = pipeline.refused_record(params.get("cluster"), refusal)
        # Each problem with its fix: the evidence store's own says how to point it elsewhere.
        raise KaiopsError(
            "Rollout refused for %s: %s (no evidence bundle to record it in)"
            % (
                params.get("cluster"),
                "; ".join(
                    "%s (fix: %s)" % (g["message"], g["fix"]) if g.get("fix") else g["message"]
                    for g in found["gates"]
                ),
            )
        )
    record = RolloutRecord(params["evidence_dir"], params.get("cluster")).add("refusal", refusal)
    _exit(module, record, message=gates.refusal_message(record["cluster"], record["gates"]))


def run_rollout_failure(module):
    """A task of an operation failed: where (``stage``) says how the record takes it."""
    params = module.params
    journal = RolloutRecord(params.get("evidence_dir"), params.get("cluster"))
    stage, task, msg = params["stage"], params.get("task"), params.get("msg")
    if stage in ("request", "cluster"):
        record = journal.add("failure", {"stage": stage, "task": task, "msg": msg})
    elif stage == "change":
        upgraded = "upgrade" in (journal.record().get("change") or {})
        step = "verify" if upgraded else "upgrade"
        record = journal.add("change_error", {"step": step, "task": task, "msg": msg})
    else:
        error = "%s: %s" % (task, msg or "no message")
        record = journal.add("rollback", {"restore": params.get("restore"), "error": error})
    _exit(module, record)


def run_rollout_admit(module):
    """Whether the cluster may be read: a malformed change request reads no cluster, and its
    cluster steps are recorded as not run."""
    params = module.params
    journal = RolloutRecord(params.get("evidence_dir"), params.get("cluster"))
    record = journal.record()
    well_formed = bool(record.get("request_well_formed"))
    if not well_formed:
        record = journal.add("skip", {})
    _exit(module, record, well_formed=well_formed)


def _running(inventory):
    kai = inventory.get("kai") or {}
    return {
        "current_version": kai.get("version"),
        "implementation_label": kai.get("implementation_label"),
        "inventory_status": inventory["status"] if "status" in inventory else "missing",
    }


def run_rollout_inventory(module):
    """The cluster's inventory judged against the cluster gates, and the snapshot planned; or,
    with ``judge=false`` (rollback.yml), only what runs."""
    params = module.params
    journal = RolloutRecord(params.get("evidence_dir"), params.get("cluster"))
    inventory = params.get("inventory") or {}
    if not params["judge"]:
        _exit(module, journal.add("running", _running(inventory)))
        return
    data = {k: params[k] for k in ("namespace", "reservation_namespace", "helm_release")}
    record = journal.add("inventory", dict(data, inventory=inventory))
    _exit(
        module,
        record,
        snapshot_due=bool(record.get("snapshot_due")),
        selections=(record.get("snapshot_plan") or {}).get("selections") or [],
        message=gates.refusal_message(record.get("cluster"), record.get("gates") or []),
    )


def run_rollout_before(module):
    """The snapshot taken before the change and the release it recorded: what a rollback
    returns to."""
    params = module.params
    journal = RolloutRecord(params.get("evidence_dir"), params.get("cluster"))
    objects = params.get("objects") or {}
    helm = params.get("helm")
    snapshot = {
        "objects": {k: objects.get(k) for k in ("count", "folder")},
        "helm": {k: helm.get(k) for k in ("revision", "folder")} if helm else None,
        "use_helm": params["use_helm"],
    }
    record = journal.add("snapshot", snapshot)
    before = {
        "version": record.get("current_version"),
        "revision": params.get("revision"),
        "chart": params.get("chart"),
        "snapshot": params.get("snapshot"),
    }
    record = journal.add("before", before)
    _exit(module, record, before=(record.get("change") or {}).get("before"))


def _files(report, template_dir=None):
    return B.report_files(
        "report", report, template_dir, rollout_report.render_markdown, rollout_report.render_junit
    )


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


def _records(params):
    """(request, clusters): with ``hosts``, each host's record read from the run's journal (a
    host without one: ``{}``) and the first request recorded; else as given."""
    hosts = params.get("hosts")
    if hosts is None:
        return params.get("request"), params.get("clusters")
    root = params.get("evidence_dir")
    found = records(root, hosts) if root else {name: {} for name in hosts}
    asked = next((r["request"] for r in found.values() if r.get("request")), {})
    return asked, found


def _as_dict(clusters):
    return clusters if isinstance(clusters, dict) else {}


def _inventoried(record):
    return isinstance(record, dict) and bool(record.get("inventory_status"))


def run_rollout_report(module, now=None):
    params = module.params
    root = params.get("evidence_dir")
    generated_at = B.stamp(now)
    run_id = params.get("run_id") or B.run_id(root)
    error = None
    asked, clusters = params.get("request"), params.get("clusters")
    try:
        asked, clusters = _records(params)
        report = rollout_report.build(
            asked,
            clusters,
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
        report = rollout_report.error_report(asked, clusters, generated_at, run_id, error)
        try:
            files = _files(report, params.get("template_dir"))
        except Exception as render_exc:  # noqa: BLE001 - the templates themselves failed
            error += "; rendering the error report: %s: %s" % (
                type(render_exc).__name__,
                render_exc,
            )
            files = [("report.json", report)]
    root, written = B.write_report(module, files)
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
        inventoried=[n for n, r in _as_dict(clusters).items() if _inventoried(r)],
        files=written,
        evidence_dir=root,
    )
