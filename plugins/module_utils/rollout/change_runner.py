# -*- coding: utf-8 -*-
# Copyright: kaiops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Runner layer of the change window's modules: params in, the record out; the only layer that
exits. Each module takes the cluster's rollout record and returns it with its addition (built in
``rollout/pipeline.py``); the role keeps it (``tasks/keep.yml``).

- ``run_rollout_step``: additions that read no cluster - the failed-gate policy and waves, the
  earlier runs of the change in the evidence store, the state before the change, a skip, the
  upgrade's or rollback's result, the decision after verification, the rollback's restoration,
  a failed task, the rollback rehearsal of the change's version pair (and the approval it
  decides: ``rollout/change.py``).
- ``run_rollout_verify``: the probes of one verification (``baseline``, ``verify``, ``rollback``)
  in a namespace of the run's own, watched from the controller; figures from watch timestamps.
- ``run_rollout_restore``: ``read`` KAI's configuration objects (their resourceVersions), or
  ``restore`` them from the snapshot before the change after ``helm rollback``.
- ``run_rollout_governance``: who can edit KAI's coordination objects (RBAC, read-only).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import time

from ansible_collections.kaiops.runbooks.plugins.module_utils.bundle.policy import DEFAULT_POLICY
from ansible_collections.kaiops.runbooks.plugins.module_utils.errors import (
    STATUS_INVALID,
    STATUS_NOT_FOUND,
    KaiopsError,
)
from ansible_collections.kaiops.runbooks.plugins.module_utils.evidence.writer import EvidenceWriter
from ansible_collections.kaiops.runbooks.plugins.module_utils.k8s.objects import parse_time
from ansible_collections.kaiops.runbooks.plugins.module_utils.probes.client import (
    FixtureClient,
    Recorder,
)
from ansible_collections.kaiops.runbooks.plugins.module_utils.rollout import change as C
from ansible_collections.kaiops.runbooks.plugins.module_utils.rollout import governance as G
from ansible_collections.kaiops.runbooks.plugins.module_utils.rollout import pipeline
from ansible_collections.kaiops.runbooks.plugins.module_utils.rollout import probes as P
from ansible_collections.kaiops.runbooks.plugins.module_utils.rollout import restore as R
from ansible_collections.kaiops.runbooks.plugins.module_utils.rollout.client import (
    find_rollout_runs,
    read_report,
    snapshot_objects,
)
from ansible_collections.kaiops.runbooks.plugins.module_utils.rollout.gates import failed
from ansible_collections.kaiops.runbooks.plugins.module_utils.rollout.request import (
    option_path,
    the_addition,
)
from ansible_collections.kaiops.runbooks.plugins.module_utils.scan.client import RecoveryClient
from ansible_collections.kaiops.runbooks.plugins.module_utils.scan.findings import find

STALE_KINDS = ("stale_reservation_pod", "orphan_configmap", "unbound_group_pod")
ADDITIONS = (
    "policy",
    "earlier",
    "before",
    "skip",
    "prior",
    "upgrade",
    "decision",
    "rollback",
    "error",
    "rehearsal",
    "finish",
    "rollback_from",
)


def _exit(module, record, **extra):
    bad = failed(record.get("gates") or [])
    module.exit_json(
        record=record,
        decision=record.get("decision"),
        failed_gates=[g["gate"] for g in bad],
        passed=not bad,
        action=(record.get("change") or {}).get("action"),
        **extra,
    )


# ---------------------------------------------------------------- kai_rollout_step


def _step_policy(record, value, params, cluster, wall):
    record = pipeline.add_policy(record, value.get("on_failed_gate"), value.get("waves"))
    record.setdefault("change", {})["rate"] = value.get("rate") or 0
    return record


def _step_earlier(record, value, params, cluster, wall):
    root = option_path(params.get("evidence_root"))
    runs = find_rollout_runs(root, cluster, exclude=params.get("evidence_dir"))
    earlier = C.earlier_runs(cluster, value.get("version"), runs, value.get("current") or {})
    return pipeline.add_earlier(record, earlier)


def _step_upgrade(record, value, params, cluster, wall):
    record = pipeline.add_upgrade(record, value.get("stage") or "upgrade", value)
    if value.get("stage") == "rollback":
        record["change"]["rollback"]["revision_target"] = value.get("revision_target")
    return record


