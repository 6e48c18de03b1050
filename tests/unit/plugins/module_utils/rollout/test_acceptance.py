"""The verification's gates for the upgrade failures KAI users hit (issue 22): the gang probe
(NVIDIA/aicr #2636), the burst probe and the portions per device (KAI-Scheduler #2153), and the
API refusals of KAI's components (#1536, #1751). Each gate fails on the fault's observable
behaviour, passes on a healthy fixture, and fails on "no data"."""

import datetime

from conftest import THRESHOLDS
from fakeapi import FakeClient

from ansible_collections.kaiops.runbooks.plugins.module_utils.k8s.objects import parse_time
from ansible_collections.kaiops.runbooks.plugins.module_utils.rollout import acceptance as A
from ansible_collections.kaiops.runbooks.plugins.module_utils.rollout import change_runner as CR
from ansible_collections.kaiops.runbooks.plugins.module_utils.rollout import portions as PT
from ansible_collections.kaiops.runbooks.plugins.module_utils.rollout import probes as P
from ansible_collections.kaiops.runbooks.plugins.module_utils.scan.pending import REFUSED

NS = "kaiops-rollout-verify-r1"
RES = "kai-resource-reservation"


def pod(name, node=None, group=None, phase="Pending", ns=NS, fraction="0.5", deleting=False):
    meta = {"name": name, "namespace": ns, "labels": {}, "annotations": {}}
    if group:
        meta["labels"]["runai-gpu-group"] = group
    if fraction is not None:
        meta["annotations"]["gpu-fraction"] = fraction
    if deleting:
        meta["deletionTimestamp"] = "2026-12-06T00:00:00Z"
    spec = {"nodeName": node} if node else {}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": meta,
        "spec": spec,
        "status": {"phase": phase},
    }


def rec(t, obj, kind="MODIFIED"):
    return {"t": t, "at": None, "type": kind, "object": obj}


def reservation(name, group, node, device):
    obj = pod(name, node, group, "Running", ns=RES, fraction=None)
    obj["metadata"]["annotations"]["run.ai/reserve_for_gpu_index"] = device
    return obj


def bindrequest(pod_name, portion, ns=NS):
    return {
        "apiVersion": "scheduling.run.ai/v1alpha2",
        "kind": "BindRequest",
        "metadata": {"name": "br-" + pod_name, "namespace": ns},
        "spec": {"podName": pod_name, "receivedGPU": {"count": 1, "portion": portion}},
    }


# ---------------------------------------------------------------- the probes' shapes


def test_a_gang_is_a_podgroup_of_two_pods_that_name_it_where_the_other_probes_run():
    gangs = P.gang_workloads(1, on_kwok=True)
    assert [w["name"] for w in gangs] == ["probe-gang-00-0", "probe-gang-00-1"]
    assert {w["gang"] for w in gangs} == {"probe-gang-00"} and {w["kind"] for w in gangs} == {
        "kwok"
    }
    pod_ = P.manifest(gangs[0], NS, "img", {"a": "b"})
    assert pod_["metadata"]["annotations"] == {
        "gpu-fraction": "0.5",
        "pod-group-name": "probe-gang-00",
    }
    assert pod_["spec"]["nodeSelector"] == {"type": "kwok"}
    pg = P.pod_group_manifest("probe-gang-00", NS, {"a": "b"})
    assert (pg["apiVersion"], pg["kind"]) == ("scheduling.run.ai/v2alpha2", "PodGroup")
    assert pg["spec"] == {"minMember": 2, "queue": "default-queue"}
    # without KWOK probes the gang runs gpuprobe on the real GPU nodes
    real = P.gang_workloads(1, on_kwok=False, real_placement={"spec": {"x": 1}})
    assert {w["kind"] for w in real} == {"real"} and real[0]["placement"] == {"spec": {"x": 1}}
    assert P.gang_workloads(0, on_kwok=True) == []


def test_the_burst_goes_to_the_kwok_node_with_the_most_free_gpus_or_nowhere():
    def node(name, gpus, kwok=True):
        return {
            "metadata": {"name": name, "labels": {"type": "kwok"} if kwok else {}},
            "status": {"allocatable": {"nvidia.com/gpu": str(gpus)}},
        }

    def holder(node_name, gpus=1, phase="Running"):
        return {
            "metadata": {"name": "r", "namespace": RES},
            "spec": {
                "nodeName": node_name,
                "containers": [{"resources": {"requests": {"nvidia.com/gpu": str(gpus)}}}],
            },
            "status": {"phase": phase},
        }

    nodes = [node("kwok-b", 8), node("kwok-a", 8), node("kwok-c", 4), node("real", 16, False)]
    assert P.burst_node(nodes, []) == ("kwok-a", 8, 8)
    # the lab's scheduler packs the other probes onto one node: the burst goes elsewhere
    held = [holder("kwok-a", 8), holder("kwok-b", 1), holder("kwok-b", 1, phase="Succeeded")]
    assert P.burst_node(nodes, held) == ("kwok-b", 8, 7)
    assert P.burst_node([node("real", 16, False)], []) == (None, 0, 0)
    burst = P.burst_workloads(3, "kwok-a")
    assert len(burst) == 3 and {w["set"] for w in burst} == {"burst"}
    spec = P.manifest(burst[0], NS, "img", {})["spec"]
    assert spec["nodeSelector"] == {"kubernetes.io/hostname": "kwok-a"}


