"""Acceptance tests of KAI in the lab (issue 10): the stand-in, its switch, its bundle path.

Everything here goes through the Kubernetes API and helm, as the collection does; the
facts asserted are kai-contract.md's (sections named in each test). Tests that switch
KAI put the lab back on the release it was started with.
"""

from __future__ import annotations

import json
import subprocess
import time
import uuid

import pytest
import yaml
from kailab import images, kai

KWOK_TOLERATION = {"key": "kwok.x-k8s.io/node", "operator": "Exists", "effect": "NoSchedule"}
NIL_MAP = "assignment to entry in nil map"
KEYS = ("NVIDIA_VISIBLE_DEVICES", "RUNAI_NUM_OF_GPUS", "GPU_PORTION")
# KAI's webhooks (CONTRACT.md, "The real KAI on the lab, 2026-12-07: its webhooks"): the
# Services behind them with their certificates' Secrets, the validating configurations
WEBHOOK_SERVICES = kai.WEBHOOK_SERVICES
WEBHOOK_SECRETS = (
    "kai-admission-webhook-tls-secret",
    "podgroup-webhook-tls-secret",
    "queue-webhook-tls-secret",
)
VALIDATING = (
    "validating-kai-admission",
    "kai-podgroup-validation-v2alpha2",
    "kai-queue-validation-v2",
)
KAI_WEBHOOKS = (
    f"admission.{kai.NAMESPACE}.svc",
    f"admission.{kai.NAMESPACE}.svc",
    f"topology.admission.{kai.NAMESPACE}.svc",
    "podgroup-validation.kai.scheduler",
    "queue-validation.kai.scheduler",
)


def fraction_pod(
    name: str,
    fraction: str = "0.5",
    *,
    real_node: str | None = None,
    gated: bool = False,
    command: list[str] | None = None,
) -> dict:
    spec: dict = {
        "schedulerName": "kai-scheduler",
        "restartPolicy": "Never",
        "terminationGracePeriodSeconds": 0,
        "containers": [
            {
                "name": "main",
                "image": images.BUSYBOX_REF,
                "imagePullPolicy": "Never",
                "command": command or ["sleep", "3600"],
            }
        ],
    }
    if real_node:
        spec["nodeSelector"] = {"kubernetes.io/hostname": real_node}
    else:
        spec["nodeSelector"] = {"type": "kwok"}
        spec["tolerations"] = [KWOK_TOLERATION]
    if gated:
        spec["schedulingGates"] = [{"name": "kaiops.dev/fixture"}]
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "annotations": {"gpu-fraction": fraction}},
        "spec": spec,
    }


def wait_for(fn, timeout: float = 60, every: float = 0.25, what: str = "condition"):
    """Poll a read until it returns something truthy (reads are cheap; no fixed sleeps)."""
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        last = fn()
        if last:
            return last
        time.sleep(every)
    raise AssertionError(f"timed out after {timeout:.0f}s waiting for {what}; last read: {last!r}")


def get(kube, *args):
    proc = kube("get", *args, "-o", "json", check=False)
    return json.loads(proc.stdout) if proc.returncode == 0 else None


def binder_restarts(kube) -> int:
    pods = kube.json("get", "pods", "-n", kai.NAMESPACE, "-l", "app=binder")["items"]
    return sum(
        cs.get("restartCount", 0) for p in pods for cs in p["status"].get("containerStatuses", [])
    )


