"""Issue 15: a credential planted on the lab reaches no evidence bundle, in any encoding.

A fresh canary is planted in every place a credential sits in a cluster, in the KAI namespace
and in kube-system: Secret data (base64, and base64 of base64) and stringData, the
last-applied annotation (kubectl apply writes one on every object), a Deployment's args
(--api-token=<c>, --password <c>, a URL password) and env values (innocent names such as
DATABASE_URL=postgres://app:<c>@db, APP_CONFIG=token=<c>; a secret name), a ConfigMap outside GPU
sharing (a URL password, a YAML password, the canary as it is and base64-encoded) and the
-evar GPU-sharing ConfigMap's API_TOKEN. Then every read-only playbook runs (inventory.yml,
recovery.yml twice, gpu_access.yml --check, the rollout's preflight) and kai_snapshot, each
into its own bundle, and every file of every bundle is scanned for the canary: raw, base64 at
all three alignments (standard and URL-safe), base64 of base64, URL-encoded and hex.

The planted objects carry a label with this run's id and are deleted by it (only they are);
the Deployment has no replicas, so nothing is scheduled. The lab is shared: nothing here
installs, switches or changes KAI.
"""

from __future__ import annotations

import base64
import json
import os
import secrets
import subprocess
import sys
from pathlib import Path
from urllib.parse import quote, quote_plus

import pytest
import yaml
from kailab import images

REPO = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
NAMESPACES = ("kai-scheduler", "kube-system")
LABEL = "kaiops.dev/canary"
GPU_DEVICES = "GPU-5f3c2a1b-7d4e-4c8a-9b2f-1e6d0c3a8b7f"
WAIVER = {"reason": "canary test: the read-only preflight only", "approved_by": "pytest"}


# ------------------------------------------------------------------ what is planted


def b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


def planted(canary: str, run_id: str, namespace: str) -> list[dict]:
    """The objects of one namespace: each a place where issue 15 found, or could find, a leak."""
    name = f"kaiops-canary-{run_id}"
    labels = {LABEL: run_id}
    url = f"postgres://app:{canary}@db.example:5432/app"
    return [
        {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {"name": name, "labels": labels},
            "type": "Opaque",
            "data": {"token": b64(canary), "double": b64(b64(canary))},
            "stringData": {"password": canary, "url": url},
        },
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": name, "labels": labels},
            "data": {
                "DATABASE_URL": url,
                "config.yaml": f"database:\n  user: app\n  password: {canary}\n",
                "note": canary,
                "encoded": b64(canary),
            },
        },
        {
            # The GPU-sharing env ConfigMap by name: its values are evidence, but API_TOKEN is not.
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": f"{name}-abc1234-shared-gpu-0-evar", "labels": labels},
            "data": {
                "NVIDIA_VISIBLE_DEVICES": GPU_DEVICES,
                "GPU_PORTION": "0.5",
                "RUNAI_NUM_OF_GPUS": "0.5",
                "API_TOKEN": canary,
            },
        },
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": name, "labels": labels, "namespace": namespace},
            "spec": {
                "replicas": 0,
                "selector": {"matchLabels": labels},
                "template": {
                    "metadata": {"labels": labels},
                    "spec": {
                        "containers": [
                            {
                                "name": "app",
                                "image": images.BUSYBOX_REF,
                                "command": ["/bin/sh", "-c", f"exec app --token {canary}"],
                                "args": [
                                    f"--api-token={canary}",
                                    "--password",
                                    canary,
                                    f"--db={url}",
                                    "--fake-gpu-nodes",
                                ],
                                "env": [
                                    {"name": "DATABASE_URL", "value": url},
                                    {"name": "APP_CONFIG", "value": f"mode=fast&token={canary}"},
                                    {"name": "UPSTREAM", "value": f"Bearer {canary}"},
                                    {"name": "SERVICE_PASSWORD", "value": canary},
                                    {"name": "LOG_LEVEL", "value": "info"},
                                ],
                            }
                        ]
                    },
                },
            },
        },
    ]


@pytest.fixture(scope="module")
def canary(kube):
    """(canary, run id); the planted objects are deleted whatever the test did."""
    value = "kc7" + secrets.token_hex(10)  # lower case and digits: no entropy rule catches it
    run_id = secrets.token_hex(3)
    try:
        for namespace in NAMESPACES:
            kube.apply(*planted(value, run_id, namespace), namespace=namespace)
        yield value, run_id
    finally:
        for namespace in NAMESPACES:
            kube(
                "delete", "-n", namespace, "deployment,configmap,secret", "-l", f"{LABEL}={run_id}",
                "--wait=false", check=False,
            )  # fmt: skip


# ------------------------------------------------------------------ the encodings looked for


