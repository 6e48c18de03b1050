# Copyright: kaiops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Runner layer of the change window's modules: params in, a few values out; the only layer that
exits. Each module reads the cluster's record from the run's journal and appends what it did
(``rollout/record.py``, rules in ``rollout/pipeline.py``); it returns ``decision``, ``action``,
``passed`` and what the role needs next, never the record.

- one runner per module that reads no cluster, each appending one entry (``rollout/record.py``):
  the failed-gate policy and waves, the earlier runs of the change in the evidence store, the
  start of the change (skip, prior run, or change), the upgrade's or rollback's result, the
  decision after verification, the rollback's restoration, the rollback rehearsal of the
  change's version pair (and the approval it decides: ``rollout/change.py``), the finish, and
  rollback.yml's start from a bundle.
- ``run_rollout_verify``: the probes of one verification (``baseline``, ``verify``, ``rollback``)
  in a namespace of the run's own, watched from the controller; figures from watch timestamps.
- ``run_rollout_restore``: ``read`` KAI's configuration objects (their resourceVersions), or
  ``restore`` them from the snapshot before the change after the downgrade.
- ``run_rollout_governance``: who can edit KAI's coordination objects (RBAC, read-only).
"""

import os
import time

from ansible_collections.kaiops.runbooks.plugins.module_utils.bundle.policy import DEFAULT_POLICY
from ansible_collections.kaiops.runbooks.plugins.module_utils.errors import (
    STATUS_INVALID,
    STATUS_NOT_FOUND,
    KaiopsError,
)
from ansible_collections.kaiops.runbooks.plugins.module_utils.evidence.writer import EvidenceWriter
from ansible_collections.kaiops.runbooks.plugins.module_utils.k8s.access import client_from
from ansible_collections.kaiops.runbooks.plugins.module_utils.k8s.objects import parse_time
from ansible_collections.kaiops.runbooks.plugins.module_utils.kai import facts as F
from ansible_collections.kaiops.runbooks.plugins.module_utils.probes.client import (
    FixtureClient,
    Recorder,
)
from ansible_collections.kaiops.runbooks.plugins.module_utils.rollout import change as C
from ansible_collections.kaiops.runbooks.plugins.module_utils.rollout import governance as G
from ansible_collections.kaiops.runbooks.plugins.module_utils.rollout import pipeline
from ansible_collections.kaiops.runbooks.plugins.module_utils.rollout import portions as PT
from ansible_collections.kaiops.runbooks.plugins.module_utils.rollout import probes as P
from ansible_collections.kaiops.runbooks.plugins.module_utils.rollout import restore as R
from ansible_collections.kaiops.runbooks.plugins.module_utils.rollout import waves as W
from ansible_collections.kaiops.runbooks.plugins.module_utils.rollout.client import (
    find_rollout_runs,
    read_report,
    snapshot_objects,
)
from ansible_collections.kaiops.runbooks.plugins.module_utils.rollout.gates import failed
from ansible_collections.kaiops.runbooks.plugins.module_utils.rollout.record import (
    RolloutRecord,
    outcome,
)
from ansible_collections.kaiops.runbooks.plugins.module_utils.rollout.request import option_path
from ansible_collections.kaiops.runbooks.plugins.module_utils.scan.client import RecoveryClient
from ansible_collections.kaiops.runbooks.plugins.module_utils.scan.findings import find
from ansible_collections.kaiops.runbooks.plugins.module_utils.scan.pending import REFUSED
from ansible_collections.kaiops.runbooks.plugins.module_utils.vocabulary import wave_numbers

STALE_KINDS = (
    "stale_reservation_pod",
    "duplicate_reservation_pod",
    "orphan_configmap",
    "unbound_group_pod",
)
# An inventory that read nothing: RBAC is not read either.
UNREAD = ("unreachable", "unauthorized", "missing", "error", "invalid_input")


def _journal(params):
    return RolloutRecord(params.get("evidence_dir"), params.get("cluster"))


def _exit(module, record, **extra):
    """The small values a role branches on (``record.outcome``), never the record."""
    module.exit_json(**dict(outcome(record), **extra))


def _before(record):
    return dict((record.get("change") or {}).get("before") or {})


# ---------------------------------------------------------------- the change window's records


def run_rollout_policy(module):
    """The failed-gate policy and the waves, judged as request gates."""
    params = module.params
    names = (
        "on_failed_gate", "waves", "rate", "failure_budget", "soak_s", "progress_deadline_s",
        "canary", "canary_hosts", "hosts",
    )  # fmt: skip
    data = {k: params.get(k) for k in names}
    record = _journal(params).add("policy", data)
    _exit(module, record, changed=False, well_formed=bool(record.get("request_well_formed")))


def run_rollout_earlier(module):
    """The evidence store's earlier runs of this change on the cluster."""
    params = module.params
    journal = _journal(params)
    cluster = journal.cluster
    version = (journal.record().get("request") or {}).get("kai_version")
    root = option_path(params.get("evidence_root"))
    runs = find_rollout_runs(root, cluster, exclude=params.get("evidence_dir"))
    earlier = C.earlier_runs(cluster, version, runs, params.get("current") or {})
    _exit(module, journal.add("earlier", {"earlier": earlier}), changed=False)