def watch_bindrequests(kube, namespace: str, until, timeout: float = 40) -> list[dict]:
    """Every version of every BindRequest in the namespace, from a watch, until
    `until(seen)` holds: attempts the scheduler deletes are kept."""
    proc = subprocess.Popen(
        [
            kube.bin,
            f"--kubeconfig={kube.kubeconfig}",
            "get",
            "bindrequests",
            "-n",
            namespace,
            "--watch",
            "-o",
            "json",
            "--output-watch-events",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    seen: list[dict] = []
    deadline = time.monotonic() + timeout
    buf = ""
    try:
        import selectors

        sel = selectors.DefaultSelector()
        sel.register(proc.stdout, selectors.EVENT_READ)
        decoder = json.JSONDecoder()
        while time.monotonic() < deadline and not until(seen):
            if not sel.select(timeout=0.5):
                continue
            line = proc.stdout.readline()
            if not line:
                break
            buf += line
            try:
                event, end = decoder.raw_decode(buf.strip())
            except json.JSONDecodeError:
                continue
            buf = buf.strip()[end:]
            seen.append(event)
    finally:
        proc.kill()
        proc.wait()
    return seen


def failed_attempts(events: list[dict]) -> dict[str, str]:
    """uid -> reason of every BindRequest seen Failed."""
    out = {}
    for ev in events:
        obj = ev.get("object") or {}
        st = obj.get("status") or {}
        if st.get("phase") == "Failed":
            out[obj["metadata"]["uid"]] = st.get("reason", "")
    return out


def admitted(kube, namespace: str, name: str) -> dict:
    pod = kube.json("get", "pod", name, "-n", namespace)
    assert "runai/shared-gpu-configmap" in pod["metadata"]["annotations"], pod["metadata"]
    return pod


def plant_capabilities(
    kube, namespace: str, pod: dict, data: dict | None, owner: dict | None = None
) -> str:
    """The capabilities ConfigMap <prefix>-0 owned by the pod (or `owner`), before the bind."""
    name = pod["metadata"]["annotations"]["runai/shared-gpu-configmap"] + "-0"
    meta = pod["metadata"]
    owner = owner or {"apiVersion": "v1", "kind": "Pod", "name": meta["name"], "uid": meta["uid"]}
    cm = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": namespace, "ownerReferences": [owner]},
    }
    if data is not None:
        cm["data"] = data
    kube("create", "-f", "-", input_text=json.dumps(cm))
    return name


def lift_gate(kube, namespace: str, name: str) -> None:
    kube(
        "patch",
        "pod",
        name,
        "-n",
        namespace,
        "--type=json",
        "-p",
        '[{"op":"remove","path":"/spec/schedulingGates"}]',
    )


def bound(kube, namespace: str, name: str):
    pod = get(kube, "pod", name, "-n", namespace)
    return pod if pod and pod["spec"].get("nodeName") else None


def running(kube, namespace: str, name: str):
    pod = get(kube, "pod", name, "-n", namespace)
    return pod if pod and pod["status"].get("phase") == "Running" else None


# ------------------------------------------------------------------ fixtures


@pytest.fixture()
def namespace(kube):
    """A namespace of the test's own, gone before the next test starts: a terminating pod still
    holds its GPU share, and the next test's pods would pack around it."""
    name = f"labtest-{uuid.uuid4().hex[:6]}"
    kube("create", "namespace", name)
    kube("wait", "--for=create", "serviceaccount/default", "-n", name, "--timeout=60s")
    yield name
    kube("delete", "namespace", name, "--wait=true", "--timeout=120s", check=False)


@pytest.fixture(scope="module")
def started_with(lab):
    """The release the lab runs when these tests begin; restored at the end."""
    st = kai.status(lab)
    assert st["release"] == kai.RELEASE, "KAI is not installed: make lab-up installs it"
    version = st["app_version"].split("+", 1)[0]
    yield version
    kai.install(lab, version)


def switch(lab, version: str) -> dict:
    return kai.install(lab, version)


# ------------------------------------------------------------------ install shape


def test_kai_release_is_the_standin_and_says_so(kube, lab, started_with):
    st = kai.status(lab)
    assert st["implementation"] == "standin"
    assert st["chart"] == f"kai-scheduler-{started_with}+standin"
    assert st["app_version"] == f"{started_with}+standin"
    names = {d["name"] for d in st["deployments"]}
    assert {kai.OPERATOR, *kai.COMPONENTS} <= names
    assert all(d["rolled_out"] for d in st["deployments"]), st["deployments"]
    config = kube.json("get", "configs.kai.scheduler", "kai-config")
    assert config["spec"]["admission"]["gpuSharing"] is True
    assert config["metadata"]["labels"][kai.IMPLEMENTATION_LABEL] == "standin"
    assert kai.config_current(config), config.get("status")
    for q in ("default-parent-queue", "default-queue"):
        kube("get", "queues.scheduling.run.ai", q)
    kube("get", "schedulingshards.kai.scheduler", "default")
    assert kube.json("get", "runtimeclass", "nvidia")["handler"] == "runc"
    binder = kube.json("get", "deployment", "binder", "-n", kai.NAMESPACE)
    args = binder["spec"]["template"]["spec"]["containers"][0]["args"]
    behaviour = kai.release_row(started_with)["configmap_write"]
    assert f"--standin-configmap-write={behaviour}" in args
    assert "--fake-gpu-nodes" in args  # the lab's nodes carry run.ai/fake.gpu=true


def test_each_faulted_build_is_published_beside_a_healthy_pre_patch_chart(lab):
    """lab/kai-standin/CONTRACT.md, "Faults": a rollout can target a faulted build only through
    the lab's charts; its downgrade from the same folder installs the healthy pre-patch chart."""
    pair = kai.releases()["pair"]
    for fault in kai.FAULTED_BUILDS:
        folder = lab.cfg.path("charts") / "faults" / fault
        faulted = yaml.safe_load(
            lab.helm("show", "values", str(folder / f"kai-scheduler-{pair['patched']}.tgz")).stdout
        )
        healthy = yaml.safe_load(
            lab.helm("show", "values", str(folder / f"kai-scheduler-{pair['pre']}.tgz")).stdout
        )
        assert faulted["standin"]["faults"] == [fault]
        assert faulted["standin"]["release"] == pair["patched"]
        assert healthy["standin"]["faults"] == [] and healthy["standin"]["release"] == pair["pre"]


def test_kai_install_shape_is_operator_and_hooks(kube, lab, started_with):
    """kai-contract.md §14: helm's manifest holds the operator, RBAC, PriorityClasses,
    SchedulingShard default and service accounts; the operator makes the rest from
    kai-config and owns it."""
    manifest = lab.helm("get", "manifest", kai.RELEASE, "-n", kai.NAMESPACE).stdout
    docs = [d for d in yaml.safe_load_all(manifest) if d]
    kinds = {(d["kind"], d["metadata"]["name"]) for d in docs}
    assert [n for k, n in kinds if k == "Deployment"] == [kai.OPERATOR]
    made_by_operator = {"Service", "Secret", "Config", "MutatingWebhookConfiguration"}
    assert not {k for k, _ in kinds} & (made_by_operator | {"ValidatingWebhookConfiguration"})
    assert ("SchedulingShard", "default") in kinds
    op = kube.json("get", "deployment", kai.OPERATOR, "-n", kai.NAMESPACE)
    env = {
        e["name"]: e.get("value") for e in op["spec"]["template"]["spec"]["containers"][0]["env"]
    }
    assert env["MS_TAG"] == started_with and env["MS_REPOSITORY"] == kai.STANDIN_REGISTRY
    config = kube.json("get", "configs.kai.scheduler", "kai-config")
    owned = (
        [kube.json("get", "deployment", n, "-n", kai.NAMESPACE) for n in kai.COMPONENTS]
        + [
            kube.json("get", "service", n, "-n", kai.NAMESPACE)
            for n in ("admission", "binder", "kai-scheduler-default") + WEBHOOK_SERVICES[1:]
        ]
        + [kube.json("get", "secret", s, "-n", kai.NAMESPACE) for s in WEBHOOK_SECRETS]
        + [kube.json("get", "mutatingwebhookconfiguration", "mutating-kai-admission")]
        + [kube.json("get", "validatingwebhookconfiguration", v) for v in VALIDATING]
    )
    for obj in owned:
        meta = obj["metadata"]
        (ref,) = meta["ownerReferences"]
        assert (ref["kind"], ref["name"], ref["uid"], ref["controller"]) == (
            "Config", "kai-config", config["metadata"]["uid"], True
        ), meta["name"]  # fmt: skip
        assert meta["labels"]["app.kubernetes.io/managed-by"] == "kai-operator", meta["name"]
        assert meta["labels"][kai.IMPLEMENTATION_LABEL] == "standin", meta["name"]
        assert meta["annotations"]["meta.helm.sh/release-name"] == kai.RELEASE, meta["name"]
    for name in kai.COMPONENTS:
        dep = kube.json("get", "deployment", name, "-n", kai.NAMESPACE)
        image = dep["spec"]["template"]["spec"]["containers"][0]["image"]
        assert image.endswith(f":{started_with}"), image  # the tag kai-config names
    conds = {c["type"]: c for c in config["status"]["conditions"]}
    assert {t: (c["status"], c["reason"]) for t, c in conds.items()} == {
        "Reconciling": ("False", "reconciled"),
        "Deployed": ("True", "deployed"),
        "Available": ("True", "available"),
        "DependenciesFulfilled": ("True", "dependencies_fulfilled"),
        "Ready": ("True", "ready"),
    }
    # each webhook Service's serving certificate is the operator's, and the webhooks trust it
    cas = {
        svc: kube.json("get", "secret", sec, "-n", kai.NAMESPACE)["data"]["ca.crt"]
        for svc, sec in zip(WEBHOOK_SERVICES, WEBHOOK_SECRETS, strict=True)
    }
    configs = [kube.json("get", "mutatingwebhookconfiguration", "mutating-kai-admission")] + [
        kube.json("get", "validatingwebhookconfiguration", v) for v in VALIDATING
    ]
    hooks = [h for c in configs for h in c["webhooks"]]
    assert sorted(h["name"] for h in hooks) == sorted(KAI_WEBHOOKS)
    for h in hooks:
        assert h["clientConfig"]["caBundle"] == cas[h["clientConfig"]["service"]["name"]], h["name"]


def test_kai_webhooks_refuse_as_kai(kube, namespace):
    """CONTRACT.md, the webhooks section: the queue and PodGroup webhooks, served by the
    queue-controller and podgroup-controller over TLS, refuse what KAI's refuse."""
    queue = {"apiVersion": "scheduling.run.ai/v2", "kind": "Queue"}
    queue["metadata"], queue["spec"] = {"name": "no-resources"}, {"parentQueue": "default-queue"}
    group = {"apiVersion": "scheduling.run.ai/v2alpha2", "kind": "PodGroup"}
    group["metadata"] = {"name": "bad", "namespace": namespace}
    group["spec"] = {"minSubGroup": 1, "subGroups": [{"name": "a"}]}
    for obj, hook, message in (
        (queue, "queue-validation.kai.scheduler", "resources must be specified"),
        (group, "podgroup-validation.kai.scheduler", "subgroup a: minMember is required"),
    ):
        body = json.dumps(obj)
        done = kube("create", "--dry-run=server", "-f", "-", input_text=body, check=False)
        assert done.returncode != 0
        assert f'admission webhook "{hook}" denied the request: {message}' in done.stderr


# ------------------------------------------------------------------ the happy path


def test_fraction_pod_on_kwok_node_is_mutated_grouped_scheduled_and_bound(kube, namespace):
    kube.apply(fraction_pod("half"), namespace=namespace)
    pod = wait_for(lambda: bound(kube, namespace, "half"), what="pod half bound")
    ann = pod["metadata"]["annotations"]
    prefix = ann["runai/shared-gpu-configmap"]
    assert prefix.startswith("half-") and prefix.endswith("-shared-gpu")
    main = pod["spec"]["containers"][0]
    refs = [(e["name"], e["valueFrom"]["configMapKeyRef"]["name"]) for e in main["env"][-3:]]
    assert refs == [
        (k, f"{prefix}-0") for k in ("NVIDIA_VISIBLE_DEVICES", "RUNAI_NUM_OF_GPUS", "GPU_PORTION")
    ]
    assert main["envFrom"][-1]["configMapRef"]["name"] == f"{prefix}-0-evar"
    volume = next(
        v for v in pod["spec"]["volumes"] if v.get("configMap", {}).get("name") == f"{prefix}-0"
    )
    assert volume["name"] == f"{prefix}-0-vol"
    assert volume["name"] not in {m["name"] for m in main.get("volumeMounts", [])}  # no mount
    assert pod["spec"]["runtimeClassName"] == "nvidia"
    pg = f"pg-half-{pod['metadata']['uid']}"
    assert ann["pod-group-name"] == pg
    assert (
        kube.json("get", "podgroups.scheduling.run.ai", pg, "-n", namespace)["spec"]["queue"]
        == "default-queue"
    )
    br = kube.json("get", "bindrequests.scheduling.run.ai", "half", "-n", namespace)
    assert br["spec"]["receivedResourceType"] == "Fraction"
    assert br["spec"]["receivedGPU"] == {"count": 1, "portion": "0.50"}
    assert "backoffLimit" not in br["spec"]
    assert br["status"]["phase"] == "Succeeded"
    assert ann["received-resource-type"] == "Fraction"
    group = pod["metadata"]["labels"]["runai-gpu-group"]
    assert br["spec"]["selectedGPUGroups"] == [group]
    cm = kube.json("get", "configmap", f"{prefix}-0", "-n", namespace)
    assert cm["data"]["GPU_PORTION"] == "0.50" and cm["data"]["RUNAI_NUM_OF_GPUS"] == "0.50"
    assert cm["data"]["NVIDIA_VISIBLE_DEVICES"].startswith("GPU-")
    res = kube.json(
        "get", "pods", "-n", kai.RESERVATION_NAMESPACE, "-l", f"runai-gpu-group={group}"
    )["items"]
    assert len(res) == 1
    assert (
        res[0]["metadata"]["annotations"]["run.ai/reserve_for_gpu_index"]
        == cm["data"]["NVIDIA_VISIBLE_DEVICES"]
    )
    wait_for(lambda: running(kube, namespace, "half"), what="pod half Running on its KWOK node")
    events = kube.json(
        "get", "events", "-n", namespace, "--field-selector", "involvedObject.name=half"
    )["items"]
    reasons = {e["reason"] for e in events}
    assert {"Scheduled", "Bound"} <= reasons, reasons


def test_fraction_pod_on_real_node_runs_and_sees_its_share(kube, namespace, lab):
    script = [
        "sh",
        "-c",
        'echo "NVD=$NVIDIA_VISIBLE_DEVICES PORTION=$GPU_PORTION N=$RUNAI_NUM_OF_GPUS"; sleep 3600',
    ]
    kube.apply(
        fraction_pod("onreal", real_node=lab.cfg.node_name, command=script), namespace=namespace
    )
    pod = wait_for(
        lambda: running(kube, namespace, "onreal"), timeout=90, what="pod onreal Running"
    )
    assert pod["spec"]["nodeName"] == lab.cfg.node_name
    prefix = pod["metadata"]["annotations"]["runai/shared-gpu-configmap"]
    data = kube.json("get", "configmap", f"{prefix}-0", "-n", namespace)["data"]
    line = wait_for(
        lambda: kube("logs", "onreal", "-n", namespace, check=False).stdout.strip(),
        what="probe line",
    )
    assert line == f"NVD={data['NVIDIA_VISIBLE_DEVICES']} PORTION=0.50 N=0.50"
    group = pod["metadata"]["labels"]["runai-gpu-group"]
    res = kube.json(
        "get", "pods", "-n", kai.RESERVATION_NAMESPACE, "-l", f"runai-gpu-group={group}"
    )["items"][0]
    assert res["spec"]["nodeName"] == lab.cfg.node_name
    # on the real node the id is the device the lab's fake device plugin gave the reservation pod
    assert (
        res["metadata"]["annotations"]["run.ai/reserve_for_gpu_index"]
        == data["NVIDIA_VISIBLE_DEVICES"]
    )
    node = kube.json("get", "node", lab.cfg.node_name)
    assert int(node["status"]["allocatable"]["nvidia.com/gpu"]) >= 1


def test_two_half_pods_share_one_gpu_group_and_one_reservation_pod(kube, namespace):
    kube.apply(fraction_pod("a"), fraction_pod("b"), namespace=namespace)
    pods = [
        wait_for(lambda n=n: bound(kube, namespace, n), what=f"pod {n} bound") for n in ("a", "b")
    ]
    groups = {p["metadata"]["labels"]["runai-gpu-group"] for p in pods}
    assert len(groups) == 1, groups
    assert {p["spec"]["nodeName"] for p in pods} == {pods[0]["spec"]["nodeName"]}
    (group,) = groups
    res = kube.json(
        "get", "pods", "-n", kai.RESERVATION_NAMESPACE, "-l", f"runai-gpu-group={group}"
    )["items"]
    assert len(res) == 1


# ------------------------------------------------------------------ the edge case, per behaviour


def gated_with_capabilities(kube, namespace: str, name: str, data, owner=None):
    kube.apply(fraction_pod(name, gated=True), namespace=namespace)
    pod = admitted(kube, namespace, name)
    cm = plant_capabilities(kube, namespace, pod, data, owner)
    return pod, cm


@pytest.mark.parametrize("version", ["pre", "patched", "v0.16.8"])
def test_existing_capabilities_configmap_with_nil_data(kube, namespace, lab, started_with, version):
    switch(lab, version)
    behaviour = kai.release_row(version)["configmap_write"]
    restarts = binder_restarts(kube)
    _, cm = gated_with_capabilities(kube, namespace, "edge", None)
    stored = kube.json("get", "configmap", cm, "-n", namespace)
    assert "data" not in stored  # the API server stores no data map at all
    lift_gate(kube, namespace, "edge")
    if behaviour == "race-fix-unguarded":
        events = watch_bindrequests(kube, namespace, lambda seen: len(failed_attempts(seen)) >= 2)
        fails = failed_attempts(events)
        assert len(fails) >= 2, f"expected the failure again on a retry, saw {events[-3:]}"
        assert all(NIL_MAP in r and r.startswith("Internal Error:") for r in fails.values()), fails
        pod = kube.json("get", "pod", "edge", "-n", namespace)
        assert not pod["spec"].get("nodeName") and pod["status"]["phase"] == "Pending"
        assert "runai-gpu-group" in pod["metadata"].get("labels", {})  # no rollback after a panic
        assert "received-resource-type" not in pod["metadata"]["annotations"]
        left = kube.json("get", "pods", "-n", kai.RESERVATION_NAMESPACE)["items"]
        assert left, "the failed attempt's reservation pod is left behind"
        assert "data" not in kube.json("get", "configmap", cm, "-n", namespace)
        assert binder_restarts(kube) == restarts  # the panic is recovered, the process lives
    else:
        wait_for(lambda: bound(kube, namespace, "edge"), what=f"pod edge bound on {behaviour}")
        data = kube.json("get", "configmap", cm, "-n", namespace)["data"]
        assert set(KEYS) <= set(data) and data["GPU_PORTION"] == "0.50"
        assert binder_restarts(kube) == restarts


@pytest.mark.parametrize("version", ["pre", "patched", "v0.16.8"])
def test_existing_capabilities_configmap_keeps_unrelated_key(
    kube, namespace, lab, started_with, version
):
    switch(lab, version)
    stale = {k: "stale" for k in KEYS} | {"keep-me": "1"}
    _, cm = gated_with_capabilities(kube, namespace, "upd", stale)
    lift_gate(kube, namespace, "upd")
    wait_for(lambda: bound(kube, namespace, "upd"), what="pod upd bound")
    data = kube.json("get", "configmap", cm, "-n", namespace)["data"]
    assert data["keep-me"] == "1"
    assert data["GPU_PORTION"] == "0.50" and data["NVIDIA_VISIBLE_DEVICES"].startswith("GPU-")


def test_capabilities_configmap_with_another_owner_is_overwritten(
    kube, namespace, lab, started_with
):
    """KAI's own behaviour (contract §6.4), recorded and not fixed: the unrelated key goes."""
    other = kube.json("create", "configmap", "other-owner", "-n", namespace)
    owner = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "name": "other-owner",
        "uid": other["metadata"]["uid"],
    }
    pod, cm = gated_with_capabilities(kube, namespace, "foreign", {"keep-me": "1"}, owner)
    lift_gate(kube, namespace, "foreign")
    wait_for(lambda: bound(kube, namespace, "foreign"), what="pod foreign bound")
    got = kube.json("get", "configmap", cm, "-n", namespace)
    assert "keep-me" not in got["data"]
    assert [o["uid"] for o in got["metadata"]["ownerReferences"]] == [pod["metadata"]["uid"]]


