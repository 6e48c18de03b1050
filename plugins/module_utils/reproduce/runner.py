# Copyright: kaiops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Runner of reproduce: one case on one build, end to end, through the Kubernetes API only.

Order, per case: declare the expectation (written first), create the case's namespace
(labelled; it is the only place anything is planted), start the watches, create each
fixture pod held by a scheduling gate, read the ConfigMap names admission gave it from
its `runai/shared-gpu-configmap` annotation (never guessed), plant the capabilities
ConfigMap owned by the pod and read back what the API server stored, lift the gate, then
follow the pods until every one reached its expected outcome or the window ends.
Evidence goes into `cases/<build>/<case>/` of the run's bundle; the namespace is deleted
at the end unless kept for inspection. This is the only layer that exits.
"""

import json
import time

from ansible_collections.kaiops.runbooks.plugins.module_utils.bundle.policy import DEFAULT_POLICY
from ansible_collections.kaiops.runbooks.plugins.module_utils.errors import (
    STATUS_INVALID,
    KaiopsError,
)
from ansible_collections.kaiops.runbooks.plugins.module_utils.evidence.writer import EvidenceWriter
from ansible_collections.kaiops.runbooks.plugins.module_utils.k8s.access import client_from
from ansible_collections.kaiops.runbooks.plugins.module_utils.kai import identify as I
from ansible_collections.kaiops.runbooks.plugins.module_utils.kai.facts import SHARED_CM_ANNOTATION
from ansible_collections.kaiops.runbooks.plugins.module_utils.probes import cases as C
from ansible_collections.kaiops.runbooks.plugins.module_utils.probes import watches as W
from ansible_collections.kaiops.runbooks.plugins.module_utils.probes.client import (
    FixtureClient,
    Recorder,
)
from ansible_collections.kaiops.runbooks.plugins.module_utils.reproduce import service as S
from ansible_collections.kaiops.runbooks.plugins.module_utils.reproduce.plan import build_plan

CREATED_BY = "kaiops.dev/created-by"
RUN_LABEL = "kaiops.dev/run-id"
CASE_LABEL = "kaiops.dev/reproduce-case"
BUILD_LABEL = "kaiops.dev/reproduce-build"


def slug(version):
    return version.replace(".", "-").replace("+", "-").lower()


def namespace_name(prefix, case, version, run_id):
    return ("%s-%s-%s-%s" % (prefix, case.replace("_", "-"), slug(version), run_id[-6:].lower()))[
        :63
    ].rstrip("-")


class CaseRun:
    def __init__(self, client, params, clock=time.monotonic, wall=time.time):
        self.client = client
        self.p = params
        self.clock = clock
        # log lines carry wall times (the node's clock); the watches the controller's monotonic
        self.wall = wall
        self.build = params["build"]
        self.case = params["case"]
        self.writer = (
            EvidenceWriter(params["evidence_dir"], DEFAULT_POLICY)
            if params.get("evidence_dir")
            else None
        )
        self.folder = "cases/%s/%s%s" % (
            slug(self.build["version"]),
            self.case,
            "-" + params["phase"] if params.get("phase") else "",
        )
        self.namespace = params.get("namespace") or namespace_name(
            params["namespace_prefix"], self.case, self.build["version"], params["run_id"]
        )
        self.files = []
        self.interventions = []

    # ---------------------------------------------------------------- evidence

    def write(self, name, data):
        if self.writer is None:
            return None
        rel = self.writer.write("%s/%s" % (self.folder, name), data)
        self.files.append(rel)
        return rel

    # ---------------------------------------------------------------- cluster steps

    def create_namespace(self):
        labels = {
            CREATED_BY: "reproduce",
            RUN_LABEL: self.p["run_id"],
            CASE_LABEL: self.case,
            BUILD_LABEL: slug(self.build["version"]),
        }
        existing = self.client.read("v1", "Namespace", self.namespace)
        if existing is not None:
            theirs = (existing.get("metadata") or {}).get("labels") or {}
            if theirs.get(CREATED_BY) != "reproduce":
                raise KaiopsError(
                    "Failed to create namespace %s: it exists and was not created by reproduce; "
                    "pick another kai_reproduce_namespace_prefix" % self.namespace,
                    status=STATUS_INVALID,
                )
            return existing
        ns = self.client.create(
            {
                "apiVersion": "v1",
                "kind": "Namespace",
                "metadata": {"name": self.namespace, "labels": labels},
            }
        )
        self._wait(
            lambda: self.client.read("v1", "ServiceAccount", "default", self.namespace),
            30,
            "the default service account of %s" % self.namespace,
        )
        return ns

    def _wait(self, read, timeout, what):
        deadline = self.clock() + timeout
        while self.clock() < deadline:
            got = read()
            if got:
                return got
            time.sleep(0.1)
        raise KaiopsError("Failed to see %s within %ss" % (what, timeout))

    def start_watches(self):
        rec = Recorder(self.client)
        ns = self.namespace
        rec.watch("pods", "v1", "Pod", ns)
        rec.watch("bindrequests", "scheduling.run.ai/v1alpha2", "BindRequest", ns)
        rec.watch("configmaps", "v1", "ConfigMap", ns)
        rec.watch("events", "v1", "Event", ns)
        rec.watch("reservations", "v1", "Pod", self.p["reservation_namespace"])
        return rec

    def binder_pods(self):
        return self.client.list("v1", "Pod", self.p["kai_namespace"], label_selector="app=binder")

    def restarts(self):
        return sum(
            cs.get("restartCount", 0)
            for pod in self.binder_pods()
            for cs in (pod.get("status") or {}).get("containerStatuses") or []
        )

    def plant(self, workload):
        """Create one gated fixture pod, its planted ConfigMap, then lift the gate."""
        labels = {CREATED_BY: "reproduce", RUN_LABEL: self.p["run_id"]}
        probe = bool(workload.get("probe"))
        placement = self.p["probe_placement"] if probe else self.p["placement"]
        image = self.p["probe_image"] if probe else self.p["image"]
        pod = C.pod_manifest(
            workload["name"],
            self.namespace,
            workload["layout"],
            placement,
            image,
            probe=probe,
            labels=labels,
            gated=True,
        )
        created = self.client.create(pod)
        ann = (created.get("metadata") or {}).get("annotations") or {}
        prefix = ann.get(SHARED_CM_ANNOTATION)
        if not prefix:
            raise KaiopsError(
                "Failed to set up case %s: pod %s/%s has no %s annotation after admission; "
                "KAI's admission webhook did not mutate it (is GPU sharing on?)"
                % (self.case, self.namespace, workload["name"], SHARED_CM_ANNOTATION)
            )
        state = dict(
            workload,
            uid=created["metadata"]["uid"],
            prefix=prefix,
            configmap_name=C.configmap_name(prefix, workload["layout"]),
            fixture=workload.get("configmap"),
        )
        if workload.get("configmap"):
            cm = C.configmap_manifest(
                state["configmap_name"], self.namespace, created, workload["configmap"]
            )
            self.client.create(cm)
            stored = self.client.read("v1", "ConfigMap", state["configmap_name"], self.namespace)
            state["stored"] = {
                "manifest_data": cm.get("data", "omitted"),
                "stored_has_data_key": "data" in stored,
                "stored_data": stored.get("data"),
                "object": stored,
            }
        state["submitted_t"] = self.clock()
        state["submitted_wall"] = self.wall()
        self.client.json_patch(
            "v1",
            "Pod",
            workload["name"],
            self.namespace,
            [{"op": "remove", "path": "/spec/schedulingGates"}],
        )
        return state

    def done(self, rec, states, expect):
        pods = rec.objects("pods")
        brs = rec.objects("bindrequests")
        for st in states:
            hist = W.pod_history(pods, st["name"])
            if expect == "reproduces":
                nil = [
                    a
                    for a in W.attempts(brs, st["name"])
                    if a["failed_at"] and C.NIL_MAP in (a["reason"] or "")
                ]
                if len(nil) < 2 and not hist["bound"]:
                    return False
            elif st.get("probe"):
                if hist["succeeded"] is None and hist["failed"] is None:
                    return False
            elif hist["bound"] is None or hist["running"] is None:
                return False
        return True

    def follow(self, rec, states, expect, window):
        deadline = self.clock() + window
        while self.clock() < deadline:
            if self.done(rec, states, expect):
                return False
            time.sleep(0.2)
        return True  # timed out: stays in every denominator

    # ---------------------------------------------------------------- the case

    def _observing(self):
        return self.case == "recovery" and self.p.get("phase") == "observe"

    def _expectation(self):
        """(expect, declared): the case's expectation; recovery's observe phase expects binds."""
        expect = C.expectation(self.case, self.build["exposed"])
        declared = C.declared(self.case, self.build)
        if self._observing():
            expect = "binds"
            declared = dict(declared, expect="binds")
        return expect, declared

    def _observe_planted(self, rec, states, opened):
        """Recovery's observe phase: the pods the plant phase left, followed from ``opened``."""
        keep = ("name", "uid", "prefix", "configmap_name", "fixture", "layout", "configmap")
        planted = [dict((k, w.get(k)) for k in keep) for w in self.p.get("workloads") or []]
        states.extend(planted)
        for st in states:
            # the window starts with the patched build
            st["submitted_t"], st["submitted_wall"] = opened
        return self.follow(rec, states, "binds", self.p["window_s"])

    def _open_window(self, extra, opened, restarts):
        """Recovery's observe phase started before the switch of build (``switch_to``): the
        window opens once KAI runs the next build rolled out, read as kai_identify reads it, so
        the watches already hold what KAI did to the stuck work during the switch (a bind, or a
        deletion: CONTRACT.md, 'A retried bind that loses its reservation pod'). Returns the
        window's opening and the binder's restarts then (the old build's pods are gone)."""
        version = self.p.get("switch_to")
        if not version:
            return opened, restarts
        # a failed read mid-upgrade is a reason to read again, not the end of the case
        identity, took, ok, reasons = I.wait_rolled_out(
            self.client,
            self.p["kai_namespace"],
            version,
            self.p["switch_timeout_s"],
            read_errors_retried=True,
        )
        if not self.build.get("implementation"):
            self.build["implementation"] = identity.get("implementation")
        extra["switch"] = {"to": version, "seconds": took, "rolled_out": ok, "reasons": reasons}
        return (self.clock(), self.wall()), self.restarts()

    def _case_workloads(self):
        if self.case == "concurrency":
            return [
                {"name": "burst-%02d" % i, "configmap": None, "layout": "single"}
                for i in range(self.p["concurrency"])
            ]
        return C.CASES[self.case]["workloads"]

    def _plant_and_follow(self, rec, states, expect, extra):
        """Plant the case's workloads (one after another where a workload says so) and follow
        them; appends to ``states`` and ``extra`` as it goes, so a failure leaves what was done."""
        for w in self._case_workloads():
            if w.get("after"):
                first = next(s for s in states if s["name"] == w["after"])
                self.follow(rec, [first], "binds", self.p["window_s"])
            states.append(self.plant(w))
        window = self.p["window_s"]
        timed_out = self.follow(
            rec, states, expect if self.case != "recovery" else "reproduces", window
        )
        if C.CASES[self.case].get("rerun"):
            extra.update(self.rerun(rec, states))
        return timed_out

    def _close_watches(self, rec, states, extra, restarts_before):
        """The binder's restarts since the start, the last reads, the watches stopped and kept."""
        restarts_after = self.restarts()
        extra["binder_restarts_delta"] = restarts_after - restarts_before
        extra["probe"] = any(s.get("probe") for s in states)
        final = self.collect(rec, states)
        rec.stop()
        self.write_watches(rec)
        return final

    def _case_extra(self, obs, states):
        """Figures only one case's assertions need: repeat's GPU groups, nil_data's variants."""
        extra = {}
        if self.case == "repeat":
            first = [w for w in obs if not w["name"].endswith("-again")]
            again = [w for w in obs if w["name"].endswith("-again")]
            groups = [w["gpu_group"] for w in first if w["gpu_group"]]
            extra["groups"] = groups
            extra["groups_again"] = [w["gpu_group"] for w in again if w["gpu_group"]]
        if self.case == "nil_data":
            stored = [s.get("stored") or {} for s in states]
            extra["variants_identical"] = (
                len(set(str((x.get("stored_has_data_key"), x.get("stored_data"))) for x in stored))
                == 1
            )
        return extra

    def _checks(self, expect, obs, extra, timed_out):
        """The case's assertions, the window's own, and only the plant phase's for recovery."""
        checks = S.assertions(self.case, expect, obs, extra)
        if timed_out:
            checks.append(
                S.check(
                    "within the window",
                    expect == "reproduces" and all(w["failed_attempts"] for w in obs),
                    "timed out after %ss" % self.p["window_s"],
                    "every workload reached its outcome",
                )
            )
        switch = extra.get("switch")
        if switch:
            checks.append(
                S.check(
                    "%s rolled out" % switch["to"],
                    switch["rolled_out"],
                    "%ss" % switch["seconds"]
                    + ("" if switch["rolled_out"] else ": " + "; ".join(switch["reasons"])),
                    "within %ss" % self.p["switch_timeout_s"],
                )
            )
        if self.case == "recovery" and self.p.get("phase") != "observe":
            # the plant phase only proves the work is stuck; the observe phase is the case
            checks = [
                c
                for c in checks
                if "nil-map" in c["name"]
                or c["name"] == "binder_not_restarted"
                or "no node" in c["name"]
            ]
        return checks

    def _result(self, started, declared, states, final, judged, rec):
        """The case's result; ``judged`` holds its observations, assertions, extra and timeout."""
        obs, checks, extra = judged["observations"], judged["assertions"], judged["extra"]
        return {
            "duration_s": round(self.clock() - started, 3),
            "reservation_held_s": self.reservation_held(final, obs, started, self.clock()),
            "case": self.case,
            "phase": self.p.get("phase"),
            "build": self.build,
            "namespace": self.namespace,
            "declared": declared,
            "observations": obs,
            "assertions": checks,
            "verdict": S.verdict(checks),
            "metrics": S.case_metrics(obs),
            "stale_state": S.stale_state(
                final["pods_now"], final["configmaps_now"], final["reservations_now"]
            )
            if self.build["exposed"] or self.case == "recovery"
            else [],
            "extra": dict((k, v) for k, v in extra.items() if k != "probe"),
            "timed_out": judged["timed_out"],
            "watch_errors": rec.errors,
            "interventions": self.interventions,
            "workloads": [
                dict((k, v) for k, v in s.items() if k not in ("stored",)) for s in states
            ],
            "timeline": self.timeline(final, states),
        }

    def _remove_namespace(self, result):
        """Delete the case's namespace unless it is kept; a slow deletion is a warning."""
        kept = self.p.get("keep_namespaces") or (
            self.case == "recovery" and self.p.get("phase") != "observe"
        )
        if not kept:
            # Gone before the next case: a terminating pod still holds its GPU share, and the
            # next case's pods would pack around it.
            self.client.delete_namespace(self.namespace)
            try:
                self._wait(
                    lambda: self.client.read("v1", "Namespace", self.namespace) is None,
                    120,
                    "namespace %s to be deleted" % self.namespace,
                )
            except KaiopsError as exc:
                result["warnings"] = [str(exc)]
        result["namespace_kept"] = bool(kept)

    def run(self):
        expect, declared = self._expectation()
        self.write("expectation.json", declared)  # before anything is planted
        started = self.clock()
        self.create_namespace()
        restarts_before = self.restarts()
        # The observe phase's window opens before the watches' first LIST, on their clock: what
        # that LIST already shows (a pod bound meanwhile) happened before it, and is not timed.
        # Started before a switch of build, it opens later, once the build runs (_open_window).
        opened = (self.clock(), self.wall())
        rec = self.start_watches()
        states = []
        timed_out = False
        extra = {}
        try:
            if self._observing():
                opened, restarts_before = self._open_window(extra, opened, restarts_before)
                # the case's duration (its cost window) is the window's; the switch is extra's
                started = opened[0]
                timed_out = self._observe_planted(rec, states, opened)
            else:
                timed_out = self._plant_and_follow(rec, states, expect, extra)
        finally:
            final = self._close_watches(rec, states, extra, restarts_before)
        obs = [S.workload_observation(final, s) for s in states]
        extra.update(self._case_extra(obs, states))
        judged = {
            "observations": obs,
            "assertions": self._checks(expect, obs, extra, timed_out),
            "extra": extra,
            "timed_out": timed_out,
        }
        result = self._result(started, declared, states, final, judged, rec)
        self.write("observations.json", obs)
        self.write("assertions.json", judged["assertions"])
        self.write("timeline.json", result["timeline"])
        self._remove_namespace(result)
        result["files"] = list(self.files)
        return result

    def reservation_held(self, final, obs, start, end):
        """Seconds of whole GPUs held by reservation pods of this case's failed attempts, within
        the case (from ``start``: recovery/observe's watches begin before its window)."""
        failed_groups = set(
            g
            for w in obs
            for a in w["attempts"]
            if a["failed_at"] and not a.get("before_window")
            for g in a["gpu_groups"]
        )
        spans = {}
        for r in final["reservations"]:
            meta = r["object"].get("metadata") or {}
            if (meta.get("labels") or {}).get("runai-gpu-group") not in failed_groups:
                continue
            span = spans.setdefault(meta.get("uid"), [r["t"], end])
            if r["type"] == "DELETED":
                span[1] = r["t"]
        return round(sum(max(0.0, b - max(a, start)) for a, b in spans.values()), 3)

    def rerun(self, rec, states):
        """Delete the case's pods, wait for their reservation to go, then run it again."""
        first_groups = set()
        configmaps = self.client.list("v1", "ConfigMap", self.namespace)
        reservations = self.client.list("v1", "Pod", self.p["reservation_namespace"])
        for st in states:
            st["configmaps_after"] = configmaps  # read before the pods (their owners) go
            pod = self.client.read("v1", "Pod", st["name"], self.namespace)
            group = ((pod or {}).get("metadata", {}).get("labels") or {}).get("runai-gpu-group")
            if group:
                first_groups.add(group)
            self.client.request(
                "DELETE",
                self.client.collection_path("v1", "Pod", self.namespace, st["name"]),
                "pod %s/%s" % (self.namespace, st["name"]),
            )

        held = [
            r
            for r in reservations
            if (r["metadata"].get("labels") or {}).get("runai-gpu-group") in first_groups
        ]

        def gone():
            res = self.client.list("v1", "Pod", self.p["reservation_namespace"])
            left = [
                r
                for r in res
                if (r["metadata"].get("labels") or {}).get("runai-gpu-group") in first_groups
            ]
            return not left

        try:
            self._wait(gone, self.p["window_s"], "the reservation pods of the first run to go")
            stale = 0
        except KaiopsError:
            res = self.client.list("v1", "Pod", self.p["reservation_namespace"])
            stale = len(
                [
                    r
                    for r in res
                    if (r["metadata"].get("labels") or {}).get("runai-gpu-group") in first_groups
                ]
            )
        again = [
            self.plant(dict(w, name=w["name"] + "-again")) for w in C.CASES[self.case]["workloads"]
        ]
        self.follow(rec, again, "binds", self.p["window_s"])
        states.extend(again)
        return {
            "stale_reservations_after_rerun": stale,
            "first_groups": sorted(first_groups),
            "reservation_pods_for_group": len(held),
        }

    def collect(self, rec, states):
        """The watches' records plus a last read of what is there now, and the binder's logs."""
        now = {
            "pods_now": self.client.list("v1", "Pod", self.namespace),
            "configmaps_now": self.client.list("v1", "ConfigMap", self.namespace),
            "reservations_now": self.client.list("v1", "Pod", self.p["reservation_namespace"]),
        }
        for st in states:
            st.setdefault("configmaps_after", now["configmaps_now"])
            st["events"] = self._events(rec, st["name"])
        out = dict(
            (k, list(rec.objects(k)))
            for k in ("pods", "bindrequests", "configmaps", "events", "reservations")
        )
        out.update(now)
        self.write("configmaps-after.json", now["configmaps_now"])
        self.write("reservation-pods-after.json", now["reservations_now"])
        out["logs"] = {}
        for pod in self.binder_pods():
            name = pod["metadata"]["name"]
            current = self.client.logs(self.p["kai_namespace"], name)
            previous = self.client.logs(self.p["kai_namespace"], name, previous=True)
            self.write("binder-%s.log" % name, current or "(empty)\n")
            self.write("binder-%s-previous.log" % name, previous or "(no previous container)\n")
            out["logs"]["binder %s" % name] = (previous or "") + (current or "")
        for st in states:
            if st.get("probe"):
                text = self.client.logs(self.namespace, st["name"])
                self.write("probe-%s.log" % st["name"], text or "(empty)\n")
                out["logs"]["probe %s" % st["name"]] = text or ""
        return out

    def _events(self, rec, name):
        out = {}
        for r in rec.objects("events"):
            ev = r["object"]
            if (ev.get("involvedObject") or {}).get("name") != name:
                continue
            key = "%s %s" % (ev.get("type"), ev.get("reason"))
            out[key] = max(out.get(key, 0), ev.get("count") or 1)
        return out

    def write_watches(self, rec):
        for key in ("pods", "bindrequests", "configmaps", "events", "reservations"):
            lines = []
            for r in rec.objects(key):
                lines.append(
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
                )
            self.write("watch-%s.jsonl" % key, "\n".join(lines) + ("\n" if lines else ""))

    @staticmethod
    def _attempt_steps(final, st, t0):
        """Each BindRequest of the workload: created, and Failed or Succeeded."""
        steps = []
        for a in W.attempts(final["bindrequests"], st["name"]):
            initial = a.get("initial") or []
            steps.append(
                S.timed_step(
                    a["first_seen"],
                    t0,
                    "BindRequest %s created (groups %s)" % (a["uid"][:8], a["gpu_groups"]),
                    "first_seen" in initial,
                )
            )
            if a["failed_at"]:
                steps.append(
                    S.timed_step(
                        a["failed_at"],
                        t0,
                        "BindRequest %s Failed: %s" % (a["uid"][:8], a["reason"]),
                        "failed_at" in initial,
                    )
                )
            if a["succeeded_at"]:
                steps.append(
                    S.timed_step(
                        a["succeeded_at"],
                        t0,
                        "BindRequest %s Succeeded" % a["uid"][:8],
                        "succeeded_at" in initial,
                    )
                )
        return steps

    @staticmethod
    def _log_steps(final, st):
        """The workload's probe log and the binder log lines that name it, on the node's clock."""
        steps = []
        if st.get("submitted_wall") is None:
            return steps
        for source, text in sorted((final.get("logs") or {}).items()):
            if source.startswith("probe "):
                if source == "probe %s" % st["name"]:
                    steps += S.log_steps(text, st["submitted_wall"], "probe log")
            else:  # a binder log: the lines about this workload
                steps += S.log_steps(
                    text, st["submitted_wall"], "%s log" % source, mentions=st["name"]
                )
        return steps

    @staticmethod
    def _pod_steps(final, st, t0):
        hist = W.pod_history(final["pods"], st["name"])
        steps = []
        for key, what in (
            ("bound", "pod has a node (bound)"),
            ("running", "container running"),
            ("succeeded", "completed"),
        ):
            if hist[key] is not None:
                steps.append(S.timed_step(hist[key], t0, what, key in hist["initial"]))
        return steps

    def timeline(self, final, states):
        """Per workload: submission, BindRequests, reservation, bind, start, completion.

        Seconds from the submission stamp, all on the controller's monotonic clock (the stamp
        and the watches' records); a step the watch's starting LIST already showed, or one
        before the stamp, has no time (``s`` None, a ``note`` says why) and comes first."""
        out = []
        for st in states[:1] + [s for s in states[1:] if s.get("probe")]:
            t0 = st.get("submitted_t")
            if t0 is None:
                continue
            steps = [{"s": 0.0, "what": "gate lifted (submitted to KAI)"}]
            steps += self._attempt_steps(final, st, t0)
            for r in final["reservations"]:
                if r["type"] == "ADDED":
                    steps.append(
                        S.timed_step(
                            r["t"],
                            t0,
                            "reservation pod %s created" % r["object"]["metadata"]["name"],
                        )
                    )
            steps += self._log_steps(final, st)
            steps += self._pod_steps(final, st, t0)
            out.append(
                {
                    "workload": st["name"],
                    "uid": st.get("uid"),
                    "steps": sorted(steps, key=S.step_order),
                }
            )
        return out


