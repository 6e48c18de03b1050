"""KAI Scheduler in the lab: our stand-in, or the real KAI from its released artifacts.

KAI can be neither built (the module proxy refuses it) nor pulled (no registry is
reachable) here, so by default the lab installs our stand-in (lab/kai-standin), packaged
as a chart named kai-scheduler whose version says what it is (v0.16.13+standin). With
`KAI_BUNDLE=<dir>` it installs a real KAI chart package and the image archives an
air-gapped site mirrors instead. Both go through the lab's helm as release
`kai-scheduler` in namespace `kai-scheduler`, so the collection sees one shape.

Which release the stand-in plays, and how its binder writes the capabilities ConfigMap,
comes from meta/kai_releases.yml, the only home of KAI release facts.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import sys
import tarfile
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import yaml

from .config import KAI_RELEASES_FILE, REPO, LabError, cache_root

RELEASE = "kai-scheduler"
NAMESPACE = "kai-scheduler"
CHART_SRC = REPO / "lab" / "charts" / "kai-scheduler"
STANDIN_REGISTRY = "kaiops.dev/kai-standin"
# Image names of KAI's chart (kai-contract.md §1.1) that the stand-in chart uses: the
# operator and the hook Jobs' crd-upgrader, and the components the operator makes.
STANDIN_IMAGES = (
    "operator",
    "crd-upgrader",
    "admission",
    "binder",
    "scheduler",
    "podgrouper",
    "podgroupcontroller",
    "queuecontroller",
    "resourcereservation",
)
STANDIN_MARK = "+standin"
# The stand-in's objects carry this label (the lab tests check it); which implementation runs is
# read from its containers' --standin-release flag (runs_standin), never from the label.
IMPLEMENTATION_LABEL = "kaiops.dev/kai-implementation"
STANDIN_ARG = "--standin-release"
# The fake-gpu-operator part (GPU ids on reservation pods) runs beside KAI, whichever KAI.
STATUS_NAMESPACE = "kaiops-gpu-status"
STATUS_NAME = "gpu-status-updater"
RESERVATION_NAMESPACE = "kai-resource-reservation"
ROLLOUT_TIMEOUT_S = 180
# KAI's install shape (kai-contract.md §14), the stand-in's and the real chart's alike: helm
# installs the operator; a post-install/post-upgrade hook applies Config kai-config; the
# operator makes these Deployments, owned by kai-config, and reports on kai-config's status.
OPERATOR = "kai-operator"
# the Services behind KAI's webhooks (pods and topologies, PodGroups, Queues)
WEBHOOK_SERVICES = ("admission", "podgroup-controller", "queue-controller")
CONFIG = "configs.kai.scheduler/kai-config"
COMPONENTS = (
    "admission",
    "binder",
    "kai-scheduler-default",
    "pod-grouper",
    "podgroup-controller",
    "queue-controller",
)
CONDITIONS = ("Reconciling", "Deployed", "Available", "DependenciesFulfilled", "Ready")


# ------------------------------------------------------------------ release facts


def releases(path: Path = KAI_RELEASES_FILE) -> dict:
    with open(path, encoding="utf-8") as fh:
        return yaml.safe_load(fh)


def resolve(version: str | None, facts: dict | None = None) -> str:
    """`pre`, `patched`, empty (= pre) or an exact tag, to an exact tag."""
    facts = facts or releases()
    version = (version or "pre").strip()
    return facts["pair"].get(version, version)


def release_row(version: str, facts: dict | None = None) -> dict:
    facts = facts or releases()
    tag = resolve(version, facts)
    for row in facts["releases"]:
        if row["version"] == tag:
            return row
    known = ", ".join(r["version"] for r in facts["releases"])
    raise LabError(
        f"Failed to pick KAI {tag}: meta/kai_releases.yml has no row for it; "
        f"set KAI_VERSION to pre, patched or one of {known}"
    )


# ------------------------------------------------------------------ what to install


@dataclass(frozen=True)
class Target:
    """One install: a chart package, the images it needs, the values that point at them."""

    version: str
    implementation: str  # "standin" or "real"
    chart: Path
    values: dict
    images: tuple[tuple[str, Path | None], ...]  # (reference, archive or None when tagged)


def _chart_digest() -> str:
    h = hashlib.sha256()
    for p in sorted(CHART_SRC.rglob("*")):
        if p.is_file():
            h.update(p.relative_to(CHART_SRC).as_posix().encode() + b"\0" + p.read_bytes())
    return h.hexdigest()[:12]


def package_standin_chart(
    lab, row: dict, out_dir: Path | None = None, faults: tuple[str, ...] = ()
) -> Path:
    """The stand-in chart for one release, self-contained like a release chart: its
    default values name the release and the binder behaviour that release has, and the
    faults a faulted build plays (none for a release's own chart)."""
    version = row["version"] + STANDIN_MARK
    out_dir = out_dir or cache_root() / "lab" / "kai" / f"chart-{_chart_digest()}"
    if faults:
        out_dir = out_dir / ("fault-" + "-".join(faults))
    wanted = out_dir / f"kai-scheduler-{version}.tgz"
    if wanted.exists():
        return wanted
    out_dir.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=out_dir) as tmp:
        chart = Path(tmp) / "kai-scheduler"
        shutil.copytree(CHART_SRC, chart)
        values = chart / "values.yaml"
        text = values.read_text()
        text = text.replace('  release: ""', f'  release: "{row["version"]}"', 1)
        text = text.replace(
            '  configmapWrite: ""', f'  configmapWrite: "{row["configmap_write"]}"', 1
        )
        if faults:
            text = text.replace("  faults: []", f"  faults: [{', '.join(faults)}]", 1)
        values.write_text(text)
        lab.helm(
            "package",
            str(chart),
            "--version",
            version,
            "--app-version",
            version,
            "-d",
            tmp,
        )
        built = sorted(Path(tmp).glob(f"kai-scheduler-{version}*.tgz"))
        if not built:
            raise LabError(f"Failed to package the stand-in chart {version}: no package in {tmp}")
        # whole or not at all: another up may read the cache at the same time
        os.replace(built[0], wanted)
    return wanted