# ------------------------------------------------------------------ switch and bundle


def test_switch_rolls_the_deployments_and_changes_the_behaviour(kube, lab, started_with):
    before = kai.status(lab)
    other = "patched" if kai.resolve("pre") == started_with else "pre"
    result = switch(lab, other)
    assert result["action"] == "upgrade"
    after = kai.status(lab)
    assert after["revision"] == before["revision"] + 1
    assert after["app_version"] == f"{kai.resolve(other)}+standin"
    args = kube.json("get", "deployment", "binder", "-n", kai.NAMESPACE)["spec"]["template"][
        "spec"
    ]["containers"][0]["args"]
    assert f"--standin-configmap-write={kai.release_row(other)['configmap_write']}" in args
    again = switch(lab, other)
    assert again["action"] == "none"  # converged: no second upgrade


def test_bundle_path_installs_the_chart_and_images_it_is_given(
    kube, lab, started_with, tmp_path, namespace
):
    bundle = kai.export_bundle(lab, "patched", tmp_path / "bundle")
    assert len(list((bundle / "images").glob("*.tar"))) == len(kai.STANDIN_IMAGES)
    target = kai.bundle_target(bundle)
    assert target.values["global"]["registry"] == kai.MIRROR_REGISTRY
    assert target.values["global"]["tag"] == kai.resolve("patched")
    present = set(lab.ctr("images", "ls", "-q").stdout.split())
    assert not {ref for ref, _ in target.images} & present  # the install must import them
    result = kai.install(lab, bundle=str(bundle))
    assert result["version"] == kai.resolve("patched")
    st = kai.status(lab)
    assert st["chart"] == f"kai-scheduler-{kai.resolve('patched')}+standin"
    binder = kube.json("get", "deployment", "binder", "-n", kai.NAMESPACE)
    assert binder["spec"]["template"]["spec"]["containers"][0]["image"].startswith(
        kai.MIRROR_REGISTRY + "/"
    )
    kube.apply(fraction_pod(f"b-{uuid.uuid4().hex[:4]}"), namespace=namespace)
    wait_for(
        lambda: any(
            p["spec"].get("nodeName") for p in kube.json("get", "pods", "-n", namespace)["items"]
        ),
        what="a pod bound by the bundle's KAI",
    )
