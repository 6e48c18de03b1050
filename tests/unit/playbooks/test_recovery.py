"""playbooks/recovery.yml against a fake API server that serves KAI's BindRequests.

The fake here also answers DELETE. At each DELETE it reads the run's interventions.jsonl, so
the test sees whether the object was recorded before the request reached the API server. After
the orphan ConfigMap is deleted it binds the pod, as a fixed binder would, so recovery is
observed; nothing is called recovered that the fake did not change.
"""

import copy
import glob
import json
import os

import fakeapi
from plugins.module_utils.recovery.test_service import CLUSTER

from playbooks.test_gpu_access import DiscoveringFakeAPI, run_playbook
from playbooks.test_inventory import sha256sum_ok

KAI_SERVED = ["scheduling.run.ai/v1alpha2"]
BIND_NAMESPACE = "team-a"


class WritableFakeAPI(DiscoveringFakeAPI):
    """GET as FakeAPI, plus DELETE of one named object with UID/resourceVersion preconditions."""

    def __init__(self, objects, evidence_root, bind_after_cm_delete=True, **kw):
        super().__init__(objects=objects, served=KAI_SERVED, **kw)
        self.evidence_root = evidence_root
        self.bind_after_cm_delete = bind_after_cm_delete
        self.deletes = []

    def handle_write(self, method, path, headers, body):
        if method == "DELETE":
            return self.handle_delete(path, headers, body)
        return 405, {"kind": "Status", "code": 405, "message": "not in this fake"}

    def journal(self):
        found = glob.glob(os.path.join(self.evidence_root, "*", "interventions.jsonl"))
        lines = []
        for path in found:
            with open(path) as handle:
                lines += [json.loads(line) for line in handle]
        return lines

    def handle_delete(self, path, headers, body):
        self.requests.append(
            {"path": path, "method": "DELETE", "query": {}, "accept": headers.get("Accept")}
        )
        if headers.get("Authorization") != "Bearer " + self.token:
            return 401, fakeapi._status(401, "Unauthorized")
        name = path.rstrip("/").split("/")[-1]
        ns = path.split("/namespaces/")[1].split("/")[0] if "/namespaces/" in path else None
        resource = path.rstrip("/").split("/")[-2]
        matches = [
            o
            for o in self.objects
            if o["metadata"]["name"] == name
            and o["metadata"].get("namespace") == ns
            and fakeapi.KINDS.get((o["apiVersion"], o["kind"]), ("",))[0] == resource
        ]
        if not matches:
            return 404, fakeapi._status(404, "not found")
        obj = matches[0]
        pre = body.get("preconditions") or {}
        recorded = [
            line
            for line in self.journal()
            if line["event"] == "recorded" and line["target"]["uid"] == obj["metadata"]["uid"]
        ]
        self.deletes.append(
            {
                "kind": obj["kind"],
                "namespace": ns,
                "name": name,
                "recorded_before": bool(recorded),
                "preconditions": pre,
            }
        )
        if (
            pre.get("uid") != obj["metadata"]["uid"]
            or pre.get("resourceVersion") != obj["metadata"]["resourceVersion"]
        ):
            return 409, fakeapi._status(409, "Precondition failed")
        self.objects.remove(obj)
        if obj["kind"] == "ConfigMap" and self.bind_after_cm_delete:
            for other in self.objects:
                if other["kind"] == "Pod" and other["metadata"]["name"] == "train-0":
                    other["spec"]["nodeName"] = "node-1"
                    other["status"]["conditions"] = [
                        {
                            "type": "PodScheduled",
                            "status": "True",
                            "lastTransitionTime": "2026-11-30T12:00:30Z",
                        },
                        {
                            "type": "PodBound",
                            "status": "True",
                            "lastTransitionTime": "2026-11-30T12:00:31Z",
                        },
                    ]
        done = copy.deepcopy(obj)
        done["metadata"]["deletionTimestamp"] = "2026-11-30T12:00:20Z"
        return 200, done