def skip_reason(record, others, hosts, check_mode):
    """Why the change (or rollback.yml's rollback) does not run on the cluster, or None.
    ``hosts``: the play's hosts in order (the waves are made of them), ``others``: the records of
    the run's other clusters."""
    bad = failed(record.get("gates") or [])
    if (record.get("change") or {}).get("operation") == "rollback":
        if check_mode:
            return "check mode (--check): nothing is rolled back"
        if not record.get("request_well_formed"):
            return "refused: " + "; ".join(g["message"] for g in bad)
        if bad:  # the cluster could not be read: nothing is rolled back blind
            return "not read (failed gates: %s)" % ", ".join(g["gate"] for g in bad)
        return None
    if bad:
        return "preflight refused (failed gates: %s)" % ", ".join(g["gate"] for g in bad)
    change = record.get("change") or {}
    stopped = W.not_started_reason(
        change.get("wave"),
        wave_numbers(change.get("waves"), hosts),
        {name: (others.get(name) or {}).get("decision") for name in hosts},
        change.get("failure_budget"),
    )
    if stopped:
        return stopped
    if check_mode:
        return "check mode (--check): nothing is upgraded, probed or rolled back"
    return None


def run_rollout_start(module):
    """Whether the change runs: ``skip`` (every change step not run, with the reason), ``prior``
    (a repeated run stands on the earlier approved one) or ``change``."""
    params = module.params
    journal = _journal(params)
    record = journal.record()
    hosts = list(params.get("peers") or [])
    hosts += [] if journal.cluster in hosts else [journal.cluster]
    rollback = (record.get("change") or {}).get("operation") == "rollback"
    if not rollback:  # the cluster's wave, by the computation the play's serial uses
        record = journal.add(
            "wave", W.wave_entry(record.get("change") or {}, hosts, journal.cluster)
        )
    others = journal.others() if len(hosts) > 1 else {}
    reason = skip_reason(record, others, hosts, module.check_mode)
    if reason and reason.startswith(W.NOT_STARTED_TEXT):
        record, action = journal.add("not_started", {"reason": reason}), "skip"
    elif reason:
        record, action = journal.add("change_skip", {"reason": reason}), "skip"
    elif (record.get("change") or {}).get("prior") and not record.get("decision"):
        record, action = journal.add("prior", {}), "prior"
    else:
        action = "change"
    target = _before(record).get("version") if rollback else None
    _exit(
        module,
        record,
        changed=False,
        action=action,
        kai_version=target or (record.get("request") or {}).get("kai_version"),
        before=_before(record),
    )


def run_rollout_upgrade(module):
    """The upgrade's (``stage=upgrade``) or the downgrade's (``rollback``) result; what the
    record knows (the revision and version before the change, the target) filled in."""
    params = module.params
    journal = _journal(params)
    record = journal.record()
    before = _before(record)
    result = dict(params.get("result") or {}, stage=params["stage"])
    if params["stage"] == "upgrade":
        result.setdefault("revision_before", before.get("revision"))
        result.setdefault("expected_version", (record.get("request") or {}).get("kai_version"))
    else:
        result.setdefault("revision_target", before.get("revision"))
        result.setdefault("expected_version", before.get("version"))
    _exit(module, journal.add("upgrade", result), changed=False)


