"""Host changes the lab makes, recorded before they are made so `down` can undo them.

Everything here is reversible: the record (host-restore.json) is written before
the first change, so a `down` after a killed `up` still restores the machine.
"""

from __future__ import annotations

import ctypes
import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import threading
import time
from pathlib import Path

from .config import ENV_MARKER, NS_PINS, RESTORE, LabConfig, LabError

# Kernel settings the lab sets, and those its components may set on their own
# (kubelet and kube-proxy tune some at start): all are read first and restored.
SYSCTL_SET = {
    "net.ipv4.ip_forward": "1",
    "net.bridge.bridge-nf-call-iptables": "1",
    "net.bridge.bridge-nf-call-ip6tables": "1",
}
SYSCTL_WATCH = (
    "vm.overcommit_memory",
    "vm.panic_on_oom",
    "kernel.panic",
    "kernel.panic_on_oops",
    "kernel.keys.root_maxkeys",
    "kernel.keys.root_maxbytes",
    "net.ipv4.conf.all.route_localnet",
    "net.netfilter.nf_conntrack_max",
    "net.netfilter.nf_conntrack_tcp_timeout_established",
    "net.netfilter.nf_conntrack_tcp_timeout_close_wait",
    "net.netfilter.nf_conntrack_tcp_be_liberal",
)
# Host folders the components create outside the state folder (fixed in their code):
# removed at `down` when they did not exist before `up`; otherwise only the lab's
# entries in them are removed.
HOST_PATHS = (
    "/run/containerd",
    "/var/log/containers",
    "/var/log/pods",
    "/run/netns",
    "/var/lib/kubelet",  # the kubelet's device-plugin socket folder ignores --root-dir
)
DEVICE_PLUGIN_DIR = Path("/var/lib/kubelet/device-plugins")
# iptables chains owned by the lab or by the components it runs.
CHAIN_PREFIXES = ("KUBE-", "CNI-", "KAIOPS-")
GUARD = "KAIOPS-GUARD"


def run(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    proc = subprocess.run(list(args), capture_output=True, text=True, check=False)
    if check and proc.returncode != 0:
        raise LabError(
            f"Failed to run {' '.join(args)}: {proc.stderr.strip() or proc.stdout.strip()}"
        )
    return proc


def _sysctl_path(key: str) -> Path:
    return Path("/proc/sys") / key.replace(".", "/")


def read_sysctls(keys) -> dict[str, str]:
    out = {}
    for key in keys:
        path = _sysctl_path(key)
        if path.exists():
            out[key] = path.read_text().strip()
    return out


def write_sysctl(key: str, value: str) -> None:
    try:
        _sysctl_path(key).write_text(value + "\n")
    except OSError as exc:
        raise LabError(f"Failed to set sysctl {key}={value}: {exc}") from exc


# ---------------------------------------------------------------- record / restore


def record(cfg: LabConfig) -> dict:
    """Write what the machine looks like before the lab touches it (kept if it exists)."""
    path = cfg.path(RESTORE)
    if path.exists():
        return json.loads(path.read_text())
    rec = {
        "sysctls": read_sysctls([*SYSCTL_SET, *SYSCTL_WATCH]),
        "existing_paths": [p for p in HOST_PATHS if Path(p).exists()],
        # the state root (/var/lib/kaiops-lab) is removed at down only when the lab made it
        "state_root_existed": cfg.state_dir.parent.exists(),
        "time": time.time(),
    }
    cfg.state_dir.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(rec, indent=2, sort_keys=True))
    return rec


def restore_sysctls(rec: dict) -> list[str]:
    changed = []
    current = read_sysctls(rec.get("sysctls", {}))
    for key, value in rec.get("sysctls", {}).items():
        if current.get(key) != value:
            try:
                write_sysctl(key, value)
                changed.append(key)
            except LabError:
                pass
    return changed