def cluster(disposable="true"):
    objects = copy.deepcopy(CLUSTER)
    for obj in objects:  # old enough for kai_recovery_min_age_s whatever the clock says
        if obj["metadata"].get("creationTimestamp"):
            obj["metadata"]["creationTimestamp"] = "2020-01-01T00:00:00Z"
    objects[0]["metadata"]["annotations"]["kaiops.dev/disposable"] = disposable
    return objects


def recovery_run(tmp_path, api, *args):
    kubeconfig = api.kubeconfig(tmp_path / "kubeconfig")
    done, bundle = run_playbook_recovery(tmp_path, kubeconfig, *args)
    return done, bundle


def run_playbook_recovery(tmp_path, kubeconfig, *args):
    return run_playbook(
        tmp_path,
        kubeconfig,
        "-e",
        "kai_inventory_use_helm=false",
        *args,
        playbook="playbooks/recovery.yml",
    )


STEPS = json.dumps(
    {
        "kaiops_recovery_steps": [
            "delete_failed_bindrequests",
            "delete_stale_reservation_pods",
            "delete_orphan_configmaps",
        ],
        "kai_recovery_window_s": 4,
        "kai_recovery_poll_delay_s": 1,
    }
)


def test_recovery_deletes_only_what_it_recorded_first_and_observes_recovery(tmp_path):
    api = WritableFakeAPI(cluster(), str(tmp_path / "evidence")).start()
    try:
        done, bundle = recovery_run(tmp_path, api, "-e", STEPS)
    finally:
        api.stop()
    out = done.stdout + done.stderr
    assert done.returncode == 0, out
    assert [(d["kind"], d["name"]) for d in api.deletes] == [
        ("BindRequest", "train-0-br"),
        ("Pod", "gpu-reservation-g1"),
        ("ConfigMap", "train-0-shared-0"),
    ]
    assert all(d["recorded_before"] for d in api.deletes), api.deletes
    assert all(
        d["preconditions"]["uid"] and d["preconditions"]["resourceVersion"] for d in api.deletes
    )
    # never a collection delete: every DELETE names one object
    assert all(
        r["path"].split("/")[-1] in ("train-0-br", "gpu-reservation-g1", "train-0-shared-0")
        for r in api.requests
        if r.get("method") == "DELETE"
    )
    lines = [json.loads(line) for line in open(os.path.join(bundle, "interventions.jsonl"))]
    assert [line["event"] for line in lines] == ["recorded", "applied"] * 3
    report = json.load(open(os.path.join(bundle, "recovery.json")))
    c1 = report["clusters"]["c1"]
    verdicts = {o["finding"]: o["verdict"] for o in c1["observation"]["outcomes"]}
    assert verdicts == {
        "failed_bind:team-a/train-0": "recovered",
        "pending_unschedulable:team-a/wait-0": "not_applicable",
        "failed_bindrequest:team-a/train-0-br": "recovered",
        "stale_reservation_pod:kai-resource-reservation/gpu-reservation-g1": "recovered",
        "orphan_configmap:team-a/train-0-shared-0": "recovered",
    }
    assert c1["prevention"]["line"].startswith(
        "NOT prevented: binder v0.16.13 is in the affected range"
    )
    md = open(os.path.join(bundle, "recovery.md")).read()
    assert "**Remediation of existing damage**: 5 finding(s)" in md
    assert "BindRequest API not served" not in md
    retries = [json.loads(line) for line in open(os.path.join(bundle, "tasks.jsonl"))]
    assert any(e["task"].endswith("Observe the findings for the window") for e in retries)
    assert sha256sum_ok(bundle)


