"""helm rollback on the stand-in behaves as on the real KAI (kai-contract.md §14, issue 19).

KAI's chart installs an operator; a post-install/post-upgrade hook applies Config
kai-config, whose spec names every component's image tag, and the operator makes the
components from it. So `helm rollback` (which runs no post-upgrade hook) cannot take the
components back: each of §14's five rows, observed on the real KAI, is checked here on the
stand-in. Each test starts from the lab's KAI at its starting release and leaves it there.
"""

from __future__ import annotations

import json
import time

import pytest
from kailab import kai

RESERVATION_NS_ERROR = 'no Namespace with the name "kai-resource-reservation" found'
WATCH_S = 30  # how long the components are watched after helm returns (KAI: 60 s)


@pytest.fixture()
def versions(lab):
    """(older, newer) releases of the pair; the lab is on the older one before and after."""
    older, newer = kai.resolve("pre"), kai.resolve("patched")
    kai.install(lab, older)
    yield older, newer
    kai.install(lab, older)


def helm(lab, *args, check=True):
    return lab.helm(*args, "-n", kai.NAMESPACE, check=check)


def history(lab) -> list[dict]:
    return json.loads(helm(lab, "history", kai.RELEASE, "-o", "json").stdout)


def release(lab) -> dict:
    return kai.helm_release(lab) or {}


def running(lab) -> dict[str, str]:
    """Deployment -> image tag it has rolled out (None while rolling), and the binder's
    ConfigMap-write behaviour: what the components run, not what helm says."""
    out = {}
    for d in kai.deployments(lab):
        c = d["spec"]["template"]["spec"]["containers"][0]
        out[d["metadata"]["name"]] = kai.split_ref(c["image"])[2] if kai.rolled_out(d) else None
        if d["metadata"]["name"] == "binder":
            flag = next(a for a in c["args"] if a.startswith("--standin-configmap-write="))
            out["binder-behaviour"] = flag.split("=", 1)[1]
    return out


def at(version: str) -> dict[str, str]:
    """What every component runs when it plays `version`."""
    return {n: version for n in kai.COMPONENTS} | {
        "binder-behaviour": kai.release_row(version)["configmap_write"]
    }


def components(state: dict) -> dict:
    return {k: v for k, v in state.items() if k != kai.OPERATOR}


def watch_unchanged(lab, want: dict, seconds: float = WATCH_S) -> None:
    """The components keep `want` for `seconds` (read every second)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        assert components(running(lab)) == want
        time.sleep(1)


def upgrade_to(lab, version: str) -> dict:
    """helm upgrade to a release's chart even when it is the installed one (the hooks run)."""
    return kai.install(lab, version, always=True)


def test_rollback_to_install_revision_fails_on_the_reservation_namespace(lab, kube, versions):
    older, newer = versions
    # an install revision that rendered the reservation namespace (absent at install time)
    helm(lab, "uninstall", kai.RELEASE, "--wait", "--timeout=180s")
    kube("delete", "namespace", kai.RESERVATION_NAMESPACE, "--wait=true", "--timeout=120s")
    kai.install(lab, older)
    install_rev = release(lab)["revision"]
    assert history(lab)[-1]["description"] == "Install complete"
    kai.install(lab, newer)
    before = running(lab)
    assert components(before) == at(newer)
    started = time.monotonic()
    proc = helm(lab, "rollback", kai.RELEASE, str(install_rev), check=False)
    took = time.monotonic() - started
    print(f"rollback to install revision {install_rev}: rc {proc.returncode} in {took:.1f}s")
    print(proc.stderr.strip())
    assert proc.returncode != 0
    assert RESERVATION_NS_ERROR in proc.stderr, proc.stderr
    last = history(lab)[-1]
    assert last["status"] == "failed", last
    watch_unchanged(lab, at(newer), seconds=10)
    assert running(lab)[kai.OPERATOR] == newer


def test_rollback_to_upgrade_revision_takes_back_only_the_operator(lab, versions):
    older, newer = versions
    if history(lab)[-1]["description"] != "Upgrade complete":
        upgrade_to(lab, older)  # an upgrade revision at the older release
    old_rev = release(lab)["revision"]
    kai.install(lab, newer)
    started = time.monotonic()
    proc = helm(lab, "rollback", kai.RELEASE, str(old_rev), "--wait", "--timeout=120s")
    print(f"rollback to upgrade revision {old_rev}: {time.monotonic() - started:.1f}s")
    print(proc.stdout.strip())
    assert "Rollback was a success!" in proc.stdout, proc.stdout
    rel = release(lab)
    assert rel["status"] == "deployed" and rel["app_version"] == f"{older}+standin", rel
    kai.wait_rolled_out(lab, names=[kai.OPERATOR])
    assert running(lab)[kai.OPERATOR] == older  # the operator went back ...
    # ... and reconciles kai-config, which still names the newer tags: nothing else moves
    watch_unchanged(lab, at(newer))
    cfg = kai.config(lab)
    assert kai.config_current(cfg) and cfg["spec"]["standin"]["release"] == newer