def run_rollout_decision(module, wall=time.time):
    """The failed-gate policy applied to the verification: ``action`` says what comes next."""
    journal = _journal(module.params)
    now = round(wall(), 3)
    if (journal.record().get("change") or {}).get("progress_deadline_s"):
        # The deadline is judged at the decision, before the policy reads the gates.
        journal.add("progress", {"decided_at": now})
    action = C.next_action(journal.record())
    # The clock of "time to restore after a failed gate" starts at the decision.
    record = journal.add("decision", {"action": action, "decided_at": now})
    _exit(module, record, changed=False, before=_before(record))


def run_rollout_rollback(module, wall=time.time):
    """The rollback's restoration of KAI's configuration and its times to restore."""
    params = module.params
    journal = _journal(params)
    timing = {
        k: params[k]
        for k in ("time_to_restore_s", "time_to_verified_s")
        if params.get(k) is not None
    }
    decided = (journal.record().get("change") or {}).get("decided_at")
    if decided and "time_to_verified_s" in timing:
        timing["decision_to_verified_s"] = round(wall() - decided, 1)
    record = journal.add("rollback", {"restore": params.get("restore"), "timing": timing})
    _exit(module, record, changed=False)


def run_rollout_rehearsal(module):
    """The newest rollback rehearsal of the change's version pair in the evidence store."""
    params = module.params
    journal = _journal(params)
    cluster = journal.cluster
    root = option_path(params.get("evidence_root"))
    runs = find_rollout_runs(root, cluster, exclude=params.get("evidence_dir"))
    group = str(params.get("group") or "").strip() or None
    peers = sorted({str(p) for p in params.get("peers") or [] if p and p != cluster})
    cited, rejected = C.find_rehearsal(
        runs, cluster, C.rehearsal_pair(journal.record()), group, peers
    )
    data = {"cited": cited, "rejected": rejected, "group": group, "peers": peers}
    _exit(module, journal.add("rehearsal", data), changed=False)


def run_rollout_finish(module, wall=time.time):
    """The cluster's decision from everything recorded; ``summary`` names it and each step."""
    params = module.params
    finished = params.get("finished_wall") or wall()
    data = {"started_wall": params.get("started_wall"), "finished_wall": finished}
    record = _journal(params).add("finish", data)
    summary = "%s - %s" % (
        (record.get("decision") or "proceed").upper(),
        ", ".join("%s %s" % (s["step"], s["status"]) for s in record.get("steps") or []),
    )
    _exit(module, record, changed=False, summary=summary)


def run_rollout_bundle(module):
    """rollback.yml's record, started from the rollout bundle it restores."""
    params = module.params
    journal = _journal(params)
    root = option_path(params.get("evidence_root"))
    given = params.get("bundle") or ""
    path = os.path.abspath(os.path.expanduser(given)) if given else ""
    if given and not os.path.isdir(path) and root:
        path = os.path.join(root, given)  # a folder name in the evidence store
    report = read_report(os.path.join(path, "report.json")) if given else None
    started = pipeline.new_rollback_record(
        journal.cluster,
        os.path.basename(os.path.normpath(path)) if given else "",
        report,
        params.get("thresholds"),
        params.get("owner"),
        bundle_path=os.path.realpath(path) if given else None,
    )
    record = journal.add("bundle", {"record": started})
    _exit(
        module,
        record,
        changed=False,
        well_formed=bool(record.get("request_well_formed")),
        kai_version=_before(record).get("version"),
        before=_before(record),
    )


# ---------------------------------------------------------------- kai_rollout_verify