def _step_decision(record, value, params, cluster, wall):
    record = pipeline.add_decision(record, C.next_action(record))
    # The clock of "time to restore after a failed gate" starts at the decision.
    record["change"]["decided_at"] = round(wall(), 3)
    return record


def _step_rollback(record, value, params, cluster, wall):
    timing = {k: value[k] for k in ("time_to_restore_s", "time_to_verified_s") if k in value}
    decided = (record.get("change") or {}).get("decided_at")
    if decided and "time_to_verified_s" in value and not value.get("error"):
        timing["decision_to_verified_s"] = round(wall() - decided, 1)
    return pipeline.add_rollback(
        record, restore=value.get("restore"), timing=timing, error=value.get("error")
    )


def _step_error(record, value, params, cluster, wall):
    return pipeline.add_change_error(
        record, value.get("step") or "upgrade", value.get("task"), value.get("msg")
    )


def _step_rehearsal(record, value, params, cluster, wall):
    root = option_path(params.get("evidence_root"))
    runs = find_rollout_runs(root, cluster, exclude=params.get("evidence_dir"))
    group = str(value.get("group") or "").strip() or None
    peers = sorted({str(p) for p in value.get("peers") or [] if p and p != cluster})
    cited, rejected = C.find_rehearsal(runs, cluster, C.rehearsal_pair(record), group, peers)
    return C.add_rehearsal(record, cited, rejected, group, peers)


def _step_rollback_from(record, value, params, cluster, wall):
    root = option_path(params.get("evidence_root"))
    given = value.get("bundle") or ""
    path = os.path.abspath(os.path.expanduser(given)) if given else ""
    if given and not os.path.isdir(path) and root:
        path = os.path.join(root, given)  # a folder name in the evidence store
    report = read_report(os.path.join(path, "report.json")) if given else None
    return pipeline.new_rollback_record(
        cluster,
        os.path.basename(os.path.normpath(path)) if given else "",
        report,
        value.get("thresholds"),
        value.get("owner"),
        bundle_path=os.path.realpath(path) if given else None,
    )


def _step_finish(record, value, params, cluster, wall):
    record = pipeline.finish(record)
    change = record.get("change")
    if change is not None:
        for key in ("started_wall", "finished_wall"):
            if value.get(key):
                change[key] = value[key]
        if change.get("started_wall") and change.get("finished_wall"):
            change["duration_s"] = round(change["finished_wall"] - change["started_wall"], 1)
    return record


# What each addition of kai_rollout_step does to the record; any other addition finishes it.
STEPS = {
    "policy": _step_policy,
    "earlier": _step_earlier,
    "before": lambda record, value, *_ctx: pipeline.add_before(record, value),
    "skip": lambda record, value, *_ctx: pipeline.add_change_skip(record, value),
    "prior": lambda record, value, *_ctx: pipeline.add_prior(record),
    "upgrade": _step_upgrade,
    "decision": _step_decision,
    "rollback": _step_rollback,
    "error": _step_error,
    "rehearsal": _step_rehearsal,
    "rollback_from": _step_rollback_from,
}


def run_rollout_step(module, wall=time.time):
    params = module.params
    what = the_addition(params, ADDITIONS)
    record = params.get("record") or {}
    cluster = record.get("cluster") or params.get("cluster")
    value = params[what]
    record = STEPS.get(what, _step_finish)(record, value, params, cluster, wall)
    _exit(module, record, changed=False)


# ---------------------------------------------------------------- kai_rollout_verify