def remove_host_paths(cfg: LabConfig, rec: dict) -> list[str]:
    """Undo what components created outside the state folder."""
    done = []
    logs = Path("/var/log/containers")
    if logs.is_dir():
        for link in logs.iterdir():
            if link.is_symlink() and os.readlink(link).startswith(f"{cfg.state_dir}/"):
                link.unlink()
                done.append(str(link))
    if cfg.netns:
        # the host's own cluster made these folders or found them; it removes them, last
        return done
    existed = set(rec.get("existing_paths", HOST_PATHS))
    for path in HOST_PATHS:
        if path not in existed and Path(path).exists():
            shutil.rmtree(path, ignore_errors=True)
            done.append(path)
    return done


# ---------------------------------------------------------------- network


def setup_network(cfg: LabConfig) -> None:
    if cfg.netns:
        setup_fleet_node(cfg)
        return
    net = cfg.network
    for key, value in SYSCTL_SET.items():
        write_sysctl(key, value)
    if run("ip", "link", "show", net.node_bridge, check=False).returncode != 0:
        run("ip", "link", "add", net.node_bridge, "type", "bridge")
    addrs = run("ip", "-o", "addr", "show", "dev", net.node_bridge).stdout
    if f" {net.node_ip}/" not in addrs:
        run("ip", "addr", "add", f"{net.node_ip}/{net.node_prefix}", "dev", net.node_bridge)
    run("ip", "link", "set", net.node_bridge, "up")
    # Packets to lab-only ranges that nothing translated must die here, never leave the host.
    for cidr in (net.service_cidr, net.kwok_pod_cidr):
        if cidr not in run("ip", "route", "show", "type", "unreachable").stdout:
            run("ip", "route", "add", "unreachable", cidr)
    _guard(cfg)


def _guard(cfg: LabConfig) -> None:
    """Pods may talk to each other and to the lab's node address, nothing else."""
    net = cfg.network
    # a fleet node's subnet holds the host's end of its veth too: only the node itself is let in
    node = f"{net.node_ip}/32" if cfg.netns else f"{net.node_ip}/{net.node_prefix}"
    ipt = ("nsenter", f"--net={cfg.net_pin}", "iptables") if cfg.netns else ("iptables",)
    if run(*ipt, "-n", "-L", GUARD, check=False).returncode != 0:
        run(*ipt, "-N", GUARD)
    run(*ipt, "-F", GUARD)
    for rule in (
        ["-s", net.cluster_cidr, "-d", net.cluster_cidr, "-j", "RETURN"],
        ["-s", net.cluster_cidr, "-d", node, "-j", "RETURN"],
        ["-s", net.cluster_cidr, "-j", "REJECT"],
        [
            "-d",
            net.cluster_cidr,
            "!",
            "-s",
            net.cluster_cidr,
            "!",
            "-i",
            net.cni_bridge,
            "-j",
            "REJECT",
        ],
    ):
        run(*ipt, "-A", GUARD, *rule)
    if run(*ipt, "-C", "FORWARD", "-j", GUARD, check=False).returncode != 0:
        run(*ipt, "-I", "FORWARD", "1", "-j", GUARD)


# ---------------------------------------------------------------- a fleet's further clusters


def netns_names() -> list[str]:
    return [line.split()[0] for line in run("ip", "netns", "list").stdout.splitlines() if line]


def _in_ns(cfg: LabConfig, *args: str, mount: bool = False) -> subprocess.CompletedProcess:
    enter = [f"--net={cfg.net_pin}"] + ([f"--mount={cfg.mount_pin}"] if mount else [])
    return run("nsenter", *enter, "--", *args)


def pinned(path: Path) -> bool:
    return any(t == str(path) for _, t in mounts())


# The fleet's clusters come up side by side: one of them makes the pins' folder.
_PINS_LOCK = threading.Lock()


def _pins_folder() -> None:
    with _PINS_LOCK:
        if not pinned(NS_PINS):
            # unshare pins a namespace only on a mount that is not shared
            NS_PINS.mkdir(parents=True, exist_ok=True)
            run("mount", "--bind", str(NS_PINS), str(NS_PINS))
            run("mount", "--make-private", str(NS_PINS))


