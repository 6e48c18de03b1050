"""The lab's components as data (kwok's habit): one builder per component.

Each builder returns a Component: the binary, its arguments, the ports it binds,
the files it needs written first and how to tell it is healthy. `plan()` lists
them in start order; `down` stops them in reverse. Version-dependent flags live
here and nowhere else.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from pathlib import Path

import yaml

from . import host
from .config import LOGS, PKI, LabConfig


@dataclass(frozen=True)
class Health:
    """How to tell a component is up: an HTTPS/HTTP URL, or a unix socket that accepts."""

    kind: str  # "https" | "http" | "socket"
    target: str
    client: str = ""  # leaf certificate stem used for https checks


@dataclass(frozen=True)
class Component:
    name: str
    binary: Path
    args: tuple[str, ...]
    ports: tuple[str, ...]
    health: Health
    files: dict[str, str] = field(default_factory=dict)
    env: dict[str, str] = field(default_factory=dict)
    version: str = ""
    # Run before the binary to enter the cluster's namespaces (a fleet's further clusters).
    # nsenter execs the binary in place, so the process's command line stays `command()`.
    prefix: tuple[str, ...] = ()

    def command(self) -> list[str]:
        return [str(self.binary), *self.args]

    def launch(self) -> list[str]:
        return [*self.prefix, *self.command()]


@dataclass(frozen=True)
class Binaries:
    """Where each program lives; filled from the build cache."""

    paths: dict[str, Path]
    versions: dict[str, str]

    def __getitem__(self, program: str) -> Path:
        return self.paths[program]


def _pki(cfg: LabConfig, name: str) -> str:
    return str(cfg.path(PKI, name))


def etcd(cfg: LabConfig, bins: Binaries) -> Component:
    return Component(
        name="etcd",
        binary=bins["etcd"],
        version=bins.versions["etcd"],
        args=(
            f"--name={cfg.name}",
            f"--data-dir={cfg.path('etcd')}",
            "--listen-client-urls=https://127.0.0.1:2379",
            "--advertise-client-urls=https://127.0.0.1:2379",
            "--listen-peer-urls=http://127.0.0.1:2380",
            "--initial-advertise-peer-urls=http://127.0.0.1:2380",
            f"--initial-cluster={cfg.name}=http://127.0.0.1:2380",
            "--listen-metrics-urls=http://127.0.0.1:2381",
            f"--cert-file={_pki(cfg, 'etcd-server.crt')}",
            f"--key-file={_pki(cfg, 'etcd-server.key')}",
            f"--trusted-ca-file={_pki(cfg, 'ca.crt')}",
            "--client-cert-auth=true",
            # A disposable single member: trade durability for a fast, quiet lab.
            "--unsafe-no-fsync=true",
            "--quota-backend-bytes=2147483648",
            "--log-level=warn",
        ),
        ports=("127.0.0.1:2379", "127.0.0.1:2380", "127.0.0.1:2381"),
        health=Health("http", "http://127.0.0.1:2381/health"),
    )


# The API server and the controller manager hold most of an idle cluster's memory (about 310
# and 120 MiB of 1,240). Go's collector lets a heap grow to twice what is live before it runs
# (GOGC=100); half of that brought a fleet of three from 3,745 to about 3,515 MiB (make lab-bench
# LAB_CLUSTERS=3, 2026-12-07), within issue 21's goal of 3.5 GiB, for a little more collector
# time in two processes of a lab that mostly waits. The same for the scheduler and kwok saved
# nothing measurable; the kubelet and containerd run the pods under test and are left alone.
LEAN_HEAP = {"GOGC": "50"}


def kube_apiserver(cfg: LabConfig, bins: Binaries) -> Component:
    net = cfg.network
    return Component(
        name="kube-apiserver",
        binary=bins["kube-apiserver"],
        version=bins.versions["kube-apiserver"],
        args=(
            f"--bind-address={net.node_ip}",
            f"--advertise-address={net.node_ip}",
            "--secure-port=6443",
            "--etcd-servers=https://127.0.0.1:2379",
            f"--etcd-cafile={_pki(cfg, 'ca.crt')}",
            f"--etcd-certfile={_pki(cfg, 'apiserver-etcd-client.crt')}",
            f"--etcd-keyfile={_pki(cfg, 'apiserver-etcd-client.key')}",
            f"--client-ca-file={_pki(cfg, 'ca.crt')}",
            f"--tls-cert-file={_pki(cfg, 'apiserver.crt')}",
            f"--tls-private-key-file={_pki(cfg, 'apiserver.key')}",
            f"--kubelet-certificate-authority={_pki(cfg, 'ca.crt')}",
            f"--kubelet-client-certificate={_pki(cfg, 'apiserver-kubelet-client.crt')}",
            f"--kubelet-client-key={_pki(cfg, 'apiserver-kubelet-client.key')}",
            "--kubelet-preferred-address-types=InternalIP,Hostname",
            # Service IPs are routed nowhere on the host (nothing may leave the lab), so the
            # API server reaches webhooks (KAI's admission) at their endpoints' pod IPs.
            "--enable-aggregator-routing=true",
            f"--service-account-key-file={_pki(cfg, 'sa.pub')}",
            f"--service-account-signing-key-file={_pki(cfg, 'sa.key')}",
            "--service-account-issuer=https://kubernetes.default.svc.cluster.local",
            f"--service-cluster-ip-range={net.service_cidr}",
            "--authorization-mode=Node,RBAC",
            # The default admission plugins stay on; NodeRestriction is added as kubeadm does.
            "--enable-admission-plugins=NodeRestriction",
            "--allow-privileged=true",
            "--profiling=false",
            "--v=1",
        ),
        ports=(f"{net.node_ip}:6443",),
        health=Health("https", f"{cfg.api_url}/readyz", client="admin"),
        env=LEAN_HEAP,
    )


def kube_controller_manager(cfg: LabConfig, bins: Binaries) -> Component:
    return Component(
        name="kube-controller-manager",
        binary=bins["kube-controller-manager"],
        version=bins.versions["kube-controller-manager"],
        args=(
            f"--kubeconfig={cfg.path('controller-manager.kubeconfig')}",
            f"--authentication-kubeconfig={cfg.path('controller-manager.kubeconfig')}",
            f"--authorization-kubeconfig={cfg.path('controller-manager.kubeconfig')}",
            "--bind-address=127.0.0.1",
            "--secure-port=10257",
            "--controllers=*",
            f"--root-ca-file={_pki(cfg, 'ca.crt')}",
            f"--service-account-private-key-file={_pki(cfg, 'sa.key')}",
            f"--cluster-signing-cert-file={_pki(cfg, 'ca.crt')}",
            f"--cluster-signing-key-file={_pki(cfg, 'ca.key')}",
            "--use-service-account-credentials=true",
            f"--service-cluster-ip-range={cfg.network.service_cidr}",
            "--leader-elect=false",
            # Quicker than the 40 s default, so a stopped kubelet shows NotReady during drills.
            "--node-monitor-grace-period=20s",
            "--v=1",
        ),
        ports=("127.0.0.1:10257",),
        health=Health("https", "https://127.0.0.1:10257/healthz"),
        env=LEAN_HEAP,
    )


def kube_scheduler(cfg: LabConfig, bins: Binaries) -> Component:
    return Component(
        name="kube-scheduler",
        binary=bins["kube-scheduler"],
        version=bins.versions["kube-scheduler"],
        args=(
            f"--kubeconfig={cfg.path('scheduler.kubeconfig')}",
            f"--authentication-kubeconfig={cfg.path('scheduler.kubeconfig')}",
            f"--authorization-kubeconfig={cfg.path('scheduler.kubeconfig')}",
            "--bind-address=127.0.0.1",
            "--secure-port=10259",
            "--leader-elect=false",
            "--v=1",
        ),
        ports=("127.0.0.1:10259",),
        health=Health("https", "https://127.0.0.1:10259/healthz"),
    )


def containerd(cfg: LabConfig, bins: Binaries, pause_image: str) -> Component:
    net = cfg.network
    cri = 'plugins."io.containerd.grpc.v1.cri"'
    toml = f"""# Generated by kaiops lab: one node's containerd, apart from any system containerd.