# The faulted builds a drill can roll out to (lab/kai-standin/CONTRACT.md, "Faults"): each
# is the patched release's chart with one fault in its default values, published in a folder
# of its own beside a healthy copy of the pre-patch chart, so that a rollout whose chart
# reference names the folder upgrades to the faulted build and its supported downgrade (the
# recorded version from the same reference) returns to the healthy one. Only the lab makes
# them; the collection cannot turn a fault on.
FAULTED_BUILDS = (
    "gang-broken",
    "api-unauthorized",
    "burst-overpack",
    "admission-failure",
    "duplicate-reservation",
)


def publish_charts(lab, facts: dict | None = None) -> list[Path]:
    """Put the stand-in chart of each release of the pair into the lab's state folder
    (`charts/`), where the lab inventory points a playbook's chart reference, as an
    air-gapped site points it at its local chart packages; and the faulted builds into
    `charts/faults/<fault>/`."""
    facts = facts or releases()
    out = lab.cfg.path("charts")
    out.mkdir(parents=True, exist_ok=True)
    published = []
    pre, patched = facts["pair"]["pre"], facts["pair"]["patched"]
    healthy = {}
    for tag in (pre, patched):
        healthy[tag] = package_standin_chart(lab, release_row(tag, facts))
        dest = out / f"kai-scheduler-{tag}.tgz"
        shutil.copyfile(healthy[tag], dest)
        published.append(dest)
    for fault in FAULTED_BUILDS:
        folder = out / "faults" / fault
        folder.mkdir(parents=True, exist_ok=True)
        faulted = package_standin_chart(lab, release_row(patched, facts), faults=(fault,))
        for tag, pkg in ((patched, faulted), (pre, healthy[pre])):
            dest = folder / f"kai-scheduler-{tag}.tgz"
            shutil.copyfile(pkg, dest)
            published.append(dest)
    return published


