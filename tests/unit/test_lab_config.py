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


@pytest.mark.parametrize("value", ["0", "21", "three"])
def test_fleet_size_out_of_range_is_refused(monkeypatch, value):
    monkeypatch.setenv("KAIOPS_LAB_CLUSTERS", value)
    with pytest.raises(LabError, match="KAIOPS_LAB_CLUSTERS"):
        LabConfig.fleet_from_env()


def test_fleet_of_one_is_the_lab_as_before(monkeypatch):
    monkeypatch.delenv("KAIOPS_LAB_CLUSTERS", raising=False)
    (cfg,) = LabConfig.fleet_from_env()
    assert cfg == LabConfig.from_env()
    assert (cfg.name, cfg.netns, cfg.network.node_ip) == ("kaiops", "", "10.250.0.1")
    assert all(c.prefix == () for c in components.plan(cfg, fake_binaries(), "p", Path("/s")))


def test_the_selected_cluster_is_one_by_default_and_kaiops_lab_cluster_picks_another(monkeypatch):
    monkeypatch.delenv("KAIOPS_LAB_CLUSTER", raising=False)
    assert LabConfig.selected() == LabConfig.from_env(1)
    monkeypatch.setenv("KAIOPS_LAB_CLUSTER", "2")
    assert LabConfig.selected() == LabConfig.from_env(2)
    assert LabConfig.selected().name == "kaiops-2"
    monkeypatch.setenv("KAIOPS_LAB_CLUSTER", "0")
    with pytest.raises(LabError, match="KAIOPS_LAB_CLUSTER"):
        LabConfig.selected()


def test_lab_env_points_the_shell_and_the_lab_inventory_at_the_selected_cluster(
    monkeypatch, capsys
):
    """make -s lab-env: KUBECONFIG is cluster 1's, as before; with KAIOPS_LAB_CLUSTER=2 it is
    cluster 2's, and so is KAIOPS_LAB_KUBECONFIG, which inventories/lab reads."""
    from kailab import __main__ as cli

    class FakeLab:
        def binaries(self):
            return {"kubectl": Path("/b/kubectl"), "helm": Path("/h/helm")}

    fleet = [LabConfig.from_env(1)]
    monkeypatch.delenv("KAIOPS_LAB_CLUSTER", raising=False)
    cli._env(FakeLab(), fleet)
    one = capsys.readouterr().out
    assert f"export KUBECONFIG={LabConfig.from_env(1).kubeconfig}\n" in one
    assert "KAIOPS_LAB_KUBECONFIG" not in one
    monkeypatch.setenv("KAIOPS_LAB_CLUSTER", "2")
    cli._env(FakeLab(), fleet)
    two = capsys.readouterr().out
    assert f"export KUBECONFIG={LabConfig.from_env(2).kubeconfig}\n" in two
    assert f"export KAIOPS_LAB_KUBECONFIG={LabConfig.from_env(2).kubeconfig}\n" in two
    assert f"export KAIOPS_LAB_CHARTS={LabConfig.from_env(2).path('charts')}\n" in two


def test_each_further_cluster_has_its_own_names_addresses_and_namespaces(monkeypatch):
    monkeypatch.setenv("KAIOPS_LAB_CLUSTERS", "3")
    fleet = LabConfig.fleet_from_env()
    assert [c.name for c in fleet] == ["kaiops", "kaiops-2", "kaiops-3"]
    for field in ("state_dir", "run_dir", "kubeconfig", "api_url", "cgroup_root"):
        values = [str(getattr(c, field)) for c in fleet]
        assert len(set(values)) == 3, (field, values)
    nets = [c.network for c in fleet[1:]]
    assert [n.node_ip for n in nets] == ["10.250.1.1", "10.250.2.1"]
    assert [n.host_ip for n in nets] == ["10.250.1.254", "10.250.2.254"]
    assert len({n.node_bridge for n in [fleet[0].network, *nets]}) == 3
    assert all(len(n.node_bridge) <= 15 for n in nets)  # a Linux interface name's limit
    assert len({str(c.net_pin) for c in fleet[1:]} | {str(c.mount_pin) for c in fleet[1:]}) == 4


def test_a_further_cluster_runs_whole_in_its_namespaces(monkeypatch):
    cfg = LabConfig.from_env(2)
    plan = components.plan(cfg, fake_binaries(), "p", Path("/s"))
    for comp in plan:
        assert comp.launch()[: len(comp.prefix)] == [
            "nsenter",
            f"--net={cfg.net_pin}",
            f"--mount={cfg.mount_pin}",
            "--",
        ], comp.name
        # the process's own command line is the binary's: `up` compares it to tell a change
        assert comp.launch()[len(comp.prefix) :] == comp.command()
    kubelet = next(c for c in plan if c.name == "kubelet")
    assert "cgroupRoot: /kaiops-2\n" in kubelet.files["kubelet/config.yaml"]
    plugin = next(c for c in plan if c.name == "fake-gpu-plugin")
    assert plugin.health.target == str(cfg.state_dir / "device-plugins" / "kaiops-fake-gpu.sock")
    one = components.plan(LabConfig.from_env(1), fake_binaries(), "p", Path("/s"))
    assert (
        "cgroupRoot" not in next(c for c in one if c.name == "kubelet").files["kubelet/config.yaml"]
    )