# ---------------------------------------------------------------- portions per device


def test_two_halves_on_one_device_are_a_whole_gpu_and_pass():
    recs = [rec(1, pod("a", "n", "g1")), rec(2, pod("b", "n", "g1"))]
    out = PT.device_portions(recs, [], [reservation("r1", "g1", "n", "GPU-1")])
    assert out["max"] == 1.0 and out["over"] == [] and out["max_device"] == "n/GPU-1"
    assert out["pods"] == 2 and out["groups"] == 1


def test_a_burst_packed_into_one_group_is_over_one_gpu():
    # KAI-Scheduler #2153 as the stand-in's burst-overpack plays it: 4 x 0.5 share one group
    recs = [rec(t, pod("p%d" % t, "n", "g1")) for t in range(4)]
    brs = [rec(0, bindrequest("p%d" % t, "0.50")) for t in range(4)]
    out = PT.device_portions(recs, brs, [reservation("r1", "g1", "n", "GPU-1")])
    assert out["max"] == 2.0
    (over,) = out["over"]
    assert over["device"] == "n/GPU-1" and over["portion"] == 2.0
    problem = A._portions_problem({"device_portions": out}, {})
    assert "device n/GPU-1 was given 2.0 of a GPU at once (p0, p1, p2, p3), above 1.0" in problem


def test_two_groups_on_one_device_add_up():
    recs = [rec(1, pod("a", "n", "g1")), rec(2, pod("b", "n", "g2", fraction="0.75"))]
    reservations = [reservation("r1", "g1", "n", "GPU-1"), reservation("r2", "g2", "n", "GPU-1")]
    out = PT.device_portions(recs, [], reservations)
    assert out["max"] == 1.25 and out["over"][0]["device"] == "n/GPU-1"


def test_a_pod_that_ended_gave_its_portion_back():
    recs = [
        rec(1, pod("a", "n", "g1")),
        rec(2, pod("b", "n", "g1")),
        rec(3, pod("a", "n", "g1", phase="Succeeded")),
        rec(4, pod("c", "n", "g1")),
    ]
    out = PT.device_portions(recs, [], [])
    assert out["max"] == 1.0 and out["over"] == []  # never more than two at once


def test_other_workloads_of_the_probes_groups_count_at_the_end():
    recs = [rec(1, pod("a", "n", "g1"))]
    others = [pod("team", "n", "g1", "Running", ns="team-a", fraction="0.75")]
    out = PT.device_portions(recs, [], [], others)
    assert out["max"] == 1.25 and "team-a/team" in out["over"][0]["pods"]


def test_a_portion_that_cannot_be_read_is_no_data():
    recs = [rec(1, pod("a", "n", "g1", fraction=None))]
    out = PT.device_portions(recs, [], [])
    assert out["unknown"] == ["a"]
    assert "no data (portion unreadable for a)" in A._portions_problem({"device_portions": out}, {})
    none = PT.device_portions([rec(1, pod("a"))], [], [])  # never bound: nothing held a GPU
    assert none["pods"] == 0 and none["max"] is None
    assert "no data" in A._portions_problem({"device_portions": none}, {})


def test_a_group_with_two_reservation_pods_at_once_is_a_duplicate():
    # KAI-Scheduler #1673 on KWOK nodes: the second reservation pod shows, nothing stays Pending,
    # and both go with their group before the window's end
    first, second = reservation("r1", "g1", "n", "0"), reservation("r2", "g1", "n", "1")
    first["metadata"]["uid"], second["metadata"]["uid"] = "u1", "u2"
    recs = [rec(1, first, "ADDED"), rec(1.2, second, "ADDED")]
    recs += [rec(9, first, "DELETED"), rec(9, second, "DELETED")]
    other = reservation("r3", "g2", "n", "2")
    recs.append(rec(2, other, "ADDED"))
    assert PT.duplicate_reservations(recs) == [{"group": "g1", "pods": ["r1", "r2"]}]
    # both older than the change: the recovery scan's, not this window's
    assert PT.duplicate_reservations(recs, before={"u1", "u2"}) == []
    assert PT.duplicate_reservations(recs, before={"u1"}) != []