def standin_target(lab, version: str | None, faults: tuple[str, ...] = ()) -> Target:
    """`faults`: the stand-in's faults (CONTRACT.md, "Faults") this install plays, as a value
    of the release's own chart; a later install without them turns them off again."""
    row = release_row(version)
    base = lab.standin_image_ref()
    refs = [f"{STANDIN_REGISTRY}/{name}:{row['version']}" for name in STANDIN_IMAGES]
    # the build id rolls the pods when the stand-in's code changed under one tag
    standin: dict = {"build": base.rsplit(":", 1)[1]}
    if faults:
        standin["faults"] = sorted(faults)
    return Target(
        version=row["version"],
        implementation="standin",
        chart=package_standin_chart(lab, row),
        values={"global": {"gpuSharing": True}, "standin": standin},
        images=tuple((ref, None) for ref in refs),
    )


def archive_refs(archive: Path) -> list[str]:
    """Image names inside an archive written by `docker save` or `skopeo copy oci-archive:`."""
    with tarfile.open(archive) as tar:
        names = set(tar.getnames())
        refs: list[str] = []
        if "manifest.json" in names:
            for entry in json.load(tar.extractfile("manifest.json")):
                refs += entry.get("RepoTags") or []
        if not refs and "index.json" in names:
            for m in json.load(tar.extractfile("index.json")).get("manifests", []):
                ann = m.get("annotations") or {}
                ref = ann.get("io.containerd.image.name") or ann.get(
                    "org.opencontainers.image.ref.name"
                )
                if ref:
                    refs.append(ref)
    return refs


def split_ref(ref: str) -> tuple[str, str, str]:
    """registry/path, last name, tag."""
    name, _, tag = ref.rpartition(":")
    if "/" in tag or not name:
        name, tag = ref, "latest"
    registry, _, last = name.rpartition("/")
    return registry, last, tag


def bundle_target(bundle: Path) -> Target:
    """A real KAI from the files `helm pull` and `docker save`/`skopeo copy` write."""
    bundle = Path(bundle)
    charts = sorted(bundle.glob("kai-scheduler-*.tgz"))
    archives = sorted((bundle / "images").glob("*.tar"))
    if len(charts) != 1:
        raise LabError(
            f"Failed to read KAI bundle {bundle}: expected one kai-scheduler-<version>.tgz "
            f"(helm pull oci://ghcr.io/kai-scheduler/kai-scheduler/kai-scheduler --version <v>), "
            f"found {len(charts)}"
        )
    if not archives:
        raise LabError(
            f"Failed to read KAI bundle {bundle}: no image archives in {bundle}/images/*.tar"
        )
    with tarfile.open(charts[0]) as tar:
        member = next((m for m in tar.getmembers() if m.name.endswith("/Chart.yaml")), None)
        if member is None:
            raise LabError(f"Failed to read KAI bundle chart {charts[0]}: no Chart.yaml")
        chart_meta = yaml.safe_load(tar.extractfile(member))
    images = []
    registries, tags = set(), set()
    for archive in archives:
        refs = archive_refs(archive)
        if not refs:
            raise LabError(f"Failed to read image archive {archive}: it names no image")
        for ref in refs:
            registry, _, tag = split_ref(ref)
            registries.add(registry)
            tags.add(tag)
            images.append((ref, archive))
    if len(registries) != 1 or len(tags) != 1:
        raise LabError(
            f"Failed to read KAI bundle {bundle}: its images use {len(registries)} registries "
            f"and {len(tags)} tags ({sorted(registries)}, {sorted(tags)}); expected one of each"
        )
    version = str(chart_meta.get("appVersion") or chart_meta.get("version"))
    return Target(
        version=version.split("+", 1)[0],
        implementation="standin" if version.endswith(STANDIN_MARK) else "real",
        chart=charts[0],
        values={"global": {"registry": registries.pop(), "tag": tags.pop(), "gpuSharing": True}},
        images=tuple(images),
    )


# ------------------------------------------------------------------ objects beside KAI