version = 2
root = "{cfg.path("containerd", "root")}"
state = "{cfg.run_dir / "containerd"}"
disabled_plugins = ["io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.btrfs",
  "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.devmapper"]

[grpc]
  address = "{cfg.containerd_socket}"

[ttrpc]
  address = "{cfg.run_dir / "containerd.ttrpc.sock"}"

[plugins."io.containerd.internal.v1.opt"]
  path = "{cfg.path("containerd", "opt")}"

[{cri}]
  sandbox_image = "{pause_image}"
  enable_cdi = false
  # This host withholds CAP_SYS_RESOURCE, so negative OOM scores (the kubelet asks
  # -998 for sandboxes) cannot be set: clamp them to containerd's own score.
  restrict_oom_score_adj = true

[{cri}.containerd]
  snapshotter = "overlayfs"
  default_runtime_name = "runc"

[{cri}.containerd.runtimes.runc]
  runtime_type = "io.containerd.runc.v2"

[{cri}.containerd.runtimes.runc.options]
  # PID 1 is not systemd here: cgroupfs, like the kubelet.
  SystemdCgroup = false
  Root = "{cfg.run_dir / "runc"}"

[{cri}.cni]
  bin_dir = "/usr/lib/cni"
  conf_dir = "{cfg.path("cni", "net.d")}"