def test_enabled_steps_with_nothing_to_act_on_still_watch_the_window(tmp_path):
    # the reservation namespace is out of scope: the enabled step finds nothing to delete, yet
    # a bind KAI retries on its own may be in flight, so the window is watched, not read once.
    # The window holds several polls even when a busy machine takes seconds to start the first
    # read (3 s failed under a load of 10 on 2 cores: the first read came after the window).
    api = WritableFakeAPI(cluster(), str(tmp_path / "evidence")).start()
    steps = {
        "kai_recovery_steps": ["delete_stale_reservation_pods"],
        "kai_recovery_namespaces": ["team-a"],
        "kai_recovery_window_s": 10,
        "kai_recovery_poll_delay_s": 1,
    }
    try:
        done, bundle = recovery_run(tmp_path, api, "-e", json.dumps(steps))
    finally:
        api.stop()
    assert done.returncode == 0, done.stdout + done.stderr
    # The role's own name, given before kaiops_recovery_steps existed, still applies its steps.
    assert "kai_recovery_steps is deprecated: give kaiops_recovery_steps instead" in done.stderr
    assert api.deletes == []
    observation = json.load(open(os.path.join(bundle, "recovery.json")))["clusters"]["c1"][
        "observation"
    ]
    assert observation["watched"] is True and int(observation["attempts"]) >= 2, observation
    assert "one read only" not in open(os.path.join(bundle, "recovery.md")).read()


def test_recovery_read_only_deletes_nothing(tmp_path):
    api = WritableFakeAPI(cluster(disposable="false"), str(tmp_path / "evidence")).start()
    try:
        done, bundle = recovery_run(tmp_path, api)
    finally:
        api.stop()
    out = done.stdout + done.stderr
    assert done.returncode == 0, out
    assert api.deletes == []
    assert not os.path.exists(os.path.join(bundle, "interventions.jsonl"))
    report = json.load(open(os.path.join(bundle, "recovery.json")))
    assert report["clusters"]["c1"]["summary"]["findings"] == 5
    assert sha256sum_ok(bundle)


def test_recovery_check_mode_with_steps_deletes_nothing(tmp_path):
    api = WritableFakeAPI(cluster(), str(tmp_path / "evidence")).start()
    try:
        done, bundle = recovery_run(tmp_path, api, "-e", STEPS, "--check")
    finally:
        api.stop()
    assert done.returncode == 0, done.stdout + done.stderr
    assert api.deletes == []
    lines = [json.loads(line) for line in open(os.path.join(bundle, "interventions.jsonl"))]
    assert {line["event"] for line in lines} == {"not_applied"}


def test_recovery_refuses_steps_on_a_cluster_not_marked_disposable(tmp_path):
    api = WritableFakeAPI(cluster(disposable="false"), str(tmp_path / "evidence")).start()
    try:
        done, bundle = recovery_run(tmp_path, api, "-e", STEPS)
    finally:
        api.stop()
    out = done.stdout + done.stderr
    assert done.returncode == 2, out
    assert (
        "Refusing c1: namespace kube-system lacks the annotation kaiops.dev/disposable=true" in out
    )
    assert "kai_recovery_allow_non_disposable: true" in out
    assert api.deletes == []
    report = json.load(open(os.path.join(bundle, "recovery.json")))
    assert report["clusters"]["c1"]["status"] == "refused"
    assert report["summary"]["failed"] == ["c1"]


def test_recovery_without_kai_says_what_it_cannot_see(tmp_path):
    objects = [o for o in cluster() if o["kind"] not in ("BindRequest", "Deployment")]
    api = DiscoveringFakeAPI(objects=objects).start()
    api.served.discard("scheduling.run.ai/v1alpha2")
    try:
        done, bundle = recovery_run(tmp_path, api)
    finally:
        api.stop()
    assert done.returncode == 0, done.stdout + done.stderr
    md = open(os.path.join(bundle, "recovery.md")).read()
    assert "**BindRequest API not served on this cluster: cannot find failed binds**" in md
    assert "Prevention of recurrence**: not assessable: KAI is not installed" in md


def test_recovery_validates_options_before_any_request(tmp_path):
    api = WritableFakeAPI(cluster(), str(tmp_path / "evidence")).start()
    try:
        done, bundle = recovery_run(
            tmp_path,
            api,
            "-e",
            '{"kai_recovery_steps": ["delete_everything"], "kai_recovery_namespaces": ["Team_A"]}',
        )
    finally:
        api.stop()
    out = done.stdout + done.stderr
    assert done.returncode == 2, out
    # The request check refuses the unknown step first, with recovery's report (issue 23).
    assert "kai_recovery_steps: has unknown 'delete_everything': use some of" in out
    assert os.path.isfile(os.path.join(bundle, "recovery.md"))
    assert api.requests == []
