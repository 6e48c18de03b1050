"""The lab's data: pinned versions agree everywhere, the plan is stable, host parsing holds."""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "lab"))

from kailab import components, host, images, nodes  # noqa: E402
from kailab.components import Binaries  # noqa: E402
from kailab.config import LabConfig, LabError, load_versions  # noqa: E402

GOLDEN = Path(__file__).parent / "fixtures" / "lab" / "plan.golden"
VERSIONS = load_versions()


@pytest.mark.parametrize("family", ["kubernetes", "etcd", "kwok", "helm"])
def test_versions_match_wrapper_go_mod(family):
    spec = VERSIONS[family]
    go_mod = (REPO / spec["wrapper"] / "go.mod").read_text()
    pinned = re.search(rf"^\s*(?:require\s+)?{re.escape(spec['module'])} (v\S+)", go_mod, re.M)
    assert pinned, f"{spec['module']} is not required in {spec['wrapper']}/go.mod"
    assert pinned.group(1) == spec["version"]
    assert (REPO / spec["wrapper"] / "go.sum").exists()


def test_own_programs_are_local_modules():
    spec = VERSIONS["fakegpu"]
    go_mod = (REPO / spec["wrapper"] / "go.mod").read_text()
    assert f"module {spec['module']}\n" in go_mod
    assert spec["version"] == "local"


def test_kubernetes_staging_modules_replaced_at_matching_version():
    go_mod = (REPO / VERSIONS["kubernetes"]["wrapper"] / "go.mod").read_text()
    staging = "v0." + VERSIONS["kubernetes"]["version"].split(".", 1)[1]
    replaced = re.findall(r"^\s+(k8s\.io/\S+) => k8s\.io/\S+ (v\S+)$", go_mod, re.M)
    assert len(replaced) > 25
    assert {v for _, v in replaced} == {staging}


def test_pause_image_matches_pinned_version():
    assert images.PAUSE_REF == VERSIONS["kubernetes"]["pause_image"]


def fake_binaries() -> Binaries:
    programs = [
        "etcd",
        "kube-apiserver",
        "kube-controller-manager",
        "kube-scheduler",
        "kubelet",
        "kube-proxy",
        "kwok",
        "containerd",
        "kaiops-fake-gpu",
    ]
    return Binaries({p: Path("/bin-cache") / p for p in programs}, {p: "vX" for p in programs})


def render_plan(cfg: LabConfig) -> str:
    plan = components.plan(
        cfg, fake_binaries(), "registry.k8s.io/pause:3.10.1", Path("/cache/stages.yaml")
    )
    lines = []
    for comp in plan:
        lines.append(f"# {comp.name} ports={','.join(comp.ports)} health={comp.health.target}")
        lines.append(" ".join(comp.command()))
        lines += [f"  file {name}" for name in sorted(comp.files)]
    return "\n".join(lines) + "\n"


def test_plan_matches_golden_file():
    """The default lab's dry run; after a reviewed change regenerate: KAIOPS_UPDATE_GOLDEN=1."""
    cfg = LabConfig(state_dir=Path("/state"), run_dir=Path("/run/lab"))
    text = render_plan(cfg)
    if os.environ.get("KAIOPS_UPDATE_GOLDEN"):
        GOLDEN.write_text(text)
    assert text == GOLDEN.read_text()


def test_plan_binds_only_loopback_or_lab_addresses():
    cfg = LabConfig(state_dir=Path("/state"), run_dir=Path("/run/lab"))
    allowed = ("127.0.0.1:", f"{cfg.network.node_ip}:", "unix:")
    for comp in components.plan(cfg, fake_binaries(), "p", Path("/s")):
        for port in comp.ports:
            assert port.startswith(allowed), (comp.name, port)


def test_plan_starts_dependencies_first():
    names = [c.name for c in components.plan(LabConfig(), fake_binaries(), "p", Path("/s"))]
    assert names.index("etcd") < names.index("kube-apiserver") < names.index("kubelet")
    assert names.index("containerd") < names.index("kubelet")


IPTABLES_SAVE = """\
*filter
:INPUT ACCEPT [0:0]
:FORWARD ACCEPT [0:0]
:KUBE-FORWARD - [0:0]
:KAIOPS-GUARD - [0:0]
:DOCKER-USER - [0:0]
-A INPUT -m comment --comment "kubernetes load balancer firewall" -j KUBE-PROXY-FIREWALL
-A FORWARD -j KAIOPS-GUARD
-A FORWARD -m comment --comment "kubernetes forwarding rules" -j KUBE-FORWARD
-A FORWARD -j DOCKER-USER
-A KUBE-FORWARD -m conntrack --ctstate INVALID -j DROP
COMMIT
*nat
:PREROUTING ACCEPT [0:0]
:CNI-abc - [0:0]
-A PREROUTING -m comment --comment "kubernetes service portals" -j KUBE-SERVICES
COMMIT
"""


def test_lab_chains_finds_only_lab_prefixes():
    found = host.lab_chains(IPTABLES_SAVE)
    assert found == [("filter", "KUBE-FORWARD"), ("filter", "KAIOPS-GUARD"), ("nat", "CNI-abc")]


def test_lab_jumps_keeps_quoted_comments_whole():
    jumps = host.lab_jumps(IPTABLES_SAVE)
    assert ("filter", ["FORWARD", "-j", "KAIOPS-GUARD"]) in jumps
    forward = [r for t, r in jumps if t == "filter" and "KUBE-FORWARD" in r]
    assert forward == [
        [
            "FORWARD",
            "-m",
            "comment",
            "--comment",
            "kubernetes forwarding rules",
            "-j",
            "KUBE-FORWARD",
        ]
    ]
    assert not any("DOCKER-USER" in r for _, r in jumps), "someone else's chain was selected"
    assert (
        "nat",
        [
            "PREROUTING",
            "-m",
            "comment",
            "--comment",
            "kubernetes service portals",
            "-j",
            "KUBE-SERVICES",
        ],
    ) in jumps


def test_gpu_nodes_are_described_as_data():
    cfg = LabConfig()
    docs = nodes.gpu_nodes(cfg)
    assert len(docs) == cfg.gpu_nodes.count
    node = docs[0]
    assert node["metadata"]["annotations"]["kwok.x-k8s.io/node"] == "fake"
    assert node["status"]["allocatable"]["nvidia.com/gpu"] == str(cfg.gpu_nodes.gpus_per_node)
    assert node["metadata"]["labels"]["nvidia.com/gpu.count"] == str(cfg.gpu_nodes.gpus_per_node)


@pytest.mark.parametrize(
    ("env", "field"),
    [
        ({"KAIOPS_LAB_GPU_NODES": "1001"}, "KAIOPS_LAB_GPU_NODES"),
        ({"KAIOPS_LAB_GPUS_PER_NODE": "0"}, "KAIOPS_LAB_GPUS_PER_NODE"),
        ({"KAIOPS_LAB_GPU_NODES": "four"}, "KAIOPS_LAB_GPU_NODES"),
    ],
)
def test_config_rejects_out_of_range_sizes(monkeypatch, env, field):
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    with pytest.raises(LabError, match=field):
        LabConfig.from_env()


def test_config_sizes_from_env(monkeypatch):
    monkeypatch.setenv("KAIOPS_LAB_GPU_NODES", "100")
    monkeypatch.setenv("KAIOPS_LAB_GPUS_PER_NODE", "4")
    cfg = LabConfig.from_env()
    assert (cfg.gpu_nodes.count, cfg.gpu_nodes.gpus_per_node) == (100, 4)