def setup_fleet_node(cfg: LabConfig) -> None:
    """One cluster of a fleet: a network namespace joined to the host by a veth pair, a mount
    namespace of its own for the node (the kubelet's device-plugin folder is fixed in its code,
    so each node binds its own there), and a cgroup subtree for its pods. Converges."""
    net = cfg.network
    _pins_folder()
    if not pinned(cfg.net_pin):
        cfg.net_pin.touch()
        run("unshare", f"--net={cfg.net_pin}", "true")
    if run("ip", "link", "show", net.node_bridge, check=False).returncode != 0:
        # made inside, its peer moved out to this process's (the host's) namespace
        _in_ns(cfg, "ip", "link", "add", "eth0", "type", "veth", "peer", "name", net.node_bridge,
               "netns", str(os.getpid()))  # fmt: skip
    if f" {net.host_ip}/" not in run("ip", "-o", "addr", "show", "dev", net.node_bridge).stdout:
        run("ip", "addr", "add", f"{net.host_ip}/{net.node_prefix}", "dev", net.node_bridge)
    run("ip", "link", "set", net.node_bridge, "up")
    if f" {net.node_ip}/" not in _in_ns(cfg, "ip", "-o", "addr", "show", "dev", "eth0").stdout:
        _in_ns(cfg, "ip", "addr", "add", f"{net.node_ip}/{net.node_prefix}", "dev", "eth0")
    _in_ns(cfg, "ip", "link", "set", "eth0", "up")
    _in_ns(cfg, "ip", "link", "set", "lo", "up")
    # these are the namespace's own: the host's values are not touched
    _in_ns(cfg, "sysctl", "-qw", *(f"{k}={v}" for k, v in SYSCTL_SET.items()))
    _guard(cfg)
    _mount_namespace(cfg)
    for hierarchy in _cgroup_hierarchies():
        (hierarchy / cfg.name).mkdir(exist_ok=True)


def _mount_namespace(cfg: LabConfig) -> None:
    pin = str(cfg.mount_pin)
    if pinned(cfg.mount_pin):
        return
    cfg.mount_pin.touch()
    # slave: the host's mounts still reach the node, the node's never reach the host
    run("unshare", f"--mount={pin}", "--propagation", "slave", "true")
    plugins, fixed = cfg.device_plugin_dir, Path("/var/lib/kubelet/device-plugins")
    plugins.mkdir(parents=True, exist_ok=True)
    fixed.mkdir(parents=True, exist_ok=True)
    state = str(cfg.state_dir)
    # the copy holds the host's pins of other namespaces (other clusters', the host cluster's
    # pods'), which would keep them alive: dropped
    _in_ns(cfg, "sh", "-c", f"umount -l {NS_PINS} 2>/dev/null; for f in /run/netns/*; do "
           'umount -l "$f" 2>/dev/null; done; true', mount=True)  # fmt: skip
    _in_ns(cfg, "mount", "--bind", str(plugins), str(fixed), mount=True)
    # kubelet volumes need shared propagation; inside the node's namespace only
    _in_ns(cfg, "mount", "--bind", state, state, mount=True)
    _in_ns(cfg, "mount", "--make-rshared", state, mount=True)


def teardown_fleet_node(cfg: LabConfig) -> list[str]:
    """Undo setup_fleet_node after its processes are gone: the namespaces (their mounts and
    links go with them), the host's end of the veth, the pods' cgroup subtree."""
    done = []
    for pin, what in ((cfg.mount_pin, "mount"), (cfg.net_pin, "network")):
        if pinned(pin):
            run("umount", str(pin), check=False)
            done.append(f"{what} namespace {cfg.name}")
        pin.unlink(missing_ok=True)
    if NS_PINS.is_dir() and not any(NS_PINS.iterdir()):
        # every bind of it (an `up` from before the lock could stack two)
        unmount_under(NS_PINS)
        NS_PINS.rmdir()
    if run("ip", "link", "show", cfg.network.node_bridge, check=False).returncode == 0:
        run("ip", "link", "del", cfg.network.node_bridge, check=False)
        done.append(f"link {cfg.network.node_bridge}")
    # pod namespaces this node's containerd pinned are plain files on the host (their mounts
    # lived in the node's namespace); live pins of the host's own cluster are mounts: kept
    for name in stale_cni_pins():
        Path("/run/netns", name).unlink(missing_ok=True)
        done.append(f"netns {name}")
    done += remove_cgroups(cfg.pod_cgroups)
    return done