def b64_needle(data: bytes, offset: int, alphabet=base64.b64encode) -> bytes:
    """The part of base64(<offset bytes> + data) that depends on data alone."""
    encoded = alphabet(b"\0" * offset + data)
    return encoded[4 if offset else 0 : 4 * ((offset + len(data)) // 3)]


def encodings(canary: str) -> dict[str, bytes]:
    raw = canary.encode()
    found = {
        "raw": raw,
        "url-encoded": quote(canary, safe="").encode(),
        "url-encoded-plus": quote_plus(canary).encode(),
        "hex": raw.hex().encode(),
    }
    for offset in range(3):
        once = b64_needle(raw, offset)
        found[f"base64@{offset}"] = once
        found[f"base64url@{offset}"] = b64_needle(raw, offset, base64.urlsafe_b64encode)
        for outer in range(3):
            found[f"base64(base64@{offset})@{outer}"] = b64_needle(once, outer)
    assert all(len(n) >= 16 for n in found.values()), found
    return found


def test_encodings_find_the_canary_wherever_it_is_encoded():
    canary = "kc7" + secrets.token_hex(10)
    needles = encodings(canary)
    for prefix in ("", "x", "xy"):
        once = base64.b64encode((prefix + canary + "!").encode())
        assert needles[f"base64@{len(prefix)}"] in once
        for outer_prefix in (b"", b"a", b"ab"):
            twice = base64.b64encode(outer_prefix + once)
            assert any(n in twice for k, n in needles.items() if k.startswith("base64(")), prefix


# ------------------------------------------------------------------ the runs


def run_env(lab, evidence_root: Path) -> dict[str, str]:
    env = dict(os.environ)
    env.pop("KAIOPS_EVIDENCE_DIR", None)
    binaries = lab.binaries()
    tools = [str(Path(binaries["kubectl"]).parent), str(Path(binaries["helm"]).parent), str(BIN)]
    env.update(
        {
            "ANSIBLE_CONFIG": str(REPO / "ansible.cfg"),
            "KAIOPS_EVIDENCE_ROOT": str(evidence_root),
            "KAIOPS_LAB_KUBECONFIG": str(lab.cfg.kubeconfig),
            "KUBECONFIG": str(lab.cfg.kubeconfig),
            "PATH": os.pathsep.join(tools + [env.get("PATH", "")]),
            "ANSIBLE_NOCOLOR": "1",
        }
    )
    return env


def snapshot_playbook(path: Path, run_id: str) -> Path:
    """kai_snapshot of what was planted (objects in the task result too) and of the namespaces."""
    selector = [f"{LABEL}={run_id}"]
    planted_sel, whole = [], []
    for namespace in NAMESPACES:
        for kind, api_version in (("Secret", "v1"), ("ConfigMap", "v1"), ("Deployment", "apps/v1")):
            base = {"kind": kind, "api_version": api_version, "namespace": namespace}
            planted_sel.append(dict(base, label_selectors=selector))
            whole.append(base)
    play = [
        {
            "name": "Snapshot what the canary test planted",
            "hosts": "all",
            "gather_facts": False,
            "module_defaults": {
                "group/kaiops.runbooks.kai": {"kubeconfig": "{{ kaiops_kubeconfig }}"}
            },
            "tasks": [
                {
                    "name": "Snapshot the planted objects, returned in the task result too",
                    "kaiops.runbooks.kai_snapshot": {"name": "canary", "selections": planted_sel},
                },
                {
                    "name": "Snapshot the namespaces whole",
                    "kaiops.runbooks.kai_snapshot": {
                        "name": "namespaces",
                        "selections": whole,
                        "return_objects": False,
                    },
                },
            ],
        }
    ]
    path.write_text(yaml.safe_dump(play, sort_keys=False))
    return path


def rollout_args(kube) -> list[str]:
    """A version under test and a rollback target that pass the preflight gates on the lab, so
    the preflight also snapshots KAI; when the lab runs neither release of the pair, the
    defaults (the run is refused, and still leaves its bundle)."""
    releases = yaml.safe_load((REPO / "meta" / "kai_releases.yml").read_text())
    pair = [releases["pair"]["pre"], releases["pair"]["patched"]]
    read = kube("-n", "kai-scheduler", "get", "deployment", "binder", "-o", "json", check=False)
    current = None
    if read.returncode == 0:
        image = json.loads(read.stdout)["spec"]["template"]["spec"]["containers"][0]["image"]
        current = image.rsplit(":", 1)[-1]
    args = ["-e", json.dumps({"kaiops_rollout_regression_waiver": WAIVER})]
    if current in pair:
        target = pair[1 - pair.index(current)]
        args += [
            "-e",
            f"kaiops_kai_version={target}",
            "-e",
            f"kaiops_rollout_rollback_target={current}",
        ]
    return args


@pytest.fixture(scope="module")
def bundles(lab, kube, canary, tmp_path_factory):
    """Every read-only run against the lab with the canary planted: {run: its bundle folder}."""
    _value, run_id = canary
    work = tmp_path_factory.mktemp("canary")
    runs = {
        "inventory": ["playbooks/inventory.yml"],
        "recovery": ["playbooks/recovery.yml"],
        "recovery-check": ["playbooks/recovery.yml", "--check"],
        "gpu_access-check": ["playbooks/gpu_access.yml", "--check"],
        "rollout-preflight": ["rollout.yml", *rollout_args(kube)],
        "kai_snapshot": [str(snapshot_playbook(work / "snapshot.yml", run_id))],
    }
    found = {}
    for run, argv in runs.items():
        root = work / run
        done = subprocess.run(
            [str(BIN / "ansible-playbook"), *argv],
            env=run_env(lab, root), cwd=REPO, capture_output=True, text=True, timeout=600,
            check=False,
        )  # fmt: skip
        folders = [p for p in root.iterdir() if p.is_dir() and not p.is_symlink()]
        assert len(folders) == 1, (run, done.returncode, done.stdout[-4000:], done.stderr[-2000:])
        bundle = folders[0]
        assert (bundle / "status").read_text() == "complete\n", (run, done.stdout[-4000:])
        check = subprocess.run(
            ["sha256sum", "--strict", "-c", "manifest.sha256"],
            cwd=bundle, capture_output=True, text=True, check=False,
        )  # fmt: skip
        assert check.returncode == 0, (run, check.stdout, check.stderr)
        if run == "kai_snapshot":
            assert done.returncode == 0, done.stdout[-4000:]
        found[run] = bundle
    return found


# ------------------------------------------------------------------ the scan


def test_no_bundle_holds_the_canary_in_any_encoding(canary, bundles):
    value, _run_id = canary
    needles = encodings(value)
    leaks, scanned = [], 0
    for run, bundle in sorted(bundles.items()):
        for path in sorted(p for p in bundle.rglob("*") if p.is_file()):
            data = path.read_bytes()
            scanned += 1
            for encoding, needle in needles.items():
                if needle in data:
                    leaks.append(f"{run}: {path.relative_to(bundle)} ({encoding})")
    assert scanned >= 30, scanned
    assert leaks == [], "the canary reached evidence:\n" + "\n".join(leaks)


def _read_json(path: Path):
    return json.loads(path.read_text())


def test_the_planted_objects_were_read_and_what_the_board_needs_is_kept(canary, bundles):
    """The scan proves something only if the runs read the planted objects; and the evidence
    still carries what a change board needs (images, KAI's flags, GPU-sharing data)."""
    _value, run_id = canary
    name = f"kaiops-canary-{run_id}"
    snap = bundles["kai_snapshot"] / "snapshots" / "canary"
    index = _read_json(snap / "index.json")
    assert sum(s["count"] for s in index["selections"]) == 4 * len(NAMESPACES)
    for namespace in NAMESPACES:
        evar = _read_json(
            next(snap.glob(f"*-configmap/{namespace}/{name}-abc1234-shared-gpu-0-evar.json"))
        )
        assert evar["data"]["NVIDIA_VISIBLE_DEVICES"] == GPU_DEVICES
        assert evar["data"]["GPU_PORTION"] == "0.5"
        assert evar["data"]["API_TOKEN"].startswith("<redacted len~")
        plain = _read_json(next(snap.glob(f"*-configmap/{namespace}/{name}.json")))
        assert sorted(plain["data"]) == ["DATABASE_URL", "config.yaml", "encoded", "note"]
        assert all(v.startswith("<hashed len~") for v in plain["data"].values())
        secret = _read_json(next(snap.glob(f"*-secret/{namespace}/{name}.json")))
        assert "data" not in secret and "stringData" not in secret
        dep = _read_json(next(snap.glob(f"*-deployment/{namespace}/{name}.json")))
        container = dep["spec"]["template"]["spec"]["containers"][0]
        assert container["image"] == images.BUSYBOX_REF
        assert container["args"][-1] == "--fake-gpu-nodes"
        assert container["args"][0].startswith("--api-token=<redacted len~")
        assert container["args"][3].startswith("--db=postgres://app:<redacted len~")
        assert container["args"][3].endswith("@db.example:5432/app")
        env = {e["name"]: e["value"] for e in container["env"]}
        assert env["LOG_LEVEL"] == "info"
        assert env["DATABASE_URL"].startswith("postgres://app:<redacted len~")
    # The preflight snapshots KAI's namespace when its gates pass (rollout_args): the planted
    # Deployment is in it, redacted like any other.
    for found in (bundles["rollout-preflight"] / "snapshots").glob("before-change-*/*-deployment"):
        dep = _read_json(found / "kai-scheduler" / f"{name}.json")
        args = dep["spec"]["template"]["spec"]["containers"][0]["args"]
        assert args[0].startswith("--api-token=<redacted len~") and args[-1] == "--fake-gpu-nodes"
    inventory = _read_json(bundles["inventory"] / "inventory.json")
    kai = inventory["clusters"]["lab"]["kai"]
    components = {c["name"]: c for c in kai["components"]}
    assert name not in components and "binder" in components
    assert kai["version"] and components["binder"]["containers"][0]["tag"] == kai["version"]
    assert all("args" not in c for comp in kai["components"] for c in comp["containers"])