"""
    cni = {
        "cniVersion": "0.4.0",
        "name": f"kaiops-{cfg.name}",
        "plugins": [
            {
                "type": "bridge",
                "bridge": net.cni_bridge,
                "isGateway": True,
                "ipMasq": False,
                "hairpinMode": True,
                "ipam": {
                    "type": "host-local",
                    "ranges": [[{"subnet": net.pod_cidr}]],
                    "routes": [{"dst": "0.0.0.0/0"}],
                    "dataDir": str(cfg.path("cni", "ipam")),
                },
            }
        ],
    }
    return Component(
        name="containerd",
        binary=bins["containerd"],
        version=bins.versions["containerd"],
        args=(f"--config={cfg.path('containerd', 'config.toml')}", "--log-level=warn"),
        ports=(f"unix:{cfg.containerd_socket}",),
        health=Health("socket", str(cfg.containerd_socket)),
        files={
            "containerd/config.toml": toml,
            "cni/net.d/10-kaiops.conflist": json.dumps(cni, indent=2) + "\n",
        },
        # There is no registry: a pull must fail here, never reach out. Any pull
        # goes to a proxy address on loopback where nothing listens.
        env={
            "HTTP_PROXY": "http://127.0.0.1:9",
            "HTTPS_PROXY": "http://127.0.0.1:9",
            "NO_PROXY": "",
        },
    )


def kubelet(cfg: LabConfig, bins: Binaries, gpu_devices: int = 2) -> Component:
    net = cfg.network
    config = {
        "apiVersion": "kubelet.config.k8s.io/v1beta1",
        "kind": "KubeletConfiguration",
        "address": net.node_ip,
        "port": 10250,
        "readOnlyPort": 0,
        "healthzBindAddress": "127.0.0.1",
        "healthzPort": 10248,
        "authentication": {
            "anonymous": {"enabled": False},
            "webhook": {"enabled": True},
            "x509": {"clientCAFile": _pki(cfg, "ca.crt")},
        },
        "authorization": {"mode": "Webhook"},
        "tlsCertFile": _pki(cfg, "kubelet-server.crt"),
        "tlsPrivateKeyFile": _pki(cfg, "kubelet-server.key"),
        "containerRuntimeEndpoint": f"unix://{cfg.containerd_socket}",
        # Each cluster's pod logs in its own state folder: a kubelet deletes the log folders of
        # pods it does not know, so two kubelets on /var/log/pods (the default) deleted each
        # other's, and `kubectl logs` of a fleet cluster's pod failed ("lstat /var/log/pods/...:
        # no such file"). The field is podLogsDir: an unknown name is ignored with a warning.
        "podLogsDir": str(cfg.path("pod-logs")),
        # Host facts: PID 1 is not systemd and the cgroup layout is v1 (hybrid).
        "cgroupDriver": "cgroupfs",
        "failCgroupV1": False,
        "failSwapOn": False,
        # No cluster DNS in the lab and no host resolver for pods: nothing to dial out to.
        "resolvConf": "",
        "clusterDomain": "cluster.local",
        # Images are built locally and cannot be pulled again: never garbage-collect them.
        "imageGCHighThresholdPercent": 100,
        "imageGCLowThresholdPercent": 99,
        "evictionHard": {
            "memory.available": "100Mi",
            "nodefs.available": "1%",
            "imagefs.available": "1%",
        },
        "serializeImagePulls": False,
        "maxPods": 110,
        "podPidsLimit": 4096,
        "nodeStatusReportFrequency": "10s",
        "nodeStatusUpdateFrequency": "4s",
        "syncFrequency": "10s",
        "fileCheckFrequency": "10s",
        "volumeStatsAggPeriod": "1m",
        "shutdownGracePeriod": "0s",
    }
    if cfg.netns:
        # Pods of a fleet's further cluster live in a cgroup subtree of their own, so that
        # neither kubelet counts, limits or removes the other's.
        config["cgroupRoot"] = cfg.cgroup_root
    return Component(
        name="kubelet",
        binary=bins["kubelet"],
        version=bins.versions["kubelet"],
        args=(
            f"--config={cfg.path('kubelet', 'config.yaml')}",
            f"--kubeconfig={cfg.path('kubelet.kubeconfig')}",
            f"--root-dir={cfg.path('kubelet', 'root')}",
            f"--cert-dir={cfg.path('kubelet', 'pki')}",
            f"--hostname-override={cfg.node_name}",
            f"--node-ip={net.node_ip}",
            # The labels a fake GPU node carries in KAI's e2e setup: GPU feature
            # discovery's, and run.ai/fake.gpu, which turns on KAI's fake-GPU handling.
            "--node-labels="
            + ",".join(
                [
                    "kaiops.dev/lab-node=true",
                    "nvidia.com/gpu.present=true",
                    "nvidia.com/gpu.product=Fake-GPU",
                    f"nvidia.com/gpu.count={gpu_devices}",
                    "nvidia.com/gpu.memory=16384",
                    "nvidia.com/mig.strategy=none",
                    "run.ai/fake.gpu=true",
                ]
            ),
            "--v=1",
        ),
        ports=(f"{net.node_ip}:10250", "127.0.0.1:10248"),
        health=Health("http", "http://127.0.0.1:10248/healthz"),
        files={"kubelet/config.yaml": yaml.safe_dump(config, sort_keys=True)},
    )


def kube_proxy(cfg: LabConfig, bins: Binaries) -> Component:
    net = cfg.network
    config = {
        "apiVersion": "kubeproxy.config.k8s.io/v1alpha1",
        "kind": "KubeProxyConfiguration",
        "mode": "iptables",
        "clientConnection": {"kubeconfig": str(cfg.path("kube-proxy.kubeconfig"))},
        "hostnameOverride": cfg.node_name,
        "clusterCIDR": net.cluster_cidr,
        "healthzBindAddress": "127.0.0.1:10256",
        "metricsBindAddress": "127.0.0.1:10249",
        # NodePorts only on the lab's own node address, never on the host's interfaces.
        "nodePortAddresses": [f"{net.node_ip}/32"],
        # Leave the host's conntrack table sizes alone.
        "conntrack": {"maxPerCore": 0, "min": 0},
        "iptables": {"localhostNodePorts": False, "masqueradeAll": False},
    }
    return Component(
        name="kube-proxy",
        binary=bins["kube-proxy"],
        version=bins.versions["kube-proxy"],
        args=(f"--config={cfg.path('kube-proxy', 'config.yaml')}", "--v=1"),
        ports=("127.0.0.1:10256", "127.0.0.1:10249"),
        health=Health("http", "http://127.0.0.1:10256/healthz"),
        files={"kube-proxy/config.yaml": yaml.safe_dump(config, sort_keys=True)},
    )


def kwok(cfg: LabConfig, bins: Binaries, stages: Path) -> Component:
    net = cfg.network
    return Component(
        name="kwok",
        binary=bins["kwok"],
        version=bins.versions["kwok"],
        args=(
            f"--kubeconfig={cfg.path('kwok.kubeconfig')}",
            f"--config={stages}",
            "--manage-all-nodes=false",
            "--manage-nodes-with-annotation-selector=kwok.x-k8s.io/node=fake",
            f"--cidr={net.kwok_pod_cidr}",
            f"--node-ip={net.kwok_node_ip}",
            "--server-address=127.0.0.1:10247",
            "--node-lease-duration-seconds=40",
            "--v=1",
        ),
        ports=("127.0.0.1:10247",),
        health=Health("http", "http://127.0.0.1:10247/healthz"),
    )


def fake_gpu_plugin(cfg: LabConfig, bins: Binaries, devices: int) -> Component:
    plugin_dir = host.DEVICE_PLUGIN_DIR
    return Component(
        name="fake-gpu-plugin",
        binary=bins["kaiops-fake-gpu"],
        version=bins.versions["kaiops-fake-gpu"],
        args=(
            f"--plugin-dir={plugin_dir}",
            "--resource=nvidia.com/gpu",
            f"--count={devices}",
            f"--node-name={cfg.node_name}",
        ),
        ports=(f"unix:{plugin_dir / 'kaiops-fake-gpu.sock'}",),
        # the same socket, where the host sees it (a fleet node's folder is bound over plugin_dir)
        health=Health("socket", str(cfg.device_plugin_dir / "kaiops-fake-gpu.sock")),
    )


def plan(
    cfg: LabConfig, bins: Binaries, pause_image: str, stages: Path, gpu_devices: int = 2
) -> list[Component]:
    """Every component in start order (dependencies first)."""
    comps = [
        etcd(cfg, bins),
        kube_apiserver(cfg, bins),
        kube_controller_manager(cfg, bins),
        kube_scheduler(cfg, bins),
        containerd(cfg, bins, pause_image),
        kubelet(cfg, bins, gpu_devices),
        kube_proxy(cfg, bins),
        fake_gpu_plugin(cfg, bins, gpu_devices),
        kwok(cfg, bins, stages),
    ]
    if not cfg.netns:
        return comps
    # A fleet's further cluster runs whole inside its node's network and mount namespaces.
    enter = ("nsenter", f"--net={cfg.net_pin}", f"--mount={cfg.mount_pin}", "--")
    return [replace(c, prefix=enter) for c in comps]


def log_path(cfg: LabConfig, comp: Component) -> Path:
    return cfg.path(LOGS, f"{comp.name}.log")