def runtime_class() -> dict:
    """KAI's admission sets runtimeClassName nvidia on fraction pods; fake-gpu-operator
    provides that class with handler runc in KAI's own tests, the lab does here."""
    return {
        "apiVersion": "node.k8s.io/v1",
        "kind": "RuntimeClass",
        "metadata": {"name": "nvidia", "labels": {"kaiops.dev/lab": "true"}},
        "handler": "runc",
    }


def status_updater_objects(cfg, image: str) -> list[dict]:
    """The part fake-gpu-operator's status updater plays in KAI's tests: GPU ids on
    reservation pods, from the kubelet's pod-resources API on the real node."""
    labels = {"app": STATUS_NAME, "kaiops.dev/lab": "true"}
    pod_resources = cfg.path("kubelet", "root", "pod-resources")
    meta = {"name": STATUS_NAME, "labels": labels}
    return [
        {
            "apiVersion": "v1",
            "kind": "Namespace",
            "metadata": {"name": STATUS_NAMESPACE, "labels": labels},
        },
        {
            "apiVersion": "v1",
            "kind": "ServiceAccount",
            "metadata": {**meta, "namespace": STATUS_NAMESPACE},
        },
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRole",
            "metadata": {"name": f"kaiops-{STATUS_NAME}", "labels": labels},
            "rules": [
                {
                    "apiGroups": [""],
                    "resources": ["pods"],
                    "verbs": ["get", "list", "watch", "patch"],
                },
                {"apiGroups": [""], "resources": ["nodes"], "verbs": ["get", "list", "watch"]},
            ],
        },
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRoleBinding",
            "metadata": {"name": f"kaiops-{STATUS_NAME}", "labels": labels},
            "roleRef": {
                "apiGroup": "rbac.authorization.k8s.io",
                "kind": "ClusterRole",
                "name": f"kaiops-{STATUS_NAME}",
            },
            "subjects": [
                {"kind": "ServiceAccount", "name": STATUS_NAME, "namespace": STATUS_NAMESPACE}
            ],
        },
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {**meta, "namespace": STATUS_NAMESPACE},
            "spec": {
                "replicas": 1,
                "strategy": {"type": "Recreate"},
                "selector": {"matchLabels": {"app": STATUS_NAME}},
                "template": {
                    "metadata": {"labels": labels},
                    "spec": {
                        "serviceAccountName": STATUS_NAME,
                        "nodeSelector": {"kubernetes.io/hostname": cfg.node_name},
                        "terminationGracePeriodSeconds": 2,
                        "containers": [
                            {
                                "name": STATUS_NAME,
                                "image": image,
                                "imagePullPolicy": "IfNotPresent",
                                "args": [
                                    "gpu-status-updater",
                                    f"--reservation-namespace={RESERVATION_NAMESPACE}",
                                    "--node-name=$(NODE_NAME)",
                                    "--pod-resources-socket=/pod-resources/kubelet.sock",
                                ],
                                "env": [
                                    {
                                        "name": "NODE_NAME",
                                        "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}},
                                    }
                                ],
                                # the kubelet's pod-resources socket is root's
                                "securityContext": {"runAsUser": 0},
                                "resources": {
                                    "requests": {"cpu": "5m", "memory": "16Mi"},
                                    "limits": {"memory": "96Mi"},
                                },
                                "volumeMounts": [
                                    {"name": "pod-resources", "mountPath": "/pod-resources"}
                                ],
                            }
                        ],
                        "volumes": [
                            {
                                "name": "pod-resources",
                                "hostPath": {"path": str(pod_resources), "type": "Directory"},
                            }
                        ],
                    },
                },
            },
        },
    ]


# ------------------------------------------------------------------ install and read


def helm_release(lab) -> dict | None:
    """The release as helm lists it, or None."""
    proc = lab.helm("list", "-n", NAMESPACE, "--filter", f"^{RELEASE}$", "-o", "json", check=False)
    if proc.returncode != 0:
        return None
    rows = json.loads(proc.stdout or "[]")
    return rows[0] if rows else None


