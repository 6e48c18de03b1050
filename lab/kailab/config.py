"""Fixed names, pinned versions and the lab's configuration as data.

One state folder per lab holds everything a running lab owns (kwok's habit):
fixed file names below, a version stamp in lab.json, so `down` can find and
undo all of it even after a killed `up`.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[2]
VERSIONS_FILE = REPO / "lab" / "versions.yaml"
# KAI's release facts belong to the collection; the lab reads them from there.
KAI_RELEASES_FILE = REPO / "meta" / "kai_releases.yml"

# Fixed file names inside the state folder.
STAMP = "lab.json"
PLAN = "plan.json"
RESTORE = "host-restore.json"
KUBECONFIG = "kubeconfig"
PKI = "pki"
PIDS = "pids"
LOGS = "logs"

# The process tree's marker: every lab process gets it in its environment so
# `down` finds processes of a lab whose pid files were never written.
ENV_MARKER = "KAIOPS_LAB"


class LabError(Exception):
    """Base error of the lab library; messages read "Failed to <verb> <object>: <reason>"."""


def load_versions(path: Path = VERSIONS_FILE) -> dict:
    with open(path, encoding="utf-8") as fh:
        return yaml.safe_load(fh)


def cache_root() -> Path:
    return Path(os.environ.get("KAIOPS_CACHE", Path.home() / ".cache" / "kaiops"))


def family_key(versions: dict, family: str) -> str:
    """Cache key of a Go program family: version plus a hash of its wrapper go.sum."""
    spec = versions[family]
    wrapper = REPO / spec["wrapper"]
    # go.sum pins the dependencies; for our own programs the source is part of the key too.
    inputs = [wrapper / "go.sum"]
    if spec["version"] == "local":
        inputs += sorted(p for p in wrapper.rglob("*.go") if not p.name.endswith("_test.go"))
    digest = hashlib.sha256()
    for path in inputs:
        if path.exists():
            rel = path.relative_to(wrapper).as_posix()
            digest.update(rel.encode() + b"\0" + path.read_bytes())
    return f"{family}-{spec['version']}-{digest.hexdigest()[:8]}"


def _env_int(name: str, default: int, low: int, high: int) -> int:
    raw = os.environ.get(name, str(default))
    try:
        value = int(raw)
    except ValueError:
        value = None
    if value is None or not low <= value <= high:
        raise LabError(f"Failed to read {name}: {raw!r} is not a whole number in {low}..{high}")
    return value


@dataclass(frozen=True)
class Network:
    """Addresses live on interfaces the lab creates; nothing else is bound or dialled.

    The first cluster lives in the host's network namespace (today's lab). Every further
    cluster of a fleet lives whole in a network namespace of its own (`netns`), joined to the
    host by one veth pair: `node_bridge` is then the host's end (`host_ip`) and `node_ip` the
    namespace's. The namespace has no default route, so nothing of one cluster reaches another's.
    """

    node_bridge: str = "kaiops0"
    node_ip: str = "10.250.0.1"
    node_prefix: int = 24
    cni_bridge: str = "kaiops-cni0"
    pod_cidr: str = "10.244.0.0/24"
    cluster_cidr: str = "10.244.0.0/16"
    service_cidr: str = "10.96.0.0/16"
    kubernetes_service_ip: str = "10.96.0.1"
    # KWOK pods get addresses from here; nothing answers there, so it is routed nowhere.
    kwok_pod_cidr: str = "10.251.0.0/16"
    kwok_node_ip: str = "10.250.0.2"
    netns: str = ""
    host_ip: str = ""

    @classmethod
    def for_cluster(cls, index: int, name: str) -> Network:
        """Cluster `index` (1-based) of a fleet: the first one is today's lab, unchanged."""
        if index == 1:
            return cls()
        subnet = f"10.250.{index - 1}"
        return cls(
            node_bridge=f"kaiops{index}h",
            node_ip=f"{subnet}.1",
            kwok_node_ip=f"{subnet}.2",
            netns=name,
            host_ip=f"{subnet}.254",
        )


@dataclass(frozen=True)
class GpuNodes:
    count: int = 4
    gpus_per_node: int = 8
    product: str = "NVIDIA-A100-SXM4-80GB"
    memory_mib: int = 81920
    name_prefix: str = "kwok-gpu-"


# A fleet lab's size: LAB_CLUSTERS clusters side by side (make passes it on).
MAX_CLUSTERS = 20
LAB_ROOT = Path("/var/lib/kaiops-lab")
RUN_ROOT = Path("/run/kaiops-lab")
# Persistent mount namespaces of the fleet's nodes are pinned here (a private mount).
NS_PINS = RUN_ROOT / ".ns"