def run_case(module):
    params = dict(module.params)
    if params["case"] not in C.CASES:
        raise KaiopsError(
            "Failed to run case %s: unknown; known cases: %s"
            % (params["case"], ", ".join(C.CASES)),
            status=STATUS_INVALID,
        )
    if module.check_mode:
        module.exit_json(
            changed=False, skipped=True, msg="reproduce plants fixtures; nothing runs under --check"
        )
    client = client_from(params, FixtureClient.from_options)
    result = CaseRun(client, params).run()
    module.exit_json(changed=True, **result)


# ------------------------------------------------------------------ the other modules


def run_plan(module):
    import os

    plan = build_plan(module.params, os.path.exists)
    module.exit_json(changed=False, plan=plan)


def run_report(module):
    from ansible_collections.kaiops.runbooks.plugins.module_utils.bundle import report as B
    from ansible_collections.kaiops.runbooks.plugins.module_utils.reproduce import report as R

    p = module.params
    plan = p["plan"] or {}
    builds = [
        dict(b, identity=(p.get("identities") or {}).get(b["version"]))
        for b in plan.get("builds") or []
    ]
    results = [r for r in p["results"] if r and not r.get("skipped")]
    verdict, reasons = R.decide(builds, results, R.expected_cases(plan))
    if not builds:
        verdict, reasons = "inconclusive", ["the run was not planned (bad options)"]
    doc = {
        "kind": "reproduce",
        "kai_version": R.target_version(builds),
        "generated_at": B.stamp(),
        "run_id": p["run_id"],
        "cluster": p["cluster"],
        "verdict": verdict,
        "reasons": reasons,
        "override": p.get("override_reason"),
        "builds": builds,
        "cases": results,
        "interventions": [i for r in results for i in r.get("interventions") or []],
        "leftovers_removed": p.get("leftovers") or [],
        "provenance": p.get("provenance") or {},
        "cost": R.cost_section(results, p.get("gpus") or 1, p.get("rate") or 0),
    }
    files = B.report_files("report", doc, p.get("template_dir"), R.render_markdown, R.render_junit)
    folder, written = B.write_report(module, files)
    module.exit_json(
        changed=bool(written),
        verdict=verdict,
        reasons=reasons,
        kai_version=doc["kai_version"],
        files=written,
        evidence_dir=folder,
    )