class ProbeRun(object):
    """One verification: probes in a namespace of the run's own, watched until each reached its
    outcome or the window ended; then the namespace is deleted and the recovery scan run."""

    def __init__(self, client, params, clock=time.monotonic, wall=time.time):
        self.client = client
        self.p = params
        self.clock = clock
        self.wall = wall
        self.cluster = params["cluster"]
        self.phase = params["phase"]
        self.namespace = P.namespace_name(params["run_id"], self.phase)
        root = params.get("evidence_dir")
        self.writer = EvidenceWriter(root, DEFAULT_POLICY) if root else None
        self.folder = "verify/%s/%s" % (self.cluster, self.phase)
        self.files = []
        self.notes = []

    def write(self, name, data):
        if self.writer is None:
            return None
        rel = self.writer.write("%s/%s" % (self.folder, name), data)
        self.files.append(rel)
        return rel

    def _wait(self, check, timeout, what):
        deadline = self.clock() + timeout
        while self.clock() < deadline:
            if check():
                return True
            time.sleep(0.25)
        self.notes.append("gave up waiting for %s after %s s" % (what, timeout))
        return False

    def _ns_gone(self, name):
        return self.client.read("v1", "Namespace", name) is None

    def clean_leftovers(self):
        """Probe namespaces an earlier, interrupted run left on this cluster: deleted first, so a
        rerun never runs two sets of probes."""
        found = self.client.list(
            "v1",
            "Namespace",
            label_selector="%s=%s,%s=%s"
            % (P.CREATED_BY, P.CREATED_BY_VALUE, P.CLUSTER_LABEL, self.cluster[:63]),
        )
        removed = []
        for ns in found:
            name = (ns.get("metadata") or {}).get("name")
            self.client.delete_namespace(name)
            removed.append(
                {
                    "namespace": name,
                    "run_id": ((ns.get("metadata") or {}).get("labels") or {}).get(P.RUN_LABEL),
                }
            )
        for item in removed:
            self._wait(lambda n=item["namespace"]: self._ns_gone(n), 120, item["namespace"])
        return removed

    def create_namespace(self):
        self.client.create(
            {
                "apiVersion": "v1",
                "kind": "Namespace",
                "metadata": {
                    "name": self.namespace,
                    "labels": P.labels(self.p["run_id"], self.phase, self.cluster),
                },
            }
        )
        ok = self._wait(
            lambda: self.client.read("v1", "ServiceAccount", "default", self.namespace),
            30,
            "the default service account of %s" % self.namespace,
        )
        if not ok:
            raise KaiopsError(
                "Failed to create probe namespace %s: no default service account after 30 s"
                % self.namespace
            )

    def binder_pods(self):
        return self.client.list(
            "v1", "Pod", self.p["kai_namespace"], label_selector=self.p["binder_selector"]
        )

    def scan(self):
        """The recovery scan (scan/findings.py): stale objects on the cluster now."""
        raw = RecoveryClient(self.client).collect(self.p["kai_namespace"], "binder")
        found = find(
            raw,
            _utc(self.wall()),
            reservation_namespace=self.p["reservation_namespace"],
            min_age_s=self.p["stale_min_age_s"],
        )
        stale = [f for f in found["findings"] if f["kind"] in STALE_KINDS]
        return stale, raw

    def _restart_counts(self):
        """Restarts per binder pod uid before the probes: the figure is the difference after."""
        initial = {}
        for pod in self.binder_pods():
            uid = pod["metadata"]["uid"]
            initial[uid] = sum(
                cs.get("restartCount", 0)
                for cs in (pod.get("status") or {}).get("containerStatuses") or []
            )
        return initial

    def _start_watches(self):
        rec = Recorder(self.client, clock=self.clock, wall=self.wall)
        rec.watch("pods", "v1", "Pod", self.namespace)
        rec.watch("bindrequests", "scheduling.run.ai/v1alpha2", "BindRequest", self.namespace)
        rec.watch("events", "v1", "Event", self.namespace)
        rec.watch(
            "binder", "v1", "Pod", self.p["kai_namespace"], label_selector=self.p["binder_selector"]
        )
        rec.watch("reservations", "v1", "Pod", self.p["reservation_namespace"])
        return rec

    def _submit_and_follow(self, rec, states, labels):
        """Create the probes (appended to ``states`` as each is created, so a failure leaves what
        was done) and follow them; (timed_out, seconds followed since the first submission)."""
        for w in P.workloads(
            self.p["probes"],
            self.p["kwok_probes"],
            self.p.get("probe_placement") or {},
            self.p.get("kwok_placement") or None,
        ):
            st = dict(w, submitted_t=self.clock(), submitted_wall=self.wall())
            self.client.create(P.manifest(w, self.namespace, self.p["image"], labels))
            states.append(st)
        deadline = self.clock() + self.p["window_s"]
        timed_out = True
        while self.clock() < deadline:
            if P.done({"pods": rec.objects("pods")}, states):
                timed_out = False
                break
            time.sleep(0.2)
        followed_s = round(self.clock() - states[0]["submitted_t"], 3) if states else 0
        return timed_out, followed_s

    def _close_watches(self, rec, initial):
        """(records, binder restarts, binder log files): the watches' records, then stopped."""
        time.sleep(0.5)  # the last events reach the watches
        records = {k: rec.objects(k) for k in rec.records}
        binder = P.binder_restarts(records.get("binder") or [], initial)
        logs = self.binder_logs()
        rec.stop()
        self.write_watches(records)
        return records, binder, logs

    def _probe_reservations_left(self, groups, reserved):
        """Reservation pods the probes' binds made that outlived the probes, once settled."""
        left = []

        def groups_gone():
            """Reservation pods the probes' binds made that outlived the probes: of the probes'
            GPU groups, not there before them, and whose group no other live bound pod uses
            (a probe may have joined another workload's group)."""
            del left[:]
            users = P.groups_in_use(
                self.client.list("v1", "Pod", label_selector="runai-gpu-group"),
                self.p["reservation_namespace"],
            )
            for pod in self.client.list("v1", "Pod", self.p["reservation_namespace"]):
                meta = pod.get("metadata") or {}
                group = (meta.get("labels") or {}).get("runai-gpu-group")
                if group in groups and group not in users and meta.get("uid") not in reserved:
                    left.append(meta["name"])
            return not left

        self._wait(groups_gone, self.p["settle_s"], "the probes' reservation pods to go")
        return left

    def _stale_objects(self, stale_before, stale_after, left):
        """Stale objects the change left: new since before it (or its baseline), and the probes'."""
        before_uids = set(self.p.get("stale_baseline") or []) | {
            f["object"]["uid"] for f in stale_before
        }
        new = [f for f in stale_after if f["object"]["uid"] not in before_uids]
        return {
            "count": len(new) + len(left),
            "probe_reservation_pods_left": list(left),
            "new_since_change": [f["id"] for f in new],
            "scan": len(stale_after),
            "scan_ids": [f["id"] for f in stale_after],
            "before_change": [f["object"]["uid"] for f in stale_before],
            "min_age_s": self.p["stale_min_age_s"],
        }

    def _figures(self, records, states, timed_out, extra):
        figures = P.figures(records, states, self.p["window_s"], timed_out, extra)
        walls = {st["name"]: st["submitted_wall"] for st in states}
        for row in figures["probe_results"]:
            row["submitted_wall"] = walls.get(row["name"])
        self.write("figures.json", figures)
        figures["files"] = list(self.files)
        figures["evidence"] = "%s/figures.json" % self.folder if self.writer else None
        return figures

    def run(self):
        started_wall = self.wall()
        leftovers = self.clean_leftovers()
        stale_before, _raw = self.scan()
        self.create_namespace()
        initial = self._restart_counts()
        reserved = {
            (p.get("metadata") or {}).get("uid")
            for p in self.client.list("v1", "Pod", self.p["reservation_namespace"])
        }
        rec = self._start_watches()
        states = []
        labels = P.labels(self.p["run_id"], self.phase, self.cluster)
        try:
            timed_out, followed_s = self._submit_and_follow(rec, states, labels)
        finally:
            records, binder, logs = self._close_watches(rec, initial)
        groups = P.probe_groups(records.get("pods") or [], {s["name"] for s in states})
        self.client.delete_namespace(self.namespace)
        self._wait(
            lambda: self._ns_gone(self.namespace), 120, "namespace %s to go" % self.namespace
        )
        left = self._probe_reservations_left(groups, reserved)
        stale_after, raw = self.scan()
        cap = P.capacity(self.client.list("v1", "Node"), raw["pods"])
        cap["held_idle"] = sum(1 for f in stale_after if f["kind"] == "stale_reservation_pod")
        extra = {
            "phase": self.phase,
            "cluster": self.cluster,
            "version": self.p.get("version"),
            "namespace": self.namespace,
            "followed_s": followed_s,
            "started_wall": started_wall,
            "finished_wall": self.wall(),
            "binder_restarts": binder,
            "stale_objects": self._stale_objects(stale_before, stale_after, left),
            "capacity": cap,
            "pending": P.pending_work(raw["pods"], self.wall(), parse_time),
            "leftovers_removed": leftovers,
            "watch_errors": list(rec.errors),
            "notes": list(self.notes),
            "binder_logs": logs,
        }
        return self._figures(records, states, timed_out, extra)

    def binder_logs(self):
        out = []
        for pod in self.binder_pods():
            name = pod["metadata"]["name"]
            try:
                text = self.client.logs(self.p["kai_namespace"], name, tail=500)
                previous = self.client.logs(self.p["kai_namespace"], name, previous=True, tail=500)
            except KaiopsError as exc:
                self.notes.append("binder log of %s: %s" % (name, exc.msg))
                continue
            out.append(self.write("binder-%s.log" % name, text or "(empty)\n"))
            if previous:
                out.append(self.write("binder-%s-previous.log" % name, previous))
        return [f for f in out if f]

    def write_watches(self, records):
        import json

        for key, items in sorted(records.items()):
            lines = [
                json.dumps(
                    {
                        "t": round(r["t"], 3),
                        "at": r["at"],
                        "type": r["type"],
                        "object": r["object"],
                    },
                    sort_keys=True,
                    separators=(",", ":"),
                )
                for r in items
            ]
            self.write("watch-%s.jsonl" % key, "\n".join(lines) + ("\n" if lines else ""))


