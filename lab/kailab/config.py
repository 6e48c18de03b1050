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
    """Addresses live on interfaces the lab creates; nothing else is bound or dialled."""

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


@dataclass(frozen=True)
class GpuNodes:
    count: int = 4
    gpus_per_node: int = 8
    product: str = "NVIDIA-A100-SXM4-80GB"
    memory_mib: int = 81920
    name_prefix: str = "kwok-gpu-"


@dataclass(frozen=True)
class LabConfig:
    name: str = "kaiops"
    state_dir: Path = Path("/var/lib/kaiops-lab/kaiops")
    run_dir: Path = Path("/run/kaiops-lab/kaiops")
    node_name: str = "kaiops-node"
    network: Network = field(default_factory=Network)
    gpu_nodes: GpuNodes = field(default_factory=GpuNodes)

    @classmethod
    def from_env(cls) -> LabConfig:
        name = os.environ.get("KAIOPS_LAB_NAME", "kaiops")
        count = _env_int("KAIOPS_LAB_GPU_NODES", GpuNodes.count, 0, 1000)
        gpus = _env_int("KAIOPS_LAB_GPUS_PER_NODE", GpuNodes.gpus_per_node, 1, 16)
        state = Path(os.environ.get("KAIOPS_LAB_STATE", f"/var/lib/kaiops-lab/{name}"))
        return cls(
            name=name,
            state_dir=state,
            run_dir=Path(f"/run/kaiops-lab/{name}"),
            gpu_nodes=GpuNodes(count=count, gpus_per_node=gpus),
        )

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