class ProbeRun:
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
        self.burst = {"requested": 0, "node": None, "node_gpus": 0, "node_free_gpus": 0}

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
        for w in self._workloads(labels):
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

    def _workloads(self, labels):
        """The burst first (its pods at once, as in KAI-Scheduler #2153, on the node chosen for
        its free GPUs before the other probes take any), then the probes, then the gangs (their
        PodGroups created first)."""
        real_placement = self.p.get("probe_placement") or {}
        kwok_placement = self.p.get("kwok_placement") or None
        out = P.workloads(self.p["probes"], self.p["kwok_probes"], real_placement, kwok_placement)
        gangs = P.gang_workloads(
            self.p.get("gang_probes") or 0,
            bool(self.p["kwok_probes"]),
            real_placement,
            kwok_placement,
        )
        for name in sorted({w["gang"] for w in gangs}):
            self.client.create(P.pod_group_manifest(name, self.namespace, labels))
        burst = self.burst.get("node") and P.burst_workloads(
            self.burst["requested"], self.burst["node"]
        )
        return (burst or []) + out + gangs

    def _choose_burst_node(self):
        """Where the burst lands (the KWOK node with the most GPUs); none asked, none chosen."""
        requested = int(self.p.get("burst_probes") or 0)
        self.burst = {"requested": requested, "node": None, "node_gpus": 0, "node_free_gpus": 0}
        if requested:
            node, gpus, free = P.burst_node(
                self.client.list("v1", "Node"), self.client.list("v1", "Pod")
            )
            self.burst.update(node=node, node_gpus=gpus, node_free_gpus=free)
            if node is None:
                self.notes.append("no KWOK node with GPUs: the burst probe was not submitted")

    def _auth_refusals(self, since):
        """The API server refusing a KAI component during the window: 401/403 in each KAI pod's
        log since the window began, and in the KAI namespace's events. A log that cannot be read
        leaves the figure without data (the gate fails on it)."""
        found, unreadable, read = [], [], 0
        for pod in self.client.list("v1", "Pod", self.p["kai_namespace"]):
            name = pod["metadata"]["name"]
            try:
                text = self.client.logs(self.p["kai_namespace"], name, tail=2000)
            except KaiopsError as exc:
                unreadable.append("%s: %s" % (name, exc.msg))
                continue
            read += 1
            for line in P.refused_lines(text, since, REFUSED, parse_time)[:5]:
                found.append({"pod": name, "line": line[:300]})
        events = []
        for ev in self.client.list("v1", "Event", self.p["kai_namespace"]):
            stamp = parse_time(ev.get("lastTimestamp") or ev.get("eventTime") or "")
            if stamp is not None and stamp.timestamp() + 1 >= since:
                if REFUSED.search(ev.get("message") or ""):
                    obj = ev.get("involvedObject") or {}
                    events.append({"object": obj.get("name"), "message": ev["message"][:300]})
        return {
            "count": len(found) + len(events),
            "log_lines": found,
            "events": events,
            "pods_read": read,
            "unreadable": unreadable,
            "since_wall": since,
        }

    def _portions(self, records):
        """Portions per device over the window (rollout/portions.py), with the cluster's
        BindRequests and its live shared-GPU pods read at the end."""
        others = [
            pod
            for pod in self.client.list("v1", "Pod", label_selector=PT.GROUP_LABEL)
            if (pod.get("metadata") or {}).get("namespace")
            not in (self.namespace, self.p["reservation_namespace"])
        ]
        brs = list(records.get("bindrequests") or []) + self._cluster_bindrequests()
        reservations = list(records.get("reservations") or []) + self.client.list(
            "v1", "Pod", self.p["reservation_namespace"]
        )
        return PT.device_portions(records.get("pods") or [], brs, reservations, others)

    def _cluster_bindrequests(self):
        """Every BindRequest of the cluster; none (and a note) when they cannot be read."""
        try:
            return self.client.list(*F.BIND_REQUEST)
        except KaiopsError as exc:
            note = "BindRequests not read: %s" % exc.msg
            if note not in self.notes:  # read again at each poll of a wait
                self.notes.append(note)
            return []

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
                self.client.list("v1", "Pod", label_selector=F.GPU_GROUP_LABEL),
                self.p["reservation_namespace"],
                self._cluster_bindrequests(),
            )
            for pod in self.client.list("v1", "Pod", self.p["reservation_namespace"]):
                meta = pod.get("metadata") or {}
                group = (meta.get("labels") or {}).get(F.GPU_GROUP_LABEL)
                if group in groups and group not in users and meta.get("uid") not in reserved:
                    left.append(meta["name"])
            return not left

        self._wait(groups_gone, self.p["settle_s"], "the probes' reservation pods to go")
        return left

    def _stale_objects(self, stale_before, stale_after, left, duplicates):
        """Stale objects the change left: new since before it (or its baseline), the probes', and
        the extra reservation pods of the groups that had two at once during the window."""
        before_uids = set(self.p.get("stale_baseline") or []) | {
            f["object"]["uid"] for f in stale_before
        }
        new = [f for f in stale_after if f["object"]["uid"] not in before_uids]
        extra = sum(len(d["pods"]) - 1 for d in duplicates)
        return {
            "count": len(new) + len(left) + extra,
            "probe_reservation_pods_left": list(left),
            "duplicate_reservation_pods_seen": duplicates,
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
        self._choose_burst_node()
        rec = self._start_watches()
        states = []
        labels = P.labels(self.p["run_id"], self.phase, self.cluster)
        try:
            timed_out, followed_s = self._submit_and_follow(rec, states, labels)
        finally:
            records, binder, logs = self._close_watches(rec, initial)
        portions = self._portions(records)
        auth = self._auth_refusals(started_wall)
        groups = P.probe_groups(
            records.get("pods") or [],
            {s["name"] for s in states},
            records.get("bindrequests") or [],
        )
        self.client.delete_namespace(self.namespace)
        self._wait(
            lambda: self._ns_gone(self.namespace), 120, "namespace %s to go" % self.namespace
        )
        left = self._probe_reservations_left(groups, reserved)
        dups = PT.duplicate_reservations(records.get("reservations") or [], reserved)
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
            "stale_objects": self._stale_objects(stale_before, stale_after, left, dups),
            "capacity": cap,
            "pending": P.pending_work(raw["pods"], self.wall(), parse_time),
            "leftovers_removed": leftovers,
            "watch_errors": list(rec.errors),
            "notes": list(self.notes),
            "binder_logs": logs,
            "gangs_requested": int(self.p.get("gang_probes") or 0),
            "burst": self.burst,
            "device_portions": portions,
            "auth_errors": auth,
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


def baseline_note(record):
    """Why no baseline is measured (the cluster runs the target already), or None."""
    target = (record.get("request") or {}).get("kai_version")
    if record.get("current_version") != target:
        return None
    resume = (record.get("change") or {}).get("resume")
    return "the cluster already ran %s when this run began%s" % (
        target,
        (", as recorded by run %s" % resume.get("bundle")) if resume else "",
    )


def verify_inputs(record, phase):
    """What a verification is held to, from the record: the version it runs on (the target
    after the upgrade, the version before the change otherwise), the thresholds, the window and
    the stale objects there before the change."""
    change = record.get("change") or {}
    thresholds = (record.get("request") or {}).get("thresholds") or {}
    version = (record.get("request") or {}).get("kai_version")
    if phase not in ("verify", "soak"):
        version = (change.get("before") or {}).get("version")
    baseline = (change.get("figures") or {}).get("baseline") or {}
    resume = change.get("resume") or {}
    if not baseline and resume.get("baseline"):
        baseline = resume["baseline"]
    return {
        "version": version,
        "thresholds": thresholds,
        "window_s": int(thresholds.get("observation_window_s") or 300),
        "stale_baseline": (baseline.get("stale_objects") or {}).get("before_change") or [],
    }


def run_rollout_verify(module, client_factory=FixtureClient.from_options):
    params = dict(module.params)
    journal = _journal(params)
    record = journal.record()
    if module.check_mode:
        module.exit_json(changed=False, skipped=True, msg="probes create pods: not under --check")
    note = baseline_note(record) if params["phase"] == "baseline" else None
    if note:
        record = journal.add("baseline_note", {"note": note})
        _exit(module, record, changed=False, skipped=True, msg="no baseline measured: " + note)
        return
    client = client_from(params, client_factory)
    params.update(verify_inputs(record, params["phase"]))
    figures = ProbeRun(client, params).run()
    if params["phase"] == "baseline" and not figures.get("version"):
        figures["version"] = params["version"]
    data = {"phase": params["phase"], "figures": figures, "thresholds": params["thresholds"]}
    _exit(module, journal.add("figures", data), changed=True, figures=figures)


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


def _with_recorded_snapshot(params):
    """The snapshot before the change and the resourceVersions read right after the upgrade,
    from the cluster's record when the task does not give them."""
    if params.get("snapshot_dir") or not params.get("cluster"):
        return params
    change = _journal(params).record().get("change") or {}
    out = dict(params, snapshot_dir=(change.get("before") or {}).get("snapshot"))
    if out.get("after_upgrade") is None:
        out["after_upgrade"] = change.get("after_objects") or None
    return out


def run_rollout_restore(module, client_factory=FixtureClient.from_options):
    params = module.params
    client = client_from(params, client_factory)
    if params["operation"] == "read":
        module.exit_json(changed=False, objects=R.versions(_read_kinds(client, R.RESTORED_KINDS)))
    if params["operation"] == "survivors":
        by_kind = {what: _read_kinds(client, [(a, k, what)]) for a, k, what in R.SURVIVOR_KINDS}
        present = client.read("v1", "Namespace", params["reservation_namespace"]) is not None
        module.exit_json(changed=False, survivors=R.survivors(by_kind, present))
    if params["operation"] == "hooks":
        _clear_stuck_hooks(module, client)
    params = _with_recorded_snapshot(params)
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


def _clear_stuck_hooks(module, client):
    """Delete the hook Jobs in KAI's namespace that wait on an image never pulled (R.stuck_hooks),
    each only if unchanged since read; under check mode, report them."""
    namespace = module.params["kai_namespace"]
    stuck = R.stuck_hooks(
        client.list("batch/v1", "Job", namespace), client.list("v1", "Pod", namespace)
    )
    for hook in stuck:
        hook["outcome"] = "would delete" if module.check_mode else "deleted"
        if not module.check_mode:
            client.delete(
                "batch/v1", "Job", hook["job"], namespace, hook["uid"], hook["resource_version"]
            )
    if any("post-delete" in (h.get("hook") or "") for h in stuck):
        stuck += _post_delete_work(client, namespace, module.check_mode)
    module.exit_json(changed=bool(stuck) and not module.check_mode, hooks=stuck)


def _post_delete_work(client, namespace, check_mode):
    """What KAI's post-delete hook does, done here since it could not run: the operator's
    Deployments and Config kai-config deleted. Left, the components keep tokens of service
    accounts the uninstall deleted and the install made anew: every API call answered 401 (seen on
    the lab, as KAI #1536), and the install would not replace them."""
    found = client.list("apps/v1", "Deployment", namespace, label_selector=R.OPERATOR_MANAGED) + [
        c for c in client.list("kai.scheduler/v1", "Config") if R.key(c) == R.KAI_CONFIG
    ]
    done = []
    for obj in found:
        meta = obj.get("metadata") or {}
        if not check_mode:
            client.delete(
                obj["apiVersion"], obj["kind"], meta["name"], meta.get("namespace"),
                meta.get("uid"), meta.get("resourceVersion"),
            )  # fmt: skip
        done.append({
            "object": "%s %s" % (obj["kind"], meta["name"]),
            "hook": "post-delete (its work)",
            "what": "%s %s (the post-delete hook's work, done since the hook could not run)"
            % (obj["kind"], meta["name"]),
            "outcome": "would delete" if check_mode else "deleted",
        })  # fmt: skip
    return done


# ---------------------------------------------------------------- kai_rollout_governance


def run_rollout_governance(module, client_factory=FixtureClient.from_options):
    params = module.params
    journal = _journal(params)
    record = journal.record()
    if record.get("inventory_status") in UNREAD:
        module.exit_json(
            changed=False,
            skipped=True,
            msg="RBAC not read: the inventory read nothing (%s)" % record["inventory_status"],
        )
    client = client_from(params, client_factory)
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
    data = {"summary": summary, "gate": gate_record, "evidence": evidence}
    _exit(module, journal.add("governance", data), changed=False, governance=summary)