def test_a_group_whose_reservation_pod_was_replaced_has_no_duplicate():
    # admission-failure (#848): the reservation pod fails, is deleted, a new one comes: one at
    # a time is no duplicate
    first, second = reservation("r1", "g1", "n", "0"), reservation("r2", "g1", "n", "0")
    recs = [rec(1, first, "ADDED"), rec(41, first, "DELETED"), rec(42, second, "ADDED")]
    assert PT.duplicate_reservations(recs) == []
    failed = reservation("r3", "g2", "n", "1")
    failed["status"]["phase"] = "Failed"
    recs = [rec(1, failed, "ADDED"), rec(2, reservation("r4", "g2", "n", "1"), "ADDED")]
    assert PT.duplicate_reservations(recs) == []


# ---------------------------------------------------------------- API refusals


LOG_401 = (
    '2026-12-06T10:00:05.1Z E1206 reflector.go:158] "Failed to watch" '
    'err="failed to list *v1.Pod: Unauthorized"\n'
)


def test_refused_lines_read_only_the_window():
    since = datetime.datetime(2026, 12, 6, 10, 0, 0, tzinfo=datetime.timezone.utc).timestamp()
    before = LOG_401.replace("10:00:05", "09:59:50")
    assert P.refused_lines(LOG_401, since, REFUSED, parse_time) == [LOG_401.strip()]
    assert P.refused_lines(before, since, REFUSED, parse_time) == []
    quiet = "2026-12-06T10:00:05Z I1206 binder.go:10] bound pod\n"
    assert P.refused_lines(quiet, since, REFUSED, parse_time) == []


class LoggingClient(FakeClient):
    def __init__(self, logs_by_pod, unreadable=(), **kw):
        super().__init__(**kw)
        del self.logs  # FakeClient keeps a dict under that name; the real client has a method
        self.pod_logs, self.unreadable = logs_by_pod, set(unreadable)

    def logs(self, namespace, pod_name, container=None, previous=False, tail=2000):
        from ansible_collections.kaiops.runbooks.plugins.module_utils.errors import KaiopsError

        if pod_name in self.unreadable:
            raise KaiopsError("Failed to read the log of %s: HTTP 500" % pod_name)
        return self.pod_logs.get(pod_name, "")


def probe_run(client):
    params = {
        "cluster": "lab",
        "phase": "verify",
        "run_id": "r1",
        "kai_namespace": "kai-scheduler",
        "reservation_namespace": RES,
    }
    return CR.ProbeRun(client, params)


def kai_pods(*names):
    return [pod(n, "n", None, "Running", ns="kai-scheduler", fraction=None) for n in names]


SINCE = datetime.datetime(2026, 12, 6, 10, 0, 0, tzinfo=datetime.timezone.utc).timestamp()


def test_a_binder_answered_401_while_ready_fails_auth_errors():
    client = LoggingClient({"binder-1": LOG_401}, objects=kai_pods("binder-1", "admission-1"))
    auth = probe_run(client)._auth_refusals(SINCE)
    assert auth["count"] == 1 and auth["pods_read"] == 2
    assert auth["log_lines"][0]["pod"] == "binder-1"
    gate = {g["gate"]: g for g in A.verify_gates("verify", {"auth_errors": auth}, THRESHOLDS)}
    assert not gate["auth_errors"]["passed"]
    assert (
        "binder-1" in gate["auth_errors"]["message"]
        and "Unauthorized" in (gate["auth_errors"]["message"])
    )


def test_a_refusal_event_in_the_kai_namespace_counts():
    event = {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"name": "e1", "namespace": "kai-scheduler"},
        "involvedObject": {"name": "pod-grouper-1"},
        "lastTimestamp": "2026-12-06T10:00:09Z",
        "message": 'pods is forbidden: User "system:serviceaccount:kai-scheduler:x"',
    }
    old = dict(
        event,
        lastTimestamp="2026-12-06T09:00:00Z",
        metadata={"name": "e0", "namespace": "kai-scheduler"},
    )
    client = LoggingClient({}, objects=kai_pods("pod-grouper-1") + [event, old])
    auth = probe_run(client)._auth_refusals(SINCE)
    assert auth["count"] == 1 and auth["events"][0]["object"] == "pod-grouper-1"