def _utc(wall):
    import datetime

    return datetime.datetime.fromtimestamp(wall, datetime.timezone.utc)


def run_rollout_verify(module, client_factory=FixtureClient.from_options):
    params = dict(module.params)
    record = params.get("record") or {}
    if module.check_mode:
        module.exit_json(
            changed=False, skipped=True, record=record, msg="probes create pods: not under --check"
        )
    client = client_factory(
        params.get("kubeconfig"), params.get("context"), params.get("request_timeout") or 30
    )
    params["cluster"] = record.get("cluster") or params.get("cluster") or "cluster"
    baseline = ((record.get("change") or {}).get("figures") or {}).get("baseline") or {}
    resume = (record.get("change") or {}).get("resume") or {}
    if not baseline and resume.get("baseline"):
        baseline = resume["baseline"]
    params["stale_baseline"] = (baseline.get("stale_objects") or {}).get("before_change") or []
    figures = ProbeRun(client, params).run()
    if params["phase"] == "baseline" and not figures.get("version"):
        figures["version"] = (record.get("change") or {}).get("before", {}).get("version")
    record = pipeline.add_figures(record, params["phase"], figures, params.get("thresholds") or {})
    _exit(module, record, changed=True, figures=figures)


# ---------------------------------------------------------------- kai_rollout_restore