def deployments(lab) -> list[dict]:
    proc = lab.kubectl("get", "deployments", "-n", NAMESPACE, "-o", "json", check=False)
    if proc.returncode != 0:
        return []
    return json.loads(proc.stdout).get("items", [])


def rolled_out(dep: dict) -> bool:
    """Kubernetes' own rollout rule: the controller saw this generation and every
    replica is updated and available."""
    spec, st = dep.get("spec") or {}, dep.get("status") or {}
    want = spec.get("replicas", 1)
    return (
        st.get("observedGeneration", 0) >= dep["metadata"].get("generation", 0)
        and st.get("updatedReplicas", 0) == want
        and st.get("availableReplicas", 0) == want
        and st.get("replicas", 0) == want  # no old pod left
    )


def wait_rolled_out(lab, timeout: float = ROLLOUT_TIMEOUT_S, names=None) -> float:
    """Wait for KAI Deployments (default: every one in the namespace) through kubectl's
    watch; seconds it took."""
    started = time.monotonic()
    names = list(names) if names is not None else [d["metadata"]["name"] for d in deployments(lab)]
    if not names:
        raise LabError(f"Failed to find KAI's Deployments in namespace {NAMESPACE}")
    for name in names:
        left = max(1.0, timeout - (time.monotonic() - started))
        proc = lab.kubectl(
            "rollout",
            "status",
            "-n",
            NAMESPACE,
            f"deployment/{name}",
            f"--timeout={left:.0f}s",
            check=False,
        )
        if proc.returncode != 0:
            raise LabError(f"Failed to roll out KAI Deployment {name}: {proc.stderr.strip()}")
    return time.monotonic() - started


def config(lab) -> dict | None:
    proc = lab.kubectl("get", CONFIG, "-o", "json", check=False)
    return json.loads(proc.stdout) if proc.returncode == 0 else None


def config_current(cfg: dict | None) -> bool:
    """kai-config's five conditions all stamped with its generation, Ready true: the
    operator has reconciled this spec and every component it makes has rolled out."""
    if not cfg:
        return False
    gen = cfg["metadata"].get("generation")
    conds = {c["type"]: c for c in (cfg.get("status") or {}).get("conditions") or []}
    return (
        all(t in conds and conds[t].get("observedGeneration") == gen for t in CONDITIONS)
        and conds["Ready"].get("status") == "True"
    )


def component_tags(lab) -> dict[str, str]:
    """The image tag each KAI Deployment's pod template runs: what the operator made."""
    out = {}
    for d in deployments(lab):
        image = d["spec"]["template"]["spec"]["containers"][0]["image"]
        out[d["metadata"]["name"]] = split_ref(image)[2]
    return out


def components_rolled_out(lab) -> bool:
    deps = {d["metadata"]["name"]: d for d in deployments(lab)}
    return all(n in deps and rolled_out(deps[n]) for n in (OPERATOR, *COMPONENTS))


def _kubectl_wait(lab, what: str, condition: str, left: float, *scope: str) -> None:
    """kubectl wait (a watch), bounded; ``scope``: the flags that pick the objects (-n, -l)."""
    proc = lab.kubectl(
        "wait",
        *scope,
        what,
        f"--for={condition}",
        f"--timeout={max(1.0, left):.0f}s",
        check=False,
    )
    if proc.returncode != 0:
        raise LabError(f"Failed to wait for {what} {condition}: {proc.stderr.strip()}")