def test_a_log_that_cannot_be_read_is_no_data_and_fails():
    client = LoggingClient({}, unreadable=["binder-1"], objects=kai_pods("binder-1"))
    auth = probe_run(client)._auth_refusals(SINCE)
    assert auth["count"] == 0 and auth["unreadable"]
    assert "no data (logs not read: binder-1" in A._auth_problem({"auth_errors": auth}, {})
    assert "no data" in A._auth_problem({"auth_errors": {"count": 0, "pods_read": 0}}, {})


def test_healthy_components_pass_auth_errors():
    quiet = "2026-12-06T10:00:05Z I1206 binder.go:10] bound pod p\n"
    client = LoggingClient({"binder-1": quiet}, objects=kai_pods("binder-1"))
    assert A._auth_problem({"auth_errors": probe_run(client)._auth_refusals(SINCE)}, {}) is None


# ------------------------------------------------ the gates as the report reads them


def healthy(**over):
    f = {
        "window_s": 60,
        "gangs": {
            "requested": 1,
            "count": 1,
            "bound": 1,
            "members": 2,
            "members_bound": 2,
            "size": 2,
        },
        "burst": {"requested": 0, "node": None, "of": 0, "bound": 0},
        "device_portions": {"max": 1.0, "pods": 4, "over": [], "unknown": [], "limit": 1.0},
        "auth_errors": {"count": 0, "pods_read": 7, "unreadable": []},
    }
    f.update(over)
    return f


def field_gates(figures):
    names = ("gang_bound", "burst_bound", "device_portions", "auth_errors")
    return {
        g["gate"]: g for g in A.verify_gates("verify", figures, THRESHOLDS) if g["gate"] in names
    }


def test_healthy_figures_pass_and_a_burst_turned_off_has_no_gate():
    gates = field_gates(healthy())
    assert sorted(gates) == ["auth_errors", "device_portions", "gang_bound"]
    assert all(g["passed"] for g in gates.values())


def test_a_gang_never_scheduled_fails_gang_bound():
    # NVIDIA/aicr #2636 as the stand-in's gang-broken plays it: the gang's pods stay Pending
    stuck = healthy(gangs=dict(healthy()["gangs"], bound=0, members_bound=0))
    gate = field_gates(stuck)["gang_bound"]
    assert not gate["passed"] and gate["figure"] == 0
    assert gate["message"] == (
        "0 of 1 gangs (PodGroup minMember 2) had every pod bound within 60 s (0 of 2 pods "
        "bound): KAI did not schedule the gang"
    )
    half = healthy(gangs=dict(healthy()["gangs"], bound=0, members_bound=1))
    assert not field_gates(half)["gang_bound"]["passed"]  # all or nothing


def test_gang_figures_count_a_gang_bound_only_when_every_member_is():
    rows = [
        {"gang": "g0", "submit_to_bound_s": 0.5},
        {"gang": "g0", "submit_to_bound_s": 0.6},
        {"gang": "g1", "submit_to_bound_s": 0.5},
        {"gang": "g1", "submit_to_bound_s": None},
    ]
    g = P.gang_figures(rows, 2)
    assert (g["count"], g["bound"], g["members_bound"]) == (2, 1, 3)


def test_a_burst_with_pods_left_pending_fails_burst_bound_and_no_node_is_no_data():
    burst = {"requested": 16, "node": "kwok-a", "node_gpus": 8, "of": 16, "bound": 12}
    gate = field_gates(healthy(burst=burst))["burst_bound"]
    assert not gate["passed"] and gate["message"].startswith("12 of 16 burst pods")
    full = field_gates(healthy(burst=dict(burst, node_free_gpus=6)))["burst_bound"]
    assert not full["passed"] and "no data (kwok-a had 6 free GPUs" in full["message"]
    nowhere = field_gates(healthy(burst={"requested": 16, "node": None}))["burst_bound"]
    assert not nowhere["passed"] and "no data" in nowhere["message"]
    assert field_gates(healthy(burst=dict(burst, bound=16)))["burst_bound"]["passed"]


def test_figures_keep_the_probes_apart_from_the_gang_and_the_burst():
    def state(name, set_=None, gang=None):
        return {"name": name, "kind": "kwok", "set": set_, "gang": gang, "submitted_t": 0.0}

    states = [state("probe-kwok-00"), state("g-0", "gang", "g"), state("g-1", "gang", "g")]
    records = {"pods": [rec(0.4, pod("probe-kwok-00", "n", "x", "Running"))], "bindrequests": []}
    f = P.figures(records, states, 30, True, {"gangs_requested": 1})
    assert f["probes"] == 1 and f["completion"]["rate"] == 1.0  # the gang is not a probe
    assert (f["gangs"]["requested"], f["gangs"]["bound"], f["gangs"]["members"]) == (1, 0, 2)
    assert f["burst"]["requested"] == 0