@dataclass(frozen=True)
class LabConfig:
    name: str = "kaiops"
    state_dir: Path = Path("/var/lib/kaiops-lab/kaiops")
    run_dir: Path = Path("/run/kaiops-lab/kaiops")
    node_name: str = "kaiops-node"
    network: Network = field(default_factory=Network)
    gpu_nodes: GpuNodes = field(default_factory=GpuNodes)
    index: int = 1

    @classmethod
    def from_env(cls, index: int = 1) -> LabConfig:
        """Cluster `index` of the lab: 1 is `KAIOPS_LAB_NAME` (kaiops), n is `<name>-<n>`."""
        base = os.environ.get("KAIOPS_LAB_NAME", "kaiops")
        name = base if index == 1 else f"{base}-{index}"
        count = _env_int("KAIOPS_LAB_GPU_NODES", GpuNodes.count, 0, 1000)
        gpus = _env_int("KAIOPS_LAB_GPUS_PER_NODE", GpuNodes.gpus_per_node, 1, 16)
        state = LAB_ROOT / name
        if index == 1:
            state = Path(os.environ.get("KAIOPS_LAB_STATE", state))
        return cls(
            name=name,
            state_dir=state,
            run_dir=RUN_ROOT / name,
            network=Network.for_cluster(index, name),
            gpu_nodes=GpuNodes(count=count, gpus_per_node=gpus),
            index=index,
        )

    @classmethod
    def selected(cls) -> LabConfig:
        """The cluster a shell or a test suite works on: `KAIOPS_LAB_CLUSTER` (default 1). make
        test runs the lab tests on cluster 2 while the drills run on cluster 1."""
        return cls.from_env(_env_int("KAIOPS_LAB_CLUSTER", 1, 1, MAX_CLUSTERS))

    @classmethod
    def fleet_from_env(cls) -> list[LabConfig]:
        """Every cluster `LAB_CLUSTERS` asks for (default 1: today's lab alone)."""
        count = _env_int("KAIOPS_LAB_CLUSTERS", 1, 1, MAX_CLUSTERS)
        return [cls.from_env(i) for i in range(1, count + 1)]

    @classmethod
    def on_machine(cls, fleet: list[LabConfig]) -> list[LabConfig]:
        """The clusters `fleet` names and every other one of this lab found on the machine
        (a state folder or a namespace left by a larger fleet), in index order."""
        base = fleet[0].name
        found = {c.index for c in fleet}
        names = [p.name for p in LAB_ROOT.iterdir()] if LAB_ROOT.is_dir() else []
        names += [p.stem for p in NS_PINS.iterdir()] if NS_PINS.is_dir() else []
        for name in names:
            suffix = name[len(base) + 1 :] if name.startswith(f"{base}-") else ""
            if suffix.isdigit() and 2 <= int(suffix) <= MAX_CLUSTERS:
                found.add(int(suffix))
        return [cls.from_env(i) for i in sorted(found)]

    @property
    def netns(self) -> str:
        return self.network.netns

    @property
    def mount_pin(self) -> Path:
        """The node's mount namespace (clusters in a network namespace of their own only)."""
        return NS_PINS / f"{self.name}.mnt"

    @property
    def net_pin(self) -> Path:
        """The cluster's network namespace. Not in /run/netns: `ip netns add` would bind-mount
        that folder over itself, above the host cluster's pod namespaces, and containerd could
        then no longer remove them."""
        return NS_PINS / f"{self.name}.net"

    @property
    def cgroup_root(self) -> str:
        """Where the kubelet puts pods: the host's root for cluster 1, a subtree otherwise."""
        return f"/{self.name}" if self.netns else "/"

    @property
    def pod_cgroups(self) -> tuple[str, ...]:
        """Top-level cgroup folders of this cluster's pods in each v1 hierarchy."""
        return (self.name,) if self.netns else ("kubepods", "kubepods.slice")

    @property
    def device_plugin_dir(self) -> Path:
        """The kubelet's device-plugin folder as the host sees it (fixed in kubelet's code to
        /var/lib/kubelet/device-plugins; a fleet node gets its own bound over that path)."""
        if self.netns:
            return self.path("device-plugins")
        return Path("/var/lib/kubelet/device-plugins")

    def path(self, *parts: str) -> Path:
        return self.state_dir.joinpath(*parts)

    @property
    def kubeconfig(self) -> Path:
        return self.path(KUBECONFIG)

    @property
    def containerd_socket(self) -> Path:
        return self.run_dir / "containerd.sock"

    @property
    def api_url(self) -> str:
        return f"https://{self.network.node_ip}:6443"

    def to_json(self) -> str:
        return json.dumps(asdict(self), default=str, indent=2, sort_keys=True)