def _read_kinds(client, kinds):
    out = []
    for api_version, kind, _folder in kinds:
        try:
            out += client.list(api_version, kind)
        except KaiopsError as exc:
            if exc.status != STATUS_NOT_FOUND:
                raise
    return out


def snapshot_folder(given, run_dir, root):
    """An absolute snapshot folder: as given, in the run's bundle, or in the evidence store."""
    if not given:
        return None
    if os.path.isabs(given):
        return given
    for base in (run_dir, root):
        if base and os.path.isfile(os.path.join(base, given, "index.json")):
            return os.path.join(os.path.abspath(base), given)
    return os.path.join(os.path.abspath(run_dir or root or "."), given)


# How each planned action reads once done; recreate and replace are the ones that write.
RESTORE_OUTCOMES = {
    "recreate": "recreated",
    "replace": "replaced",
    "none": "unchanged",
    "not_restored": "not_restored",
    "left": "left",
}


def _snapshot_folder_checked(params):
    folder = snapshot_folder(
        params.get("snapshot_dir"), params.get("evidence_dir"), params.get("evidence_root")
    )
    if not folder or not os.path.isfile(os.path.join(folder, "index.json")):
        raise KaiopsError(
            "Failed to restore KAI's configuration: no snapshot index.json in %s" % folder,
            status=STATUS_INVALID,
        )
    return folder


def _replace_spec(client, current, recorded):
    """Merge-patch the recorded spec onto the object now, at the resourceVersion read."""
    meta = current.get("metadata") or {}
    patch = {"spec": R.merge_patch(current.get("spec") or {}, recorded.get("spec") or {})}
    client.patch(
        current["apiVersion"],
        current["kind"],
        meta["name"],
        meta.get("namespace"),
        patch,
        meta.get("resourceVersion"),
    )


