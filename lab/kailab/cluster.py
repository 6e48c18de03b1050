"""Lab lifecycle: `up` and `down` as ordered lists of small actions (kind's habit).

`up` converges: every action checks first and does only what is missing, so a
second `up` is a no-op and an `up` after a crash restarts just what died.
`down` undoes everything `up` may have done, in reverse, even after a killed `up`.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import ssl
import subprocess
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path

from . import build, components, host, kai, nodes, pki
from .components import Binaries, Component, Health
from .config import (
    ENV_MARKER,
    LOGS,
    PIDS,
    PKI,
    PLAN,
    REPO,
    RESTORE,
    STAMP,
    LabConfig,
    LabError,
    family_key,
    load_versions,
)

# Where earlier labs wrote their kubeconfig into the checkout; removed at down. The
# lab inventory now reads the state folder's (make -s lab-kubeconfig).
LEGACY_INVENTORY_KUBECONFIG = REPO / "inventories" / "lab" / "kubeconfig"
KUBECONFIG_USERS = ("admin", "controller-manager", "scheduler", "kube-proxy", "kwok")


class Lab:
    def __init__(
        self,
        cfg: LabConfig,
        log: Callable[[str], None] = print,
        kai_version: str | None = None,
        kai_bundle: str | None = None,
    ):
        self.cfg = cfg
        self.log = log
        self.kai_version = kai_version
        self.kai_bundle = kai_bundle
        self.versions = load_versions()
        self._binaries: Binaries | None = None
        self.built: dict | None = None  # build.build_all()'s result, once _build ran

    # ------------------------------------------------------------ helpers

    def binaries(self) -> Binaries:
        """Where each program is (or will be, once built); worked out once per Lab.

        Every kubectl call and plan needs it, and it hashes go.sum files and asks dpkg.
        """
        if self._binaries is None:
            self._binaries = self._find_binaries()
        return self._binaries

    def _find_binaries(self) -> Binaries:
        paths: dict[str, Path] = {}
        stamps: dict[str, str] = {}
        for family in build.GO_FAMILIES:
            spec = self.versions[family]
            for program in spec["programs"]:
                paths[program] = build.bin_dir(self.versions, family) / program
                stamps[program] = spec["version"]
        for name, path in build.DEBIAN_BINARIES.items():
            paths[name] = Path(path)
            stamps[name] = build.debian_version(name)
        return Binaries(paths, stamps)

    def plan(self) -> list[Component]:
        stages = build.kwok_stages_path(self.versions)
        pause = self.versions["kubernetes"]["pause_image"]
        devices = self.versions["fakegpu"]["devices_per_node"]
        return components.plan(self.cfg, self.binaries(), pause, stages, devices)

    def kubectl(self, *args: str, input_text: str | None = None, check: bool = True):
        kubectl = self.binaries()["kubectl"]
        proc = subprocess.run(
            [str(kubectl), f"--kubeconfig={self.cfg.kubeconfig}", *args],
            input=input_text, capture_output=True, text=True, check=False,
        )  # fmt: skip
        if check and proc.returncode != 0:
            raise LabError(f"Failed to run kubectl {' '.join(args[:3])}: {proc.stderr.strip()}")
        return proc

    def _step(self, title: str, fn: Callable[[], object]) -> object:
        started = time.monotonic()
        self.log(f"• {title} ...")
        result = fn()
        self.log(f"✓ {title} ({time.monotonic() - started:.1f}s)")
        return result

    def pid_of(self, comp: Component) -> int | None:
        path = self.cfg.path(PIDS, f"{comp.name}.pid")
        try:
            pid = int(path.read_text())
        except (OSError, ValueError):
            return None
        return pid if host.alive(pid) else None

    # ------------------------------------------------------------ up

    def already_up(self) -> bool:
        """Every component runs healthy with the command the plan gives it now."""
        if not self.cfg.kubeconfig.exists():
            return False
        for comp in self.plan():
            pid = self.pid_of(comp)
            if pid is None or host.cmdline(pid) != comp.command() or not self._healthy(comp.health):
                return False
            if any(
                not self.cfg.path(rel).exists() or self.cfg.path(rel).read_text() != content
                for rel, content in comp.files.items()
            ):
                return False
        return True

    def up(self, prepared: bool = False) -> None:
        """Converge the cluster; `prepared`: its host side is set up already (a fleet's up ran
        prepare() for it, or found it up), so nothing here touches the host."""
        started = time.monotonic()
        if self.already_up():
            self.log(f"lab {self.cfg.name} already up (make lab-status shows it)")
            self._objects()  # the KWOK node count converges, quietly
            if self.wants_kai:
                self._step(self._kai_title(), self.install_kai)
            return
        if not prepared:
            self.prepare()
        self._step("certificates and kubeconfigs", self._pki)
        for comp in self.plan():
            self._step(f"start {comp.name}", lambda c=comp: self._ensure(c))
            if comp.name == "containerd":
                self._step("import images", self._images)
        self._step("fake GPU nodes and lab marker", self._objects)
        self._step("wait for nodes Ready and default service account", self._wait_ready)
        LEGACY_INVENTORY_KUBECONFIG.unlink(missing_ok=True)
        if self.wants_kai:
            self._step(self._kai_title(), self.install_kai)
        self.log(f"lab {self.cfg.name} up in {time.monotonic() - started:.1f}s")

    def prepare(self) -> None:
        """The steps that change the host (its tables, links, namespaces and mounts) or fill
        the program cache: a fleet runs them one cluster at a time, the host's own first."""
        self._step("build programs (cached by version)", self._build)
        self._step("record host state", lambda: host.record(self.cfg))
        self._step("host network", lambda: host.setup_network(self.cfg))
        self._step("state folder", self._state)

    def prepare_shared(self) -> None:
        """Fill the caches every cluster's up reads (the lab's image archives, the stand-in's
        image and its charts) once, so clusters started side by side only read them."""
        from . import images as lab_images

        if self.built is None:
            self._build()
        lab_images.build_lab_images(self.versions, self.built, log=self.log)
        if not self.wants_kai:
            return
        paths = build.build_family(self.versions, "kai-standin", self.log)
        lab_images.build_standin(self.standin_image_ref(), paths["kai-standin"], log=self.log)
        if not self.kai_bundle:
            kai.publish_charts(self)  # the version pair's charts and the faulted builds'
            kai.standin_target(self, self.kai_version)  # and the chart of the version installed

    # ------------------------------------------------------------ KAI

    def _kai_title(self) -> str:
        if self.kai_bundle:
            return f"KAI from bundle {self.kai_bundle} (helm)"
        return f"KAI stand-in {kai.resolve(self.kai_version)} (helm)"

    def install_kai(self) -> dict:
        return kai.install(self, self.kai_version, self.kai_bundle)

    def helm(self, *args: str, check: bool = True) -> subprocess.CompletedProcess:
        helm = self.binaries()["helm"]
        env = {**os.environ, "KUBECONFIG": str(self.cfg.kubeconfig),
               "HELM_CACHE_HOME": str(self.cfg.path("helm", "cache")),
               "HELM_CONFIG_HOME": str(self.cfg.path("helm", "config")),
               "HELM_DATA_HOME": str(self.cfg.path("helm", "data"))}  # fmt: skip
        proc = subprocess.run(
            [str(helm), *args], capture_output=True, text=True, env=env, check=False
        )
        if check and proc.returncode != 0:
            raise LabError(f"Failed to run helm {' '.join(args[:2])}: {proc.stderr.strip()}")
        return proc

    def standin_image_ref(self, name: str = "standin") -> str:
        """The stand-in image's build reference: its tag changes with the stand-in's code."""
        key = family_key(self.versions, "kai-standin").rsplit("-", 1)[1]
        return f"{kai.STANDIN_REGISTRY}/{name}:build-{key}"

    def ensure_kai_images(self, images) -> None:
        """Import what a KAI install needs: archives as they are; the stand-in's one image
        under each KAI image name it plays (and the GPU status updater's)."""
        from . import images as lab_images

        present = set(self.ctr("images", "ls", "-q").stdout.split())
        base = self.standin_image_ref()
        if base not in present:
            paths = build.build_family(self.versions, "kai-standin", self.log)
            ref, tar = lab_images.build_standin(base, paths["kai-standin"], log=self.log)
            self.ctr("images", "import", "--no-unpack", str(tar))
            self.log(f"  imported {ref}")
        wanted = [(self.standin_image_ref(name=kai.STATUS_NAME), None), *images]
        for ref, archive in wanted:
            if archive is not None:
                if ref not in present:
                    self.ctr("images", "import", "--no-unpack", str(archive))
                    self.log(f"  imported {ref} from {archive}")
            else:
                self.ctr("images", "tag", "--force", base, ref)

    def _build(self) -> None:
        skip = () if self.wants_kai else ("kai-standin",)
        self.built = build.build_all(log=self.log, skip=skip)

    @property
    def wants_kai(self) -> bool:
        """KAI_VERSION=none brings the lab up without KAI (a cluster KAI is not installed on)."""
        return (self.kai_version or "").strip().lower() != "none"

    def _state(self) -> None:
        for sub in (PIDS, LOGS, "etcd", "kubelet", "cni/net.d"):
            self.cfg.path(sub).mkdir(parents=True, exist_ok=True)
        self.cfg.path("etcd").chmod(0o700)
        self.cfg.run_dir.mkdir(parents=True, exist_ok=True)
        if not self.cfg.netns:  # a fleet node's state folder is shared inside its namespace
            host.make_shared(self.cfg)
        stamp = {
            "name": self.cfg.name,
            "config": json.loads(self.cfg.to_json()),
            "versions": self.binaries().versions,
        }
        self.cfg.path(STAMP).write_text(json.dumps(stamp, indent=2, sort_keys=True))
        plan = [{"name": c.name, "command": c.command(), "ports": c.ports} for c in self.plan()]
        self.cfg.path(PLAN).write_text(json.dumps(plan, indent=2))

    def _pki(self) -> None:
        pki_dir = self.cfg.path(PKI)
        pki.generate(self.cfg, pki_dir)
        for user in KUBECONFIG_USERS:
            name = "kubeconfig" if user == "admin" else f"{user}.kubeconfig"
            self.cfg.path(name).write_text(pki.kubeconfig(self.cfg, pki_dir, user))
        self.cfg.path("kubelet.kubeconfig").write_text(
            pki.kubeconfig(self.cfg, pki_dir, "kubelet-client")
        )
        for path in self.cfg.state_dir.glob("*kubeconfig"):
            path.chmod(0o600)

    def _ensure(self, comp: Component) -> None:
        """Start a component that is not running; restart one whose command or files changed."""
        changed = False
        for rel, content in comp.files.items():
            path = self.cfg.path(rel)
            path.parent.mkdir(parents=True, exist_ok=True)
            if not path.exists() or path.read_text() != content:
                path.write_text(content)
                changed = True
        pid = self.pid_of(comp)
        if pid is not None and (changed or host.cmdline(pid) != comp.command()):
            self.log(f"  {comp.name}: configuration changed, restarting")
            host.stop([pid])
            pid = None
        if pid is None:
            self._start(comp)
        self._wait_healthy(comp)

    def _start(self, comp: Component) -> None:
        log = components.log_path(self.cfg, comp)
        env = {
            **os.environ,
            **comp.env,
            ENV_MARKER: self.cfg.name,
            "PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
        }
        with open(log, "ab") as out:
            proc = subprocess.Popen(
                comp.launch(), stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                env=env, start_new_session=True, cwd=self.cfg.state_dir,
            )  # fmt: skip
        self.cfg.path(PIDS, f"{comp.name}.pid").write_text(str(proc.pid))

    def _wait_healthy(self, comp: Component, timeout: float = 90.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.pid_of(comp) is None:
                raise LabError(
                    f"Failed to start {comp.name}: it exited; last log lines:\n{self._tail(comp)}"
                )
            if self._healthy(comp.health):
                return
            time.sleep(0.2)
        raise LabError(
            f"Failed to start {comp.name}: not healthy after {timeout:.0f}s at "
            f"{comp.health.target}; last log lines:\n{self._tail(comp)}"
        )

    def _tail(self, comp: Component, lines: int = 25) -> str:
        try:
            text = components.log_path(self.cfg, comp).read_text(errors="replace")
        except OSError:
            return "(no log)"
        return "\n".join(text.splitlines()[-lines:])

    def _healthy(self, health: Health) -> bool:
        if self.cfg.netns and health.kind != "socket":
            # a fleet cluster's components listen on its namespace's loopback
            return host.in_netns(self.cfg.net_pin, lambda: self._check(health))
        return self._check(health)

    def _check(self, health: Health) -> bool:
        try:
            if health.kind == "socket":
                with socket.socket(socket.AF_UNIX) as sock:
                    sock.settimeout(1)
                    sock.connect(health.target)
                return True
            ctx = None
            if health.kind == "https":
                if health.client:
                    ctx = ssl.create_default_context(cafile=str(self.cfg.path(PKI, "ca.crt")))
                    ctx.load_cert_chain(
                        self.cfg.path(PKI, f"{health.client}.crt"),
                        self.cfg.path(PKI, f"{health.client}.key"),
                    )
                else:  # components that serve a self-signed cert of their own
                    ctx = ssl._create_unverified_context()  # noqa: S323
            with urllib.request.urlopen(health.target, timeout=2, context=ctx) as resp:
                return resp.status == 200
        except (OSError, ssl.SSLError):
            return False

    def ctr(self, *args: str) -> subprocess.CompletedProcess:
        return host.run("ctr", f"--address={self.cfg.containerd_socket}", "-n", "k8s.io", *args)

    def _images(self) -> None:
        from . import images

        if self.built is None:  # a fleet's cluster that was up when its up began, then stopped
            self._build()
        present = set(self.ctr("images", "ls", "-q").stdout.split())
        for ref, tar in images.build_lab_images(self.versions, self.built, log=self.log):
            if ref not in present:
                self.ctr("images", "import", "--no-unpack", str(tar))
                self.log(f"  imported {ref}")

    def _objects(self) -> None:
        docs = [*nodes.marker_objects(self.cfg), *nodes.gpu_nodes(self.cfg)]
        text = "\n---\n".join(json.dumps(d) for d in docs)
        self.kubectl("apply", "--server-side", "--force-conflicts", "-f", "-", input_text=text)
        self.kubectl(
            "annotate", "--overwrite", "namespace", "kube-system",
            f"{nodes.DISPOSABLE_ANNOTATION}=true",
        )  # fmt: skip
        # converge down too: fake nodes beyond the configured count go away
        wanted = {d["metadata"]["name"] for d in nodes.gpu_nodes(self.cfg)}
        listed = self.kubectl("get", "nodes", "-l", "kaiops.dev/lab-node=kwok", "-o", "name")
        extra = [n for n in listed.stdout.split() if n.split("/", 1)[1] not in wanted]
        if extra:
            self.kubectl("delete", "--wait=false", *extra)

    def _wait_ready(self, timeout: float = 120.0) -> None:
        # `kubectl wait` watches; it fails at once if a node does not exist yet, so
        # wait for the real node's registration first, through a watch too.
        self.kubectl(
            "wait", "--for=create", f"node/{self.cfg.node_name}", f"--timeout={timeout:.0f}s"
        )
        self.kubectl("wait", "--for=condition=Ready", "nodes", "--all", f"--timeout={timeout:.0f}s")
        # the fake GPU device plugin's devices reach the node status on its next update
        devices = self.versions["fakegpu"]["devices_per_node"]
        self.kubectl(
            "wait", f"node/{self.cfg.node_name}", f"--timeout={timeout:.0f}s",
            f"--for=jsonpath={{.status.allocatable.nvidia\\.com/gpu}}={devices}",
        )  # fmt: skip
        self.kubectl(
            "wait", "--for=create", "serviceaccount/default", "-n", "default",
            f"--timeout={timeout:.0f}s",
        )  # fmt: skip

    # ------------------------------------------------------------ down

    def down(self) -> list[str]:
        """Stop everything, undo every host change, remove the state folder. Returns leftovers."""
        started = time.monotonic()
        record = self.cfg.path(RESTORE)
        rec = json.loads(record.read_text()) if record.exists() else {}
        existed = set(rec.get("existing_paths", host.HOST_PATHS))
        self._step("stop components", self._stop_all)
        self._step("unmount", lambda: host.unmount_under(self.cfg.state_dir, self.cfg.run_dir))
        self._step("network, iptables, namespaces", lambda: host.teardown_network(self.cfg))
        self._step("pod cgroups", lambda: host.remove_cgroups(self.cfg.pod_cgroups))
        self._step("kernel settings and host folders", self._restore)
        self._step("state folder", lambda: self._remove_state(rec))
        leftovers = self.leftovers(existed)
        self.log(f"lab {self.cfg.name} down in {time.monotonic() - started:.1f}s")
        return leftovers

    def _stop_all(self) -> None:
        by_name = {c.name: c for c in self.plan()}
        # kubelet first so it does not restart the containers being stopped.
        for name in ("kwok", "kube-proxy", "kubelet"):
            pid = self.pid_of(by_name[name])
            if pid:
                host.stop([pid])
        host.stop(host.cgroup_pids(self.cfg.pod_cgroups))
        for name in reversed(list(by_name)):
            pid = self.pid_of(by_name[name])
            if pid:
                host.stop([pid])
        # whatever the pid files missed (a killed `up`, shims, children)
        host.stop(host.lab_pids(self.cfg))

    def _restore(self) -> None:
        path = self.cfg.path(RESTORE)
        rec = json.loads(path.read_text()) if path.exists() else {}
        host.restore_sysctls(rec)
        host.remove_host_paths(self.cfg, rec)

    def _remove_state(self, rec: dict | None = None) -> None:
        for path in (self.cfg.state_dir, self.cfg.run_dir):
            if path.exists():
                shutil.rmtree(path, ignore_errors=False)
        if self.cfg.run_dir.parent.exists() and not any(self.cfg.run_dir.parent.iterdir()):
            self.cfg.run_dir.parent.rmdir()
        root = self.cfg.state_dir.parent
        made_it = not (rec or {}).get("state_root_existed", True)
        if made_it and root.exists() and not any(root.iterdir()):
            root.rmdir()
        LEGACY_INVENTORY_KUBECONFIG.unlink(missing_ok=True)

    def leftovers(self, existed: set[str] | frozenset[str] = frozenset()) -> list[str]:
        """Anything of the lab still on the machine (empty when `down` did its job).

        `existed`: the host folders that were there before the lab (from its record).
        """
        found = [f"process {pid}: {cmd}" for pid, cmd in host.lab_pids(self.cfg).items()]
        links = host.run("ip", "-o", "link", "show").stdout
        if self.cfg.netns:
            found += self._fleet_leftovers(links)
        else:
            found += self._host_leftovers(links, existed)
        roots = (str(self.cfg.state_dir), str(self.cfg.run_dir))
        found += [
            f"mount {t}"
            for _, t in host.mounts()
            if t in roots or t.startswith(tuple(f"{r}/" for r in roots))
        ]
        found += [f"path {p}" for p in (self.cfg.state_dir, self.cfg.run_dir) if p.exists()]
        logs = Path("/var/log/containers")
        found += [
            f"link {p}"
            for p in (logs.iterdir() if logs.is_dir() else [])
            if p.is_symlink() and os.readlink(p).startswith(f"{self.cfg.state_dir}/")
        ]
        return found

    def _host_leftovers(self, links: str, existed) -> list[str]:
        """What the host's own cluster changes in the host's namespaces and folders."""
        net = self.cfg.network
        found = [f"link {d}" for d in (net.node_bridge, net.cni_bridge) if f" {d}:" in links]
        found += [f"netns {n}" for n in host.netns_names() if n.startswith("cni-")]
        for tool in ("iptables", "ip6tables"):
            dump = host.run(f"{tool}-save", check=False).stdout
            found += [f"{tool} {t}/{c}" for t, c in host.lab_chains(dump)]
        found += [f"path {p}" for p in host.HOST_PATHS if p not in existed and Path(p).exists()]
        return found

    def _fleet_leftovers(self, links: str) -> list[str]:
        """A further cluster's bridge, iptables and mounts lived in its namespaces and went with
        them; on the host it leaves only the veth's end, the pins, pod pin files, cgroups."""
        pins = (self.cfg.net_pin, self.cfg.mount_pin)
        found = [f"link {d}" for d in (self.cfg.network.node_bridge,) if f" {d}:" in links]
        found += [f"namespace {p}" for p in pins if p.exists()]
        found += [f"netns {n}" for n in host.stale_cni_pins()]
        found += [f"cgroup {p}" for p in host.cgroup_dirs(self.cfg.pod_cgroups)]
        return found

    # ------------------------------------------------------------ status

    def status(self) -> list[dict]:
        rows = []
        for comp in self.plan():
            pid = self.pid_of(comp) if self.cfg.state_dir.exists() else None
            rows.append(
                {
                    "name": comp.name,
                    "running": pid is not None,
                    "healthy": pid is not None and self._healthy(comp.health),
                    "pid": pid,
                    "version": comp.version,
                    "ports": list(comp.ports),
                }
            )
        return rows