def wait_operator(lab, timeout: float = ROLLOUT_TIMEOUT_S) -> dict:
    """Wait, through kubectl's watches and bounded, until the operator has rolled out, has
    made every component Deployment from kai-config, they have rolled out, and kai-config's
    conditions are current for its generation. Figures of each stage, in seconds."""
    started = time.monotonic()
    left = lambda: timeout - (time.monotonic() - started)  # noqa: E731
    wait_rolled_out(lab, timeout, names=[OPERATOR])
    operator_s = time.monotonic() - started
    _kubectl_wait(lab, CONFIG, "create", left())
    for name in COMPONENTS:
        # the operator makes them
        _kubectl_wait(lab, f"deployment/{name}", "create", left(), "-n", NAMESPACE)
    created_s = time.monotonic() - started
    while True:
        gen = ((config(lab) or {}).get("metadata") or {}).get("generation")
        # the operator stamps every condition with the generation it reconciled; Ready
        # at that generation means each Deployment it made from that spec has rolled out
        _kubectl_wait(
            lab,
            CONFIG,
            f'jsonpath={{.status.conditions[?(@.type=="Ready")].observedGeneration}}={gen}',
            left(),
        )
        _kubectl_wait(lab, CONFIG, "condition=Ready", left())
        if config_current(config(lab)):
            break
        if left() <= 0:
            raise LabError(f"Failed to see {CONFIG} reconciled: {json.dumps(config(lab))[:400]}")
    wait_rolled_out(lab, max(1.0, left()), names=COMPONENTS)  # what runs, read from what runs
    # A pod is Ready before its Service routes to it; the webhooks are failurePolicy Fail, so
    # until then the API server refuses every pod for KAI (the next stage's first pod), and
    # every PodGroup and Queue (KAI's podgroup-controller and queue-controller serve those).
    for service in WEBHOOK_SERVICES:
        _kubectl_wait(
            lab,
            "endpointslices",
            "jsonpath={.endpoints[0].conditions.ready}=true",
            left(),
            "-n",
            NAMESPACE,
            "-l",
            f"kubernetes.io/service-name={service}",
        )
    return {
        "operator_s": round(operator_s, 1),
        "components_created_s": round(created_s, 1),
        "ready_s": round(time.monotonic() - started, 1),
    }


def _values_file(values: dict, folder: Path) -> Path:
    path = folder / "values.yaml"
    path.write_text(yaml.safe_dump(values, sort_keys=True))
    return path


def install(
    lab,
    version: str | None = None,
    bundle: str | None = None,
    always: bool = False,
    faults: tuple[str, ...] = (),
) -> dict:
    """Converge the lab's KAI to one version (stand-in, playing `faults` if named) or one
    bundle; helm install or upgrade as needed (`always`: upgrade even when converged, so the
    hooks run again). Converged means helm's record, what the components run and kai-config's
    status agree. Returns figures of what happened."""
    target = bundle_target(Path(bundle)) if bundle else standin_target(lab, version, faults)
    lab.ensure_kai_images(target.images)
    if not bundle:
        publish_charts(lab)
        # a playbook may install either release of the pair through helm: both are imported
        for key in ("pre", "patched"):
            lab.ensure_kai_images(standin_target(lab, key).images)
    status_image = lab.standin_image_ref(name="gpu-status-updater")
    docs = [runtime_class(), *status_updater_objects(lab.cfg, status_image)]
    lab.kubectl(
        "apply",
        "--server-side",
        "--force-conflicts",
        "-f",
        "-",
        input_text="\n---\n".join(json.dumps(d) for d in docs),
    )
    current = helm_release(lab)
    chart_name = target.chart.name.removesuffix(".tgz")
    with tempfile.TemporaryDirectory() as tmp:
        values = _values_file(target.values, Path(tmp))
        if current and current.get("chart") == chart_name and current.get("status") == "deployed":
            applied = json.loads(
                lab.helm("get", "values", RELEASE, "-n", NAMESPACE, "-o", "json").stdout or "{}"
            )
            tag = target.values.get("global", {}).get("tag") or target.version
            tags = component_tags(lab)
            if (
                not always
                and applied == target.values
                and all(tags.get(n) == tag for n in (OPERATOR, *COMPONENTS))
                and components_rolled_out(lab)
                and config_current(config(lab))
            ):
                lab.log(
                    f"  KAI {target.version} ({describe(target.implementation)}) already installed"
                )
                return {"action": "none", "version": target.version, "seconds": 0.0}
        action = "upgrade" if current else "install"
        started = time.monotonic()
        lab.helm(
            "upgrade",
            "--install",
            RELEASE,
            str(target.chart),
            "-n",
            NAMESPACE,
            "--create-namespace",
            "-f",
            str(values),
            "--timeout",
            f"{ROLLOUT_TIMEOUT_S}s",
        )
    helm_s = time.monotonic() - started
    waited = wait_operator(lab)
    took = time.monotonic() - started
    done = {"install": "installed", "upgrade": "upgraded"}[action]
    lab.log(
        f"  KAI {target.version} ({describe(target.implementation)}) {done}: helm {helm_s:.1f}s, "
        f"every component made by the operator and rolled out, kai-config Ready, in {took:.1f}s"
    )
    return {
        "action": action,
        "version": target.version,
        "seconds": took,
        "helm_s": round(helm_s, 1),
        "rollout_wait": waited,
    }