CLONE_NEWNET = 0x40000000


def in_netns(pin: Path, fn):
    """fn() from inside a network namespace: a thread of its own enters it (setns changes only
    the calling thread), so the lab's own process never leaves the host's namespace."""
    result: dict = {}

    def target() -> None:
        libc = ctypes.CDLL(None, use_errno=True)
        try:
            with open(pin, "rb") as handle:
                if libc.setns(handle.fileno(), CLONE_NEWNET) != 0:
                    raise OSError(ctypes.get_errno(), f"setns into {pin}")
            result["value"] = fn()
        except Exception as exc:  # noqa: BLE001 -- re-raised in the caller's thread
            result["error"] = exc

    thread = threading.Thread(target=target, name=f"netns-{pin.name}")
    thread.start()
    thread.join()
    if "error" in result:
        raise result["error"]
    return result["value"]


def stale_cni_pins() -> list[str]:
    """Pod namespace pin files no live node holds. A further cluster's live pins are mounts in
    its own mount namespace only, so while one is still up none can be told stale: none is."""
    if NS_PINS.is_dir() and any(NS_PINS.glob("*.mnt")):
        return []
    live = {t for _, t in mounts()}
    return [n for n in netns_names() if n.startswith("cni-") and f"/run/netns/{n}" not in live]


def teardown_network(cfg: LabConfig) -> list[str]:
    if cfg.netns:
        return teardown_fleet_node(cfg)
    net = cfg.network
    done = []
    for dev in (net.cni_bridge, net.node_bridge):
        if run("ip", "link", "show", dev, check=False).returncode == 0:
            run("ip", "link", "del", dev, check=False)
            done.append(f"link {dev}")
    # veth ends left by a CNI that never ran DEL
    for line in run("ip", "-o", "link", "show", "type", "veth").stdout.splitlines():
        m = re.match(r"\d+: (veth[0-9a-f]+)@", line)
        if m and f"master {net.cni_bridge}" in line:
            run("ip", "link", "del", m.group(1), check=False)
            done.append(f"link {m.group(1)}")
    for cidr in (net.service_cidr, net.kwok_pod_cidr):
        if run("ip", "route", "del", "unreachable", cidr, check=False).returncode == 0:
            done.append(f"route {cidr}")
    for ns in run("ip", "netns", "list").stdout.split():
        if ns.startswith("cni-"):
            run("ip", "netns", "del", ns, check=False)
            done.append(f"netns {ns}")
    for tool in ("iptables", "ip6tables"):
        done += [f"{tool} {c}" for c in remove_chains(tool)]
    return done


def lab_chains(dump: str) -> list[tuple[str, str]]:
    """(table, chain) pairs in an iptables-save dump that belong to the lab."""
    table, found = "", []
    for line in dump.splitlines():
        if line.startswith("*"):
            table = line[1:]
        elif line.startswith(":"):
            chain = line[1:].split()[0]
            if chain.startswith(CHAIN_PREFIXES):
                found.append((table, chain))
    return found


def lab_jumps(dump: str) -> list[tuple[str, list[str]]]:
    """Rules in built-in chains that jump into a lab chain, as (table, rule args)."""
    table, found = "", []
    for line in dump.splitlines():
        if line.startswith("*"):
            table = line[1:]
        elif line.startswith("-A "):
            parts = shlex.split(line)
            chain = parts[1]
            target = parts[parts.index("-j") + 1] if "-j" in parts else ""
            if not chain.startswith(CHAIN_PREFIXES) and target.startswith(CHAIN_PREFIXES):
                found.append((table, parts[1:]))
    return found


def remove_chains(tool: str) -> list[str]:
    save = run(f"{tool}-save", check=False)
    if save.returncode != 0:
        return []
    dump = save.stdout
    for table, rule in lab_jumps(dump):
        run(tool, "-t", table, "-D", *rule, check=False)
    chains = lab_chains(dump)
    for table, chain in chains:
        run(tool, "-t", table, "-F", chain, check=False)
    for table, chain in chains:
        run(tool, "-t", table, "-X", chain, check=False)
    return [f"{t}/{c}" for t, c in chains]


# ---------------------------------------------------------------- mounts and cgroups