def _restore_one(client, item, by_key, now_by_key, check_mode):
    """One planned action, applied unless in check mode: the item with its outcome."""
    outcome = RESTORE_OUTCOMES[item["action"]]
    if check_mode and outcome in ("recreated", "replaced"):
        outcome = "not_applied"
    elif outcome == "recreated":
        try:
            client.create(R.recreate_body(by_key[item["object"]]))
        except KaiopsError as exc:
            outcome, item = "failed", dict(item, why="%s: %s" % (item["why"], exc.msg))
    elif outcome == "replaced":
        try:
            _replace_spec(client, now_by_key[item["object"]], by_key[item["object"]])
        except KaiopsError as exc:
            outcome = "conflict" if exc.http_status == 409 else "failed"
            item = dict(item, why="%s: %s" % (item["why"], exc.msg))
    return dict(item, outcome=outcome)


def run_rollout_restore(module, client_factory=FixtureClient.from_options):
    params = module.params
    client = client_factory(
        params.get("kubeconfig"), params.get("context"), params.get("request_timeout") or 30
    )
    if params["operation"] == "read":
        module.exit_json(changed=False, objects=R.versions(_read_kinds(client, R.RESTORED_KINDS)))
    if params["operation"] == "survivors":
        by_kind = {what: _read_kinds(client, [(a, k, what)]) for a, k, what in R.SURVIVOR_KINDS}
        present = client.read("v1", "Namespace", params["reservation_namespace"]) is not None
        module.exit_json(changed=False, survivors=R.survivors(by_kind, present))
    folder = _snapshot_folder_checked(params)
    recorded = snapshot_objects(folder, [k for _a, k, _f in R.RESTORED_KINDS])
    now = _read_kinds(client, R.RESTORED_KINDS)
    actions = R.plan(recorded, params.get("before_rollback"), params.get("after_upgrade"), now)
    by_key = {R.key(o): o for o in recorded}
    now_by_key = {R.key(o): o for o in now}
    results = [
        _restore_one(client, item, by_key, now_by_key, module.check_mode) for item in actions
    ]
    summary = R.summary(results)
    module.exit_json(
        changed=any(r["outcome"] in ("recreated", "replaced") for r in results),
        restore={"results": results, "summary": summary, "snapshot": params.get("snapshot_dir")},
    )


# ---------------------------------------------------------------- kai_rollout_governance


def run_rollout_governance(module, client_factory=FixtureClient.from_options):
    params = module.params
    record = params.get("record") or {}
    client = client_factory(
        params.get("kubeconfig"), params.get("context"), params.get("request_timeout") or 30
    )
    rbac = {}
    summary = {}
    try:
        rbac["cluster_roles"] = client.list("rbac.authorization.k8s.io/v1", "ClusterRole")
        rbac["cluster_role_bindings"] = client.list(
            "rbac.authorization.k8s.io/v1", "ClusterRoleBinding"
        )
        namespaces = sorted(set(params.get("namespaces") or []))
        rbac["roles"], rbac["role_bindings"] = [], []
        for ns in namespaces:
            rbac["roles"] += client.list("rbac.authorization.k8s.io/v1", "Role", ns)
            rbac["role_bindings"] += client.list("rbac.authorization.k8s.io/v1", "RoleBinding", ns)
        summary = G.resolve(
            rbac, G.targets(params["kai_namespace"], namespaces), params["kai_namespace"]
        )
        summary["namespaces"] = namespaces
    except KaiopsError as exc:
        summary = {"error": exc.msg}
    regression = record.get("regression") or {}
    if regression.get("bundle"):
        summary["regression_evidence"] = "%s/%s/report.json" % (
            regression.get("root"),
            regression["bundle"],
        )
    elif regression.get("waiver"):
        summary["regression_evidence"] = "waived: %s" % regression["waiver"]
    evidence = None
    if params.get("evidence_dir"):
        writer = EvidenceWriter(params["evidence_dir"], DEFAULT_POLICY)
        evidence = "governance/%s.json" % (record.get("cluster") or "cluster")
        writer.write_json(evidence, summary)
    gate_record = G.governance_gate(summary, params.get("rule"))
    gate_record["evidence"] = evidence
    record = pipeline.add_governance(record, summary, gate_record, evidence)
    _exit(module, record, changed=False, governance=summary)