def runs_standin(deployment: dict) -> bool:
    spec = deployment.get("spec", {}).get("template", {}).get("spec", {})
    return any(
        str(word).startswith(STANDIN_ARG)
        for c in spec.get("containers") or []
        for word in list(c.get("command") or []) + list(c.get("args") or [])
    )


def describe(implementation: str) -> str:
    return "KAI stand-in" if implementation == "standin" else "KAI"


def status(lab) -> dict:
    """Release, version, implementation and each Deployment's readiness."""
    rel = helm_release(lab)
    deps = deployments(lab)
    # What runs, not a label (KAI's operator keeps the stand-in's labels when the real KAI is
    # installed over it): the stand-in starts each of its containers with --standin-release.
    impl = {runs_standin(d) for d in deps}
    implementation = "standin" if True in impl else ("real" if deps else None)
    cfg = config(lab)
    conds = {c["type"]: c for c in ((cfg or {}).get("status") or {}).get("conditions") or []}
    return {
        "config": {
            "generation": cfg["metadata"].get("generation"),
            "ready": (conds.get("Ready") or {}).get("status"),
            "current": config_current(cfg),
        }
        if cfg
        else None,
        "release": rel.get("name") if rel else None,
        "revision": int(rel["revision"]) if rel else None,
        "chart": rel.get("chart") if rel else None,
        "app_version": rel.get("app_version") if rel else None,
        "status": rel.get("status") if rel else None,
        "implementation": implementation,
        "deployments": [
            {
                "name": d["metadata"]["name"],
                "ready": "%s/%s"
                % ((d.get("status") or {}).get("readyReplicas", 0), d["spec"].get("replicas", 1)),
                "rolled_out": rolled_out(d),
            }
            for d in deps
        ],
    }


MIRROR_REGISTRY = "mirror.lab.kaiops.dev/kai-scheduler"


def export_bundle(lab, version: str | None, dest: Path, registry: str = MIRROR_REGISTRY) -> Path:
    """Write the stand-in as an air-gapped site's bundle: the chart package and one image
    archive per image, named as a site's mirror would name them. The mirror names are
    removed from containerd afterwards, so installing the bundle really imports them."""
    target = standin_target(lab, version)
    lab.ensure_kai_images(target.images)
    dest = Path(dest)
    (dest / "images").mkdir(parents=True, exist_ok=True)
    shutil.copyfile(target.chart, dest / target.chart.name)
    for ref, _ in target.images:
        _, name, tag = split_ref(ref)
        mirror = f"{registry}/{name}:{tag}"
        lab.ctr("images", "tag", "--force", ref, mirror)
        try:
            lab.ctr("images", "export", str(dest / "images" / f"{name}.tar"), mirror)
        finally:
            lab.ctr("images", "rm", mirror)
    return dest


def main(argv: list[str]) -> int:
    facts = releases()
    if argv[:1] == ["versions"]:
        pair = facts["pair"]
        print(f"pre={pair['pre']} patched={pair['patched']}")
        for key in ("pre", "patched"):
            row = release_row(pair[key], facts)
            print(
                f"note: {key} {row['version']}: {row['configmap_write']} ({row['source']})",
                file=sys.stderr,
            )
        return 0
    if argv[:1] == ["behaviour"] and len(argv) == 2:
        try:
            print(release_row(argv[1], facts)["configmap_write"])
        except LabError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 2
        return 0
    print("usage: python -m kailab.kai versions | behaviour <version>", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