def test_upgrade_to_the_older_chart_restores_every_component(lab, versions):
    older, newer = versions
    kai.install(lab, newer)
    assert components(running(lab)) == at(newer)
    result = kai.install(lab, older)
    print(f"helm upgrade {newer} -> {older}: {result}")
    assert result["action"] == "upgrade"
    state = running(lab)
    assert state[kai.OPERATOR] == older and components(state) == at(older)
    assert kai.config(lab)["spec"]["standin"]["release"] == older


def test_uninstall_keeps_crds_queues_shard_namespace_and_install_brings_it_back(
    lab, kube, versions
):
    older, newer = versions
    kai.install(lab, newer)
    queues = {
        q["metadata"]["name"]: (q["metadata"]["uid"], q["spec"])
        for q in kube.json("get", "queues.scheduling.run.ai")["items"]
    }
    started = time.monotonic()
    helm(lab, "uninstall", kai.RELEASE, "--wait", "--timeout=180s")
    print(f"helm uninstall: {time.monotonic() - started:.1f}s")
    for crd in (
        "configs.kai.scheduler",
        "schedulingshards.kai.scheduler",
        "queues.scheduling.run.ai",
        "podgroups.scheduling.run.ai",
        "bindrequests.scheduling.run.ai",
    ):
        kube("get", "crd", crd)
    kube("get", "schedulingshards.kai.scheduler", "default")
    kube("get", "namespace", kai.RESERVATION_NAMESPACE)
    assert {n for n in queues} >= {"default-parent-queue", "default-queue"}
    for name, (uid, _) in queues.items():
        assert kube.json("get", "queues.scheduling.run.ai", name)["metadata"]["uid"] == uid
    # what the operator made went with kai-config (the post-delete hook)
    assert kube("get", "configs.kai.scheduler", "kai-config", check=False).returncode != 0
    assert not kai.deployments(lab)
    for hook in ("mutatingwebhookconfiguration/mutating-kai-admission",
                 "validatingwebhookconfiguration/validating-kai-admission",
                 "validatingwebhookconfiguration/kai-podgroup-validation-v2alpha2",
                 "validatingwebhookconfiguration/kai-queue-validation-v2"):  # fmt: skip
        assert kube("get", hook, check=False).returncode != 0
    result = kai.install(lab, older)
    print(f"helm install {older} after uninstall: {result}")
    assert result["action"] == "install"
    assert components(running(lab)) == at(older)
    after = {
        q["metadata"]["name"]: (q["metadata"]["uid"], q["spec"])
        for q in kube.json("get", "queues.scheduling.run.ai")["items"]
    }
    assert after == queues


def test_hand_replaced_config_rolls_back_until_the_next_post_upgrade_hook(lab, kube, versions):
    older, newer = versions
    old_config = kai.config(lab)
    kai.install(lab, newer)
    current = kai.config(lab)
    # kai-config replaced by hand with the older spec (as rollout.yml restores a snapshot);
    # a custom resource is only replaced at its current resourceVersion
    old_config["metadata"]["resourceVersion"] = current["metadata"]["resourceVersion"]
    replaced = {
        "apiVersion": old_config["apiVersion"],
        "kind": old_config["kind"],
        "metadata": {
            k: old_config["metadata"][k]
            for k in ("name", "labels", "annotations", "resourceVersion")
            if k in old_config["metadata"]
        },
        "spec": old_config["spec"],
    }
    kube("replace", "-f", "-", input_text=json.dumps(replaced))
    started = time.monotonic()
    kai.wait_operator(lab)
    print(f"components back after kai-config replaced: {time.monotonic() - started:.1f}s")
    state = running(lab)
    assert components(state) == at(older)
    assert state[kai.OPERATOR] == newer  # helm and the operator still say newer
    result = upgrade_to(lab, newer)
    print(f"next helm upgrade: {result}")
    assert components(running(lab)) == at(newer)
    assert kai.config(lab)["spec"]["standin"]["release"] == newer