def make_shared(cfg: LabConfig) -> None:
    """Kubelet volumes need shared propagation; only the lab's own folder gets it, not /."""
    state = str(cfg.state_dir)
    if not any(m[1] == state for m in mounts()):
        run("mount", "--bind", state, state)
    run("mount", "--make-rshared", state)


def mounts() -> list[tuple[str, str]]:
    out = []
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        fields = line.split()
        out.append((fields[0], fields[4].replace("\\040", " ")))
    return out


def unmount_under(*roots: Path) -> list[str]:
    """Unmount everything at or below the given folders, deepest first, until none is left."""
    done = []
    prefixes = [str(r) for r in roots]
    for _ in range(10):
        targets = sorted(
            {t for _, t in mounts() if any(t == p or t.startswith(p + "/") for p in prefixes)},
            key=len,
            reverse=True,
        )
        if not targets:
            break
        for t in targets:
            if run("umount", t, check=False).returncode != 0:
                run("umount", "-l", t, check=False)
            done.append(t)
    return done


def _cgroup_hierarchies() -> list[Path]:
    root = Path("/sys/fs/cgroup")
    if not root.exists():
        return []
    # cpu and cpuacct are links to one hierarchy: each hierarchy once
    return [h for h in root.iterdir() if h.is_dir() and not h.is_symlink()]


def remove_cgroups(names=("kubepods", "kubepods.slice")) -> list[str]:
    """The kubelet's pod cgroups in every v1 hierarchy, deepest first (rmdir takes empty ones)."""
    done = []
    root = Path("/sys/fs/cgroup")
    for hierarchy in root.iterdir() if root.exists() else []:
        for name in names:
            top = hierarchy / name
            if not top.is_dir():
                continue
            dirs = sorted(
                (p for p in top.rglob("*") if p.is_dir()), key=lambda p: len(p.parts), reverse=True
            )
            for d in [*dirs, top]:
                try:
                    d.rmdir()
                except OSError:
                    continue
            if not top.exists():
                done.append(str(top))
    return done


def cgroup_dirs(names) -> list[str]:
    return [str(h / n) for h in _cgroup_hierarchies() for n in names if (h / n).is_dir()]


def cgroup_pids(names=("kubepods",)) -> set[int]:
    pids: set[int] = set()
    root = Path("/sys/fs/cgroup")
    for hierarchy in root.iterdir() if root.exists() else []:
        for name in names:
            top = hierarchy / name
            if top.is_dir():
                for procs in top.rglob("cgroup.procs"):
                    try:
                        pids |= {int(p) for p in procs.read_text().split()}
                    except OSError:
                        continue
    return pids


# ---------------------------------------------------------------- processes


def lab_pids(cfg: LabConfig) -> dict[int, str]:
    """Processes of this lab: marked in their environment, or mentioning its folders."""
    found = {}
    marker = f"{ENV_MARKER}={cfg.name}".encode()
    # with the slash: lab kaiops must not take kaiops-2's processes for its own
    needles = (f"{cfg.state_dir}/".encode(), f"{cfg.run_dir}/".encode())
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit() or int(proc.name) == os.getpid():
            continue
        try:
            cmdline = (proc / "cmdline").read_bytes()
            environ = (proc / "environ").read_bytes()
        except OSError:
            continue
        if marker in environ.split(b"\0") or any(n in cmdline for n in needles):
            found[int(proc.name)] = cmdline.replace(b"\0", b" ").decode(errors="replace")[:200]
    return found


def cmdline(pid: int) -> list[str]:
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return []
    return raw.rstrip(b"\0").decode(errors="replace").split("\0")


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    stat = Path(f"/proc/{pid}/stat")
    try:
        return stat.read_text().split(")")[-1].split()[0] != "Z"
    except OSError:
        return False


def stop(pids, timeout: float = 10.0) -> None:
    """SIGTERM, wait for exit, then SIGKILL what is left."""
    pids = {p for p in pids if alive(p)}
    for pid in pids:
        try:
            os.kill(pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
    deadline = time.monotonic() + timeout
    while pids and time.monotonic() < deadline:
        pids = {p for p in pids if alive(p)}
        if pids:
            time.sleep(0.1)
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
