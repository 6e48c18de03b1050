"""The lab's container images: what each holds, and how its files are gathered.

There is no registry: every image is built locally with `oci.build_image` and imported
with `ctr -n k8s.io images import`; pods use `imagePullPolicy: Never`/`IfNotPresent`.

- busybox: docker.io/library/busybox:kaiops-1.35.0, Debian busybox-static + applet links.
- ubuntu: docker.io/library/ubuntu:<UBUNTU_TAG>, the same busybox standing in for the
  image KAI's GPU reservation pods run (`sleep infinity` works).
- gpuprobe: kaiops.dev/gpuprobe:<version>, tools/gpuprobe built with CGO_ENABLED=0, plus
  busybox (`sh -c` wrappers).
- toolbox: kaiops.dev/toolbox:lab, busybox plus the lab's kubectl (lab tests).

The pause (sandbox) image is built elsewhere in the lab, not here.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from .oci import OciError, build_image

REPO = Path(__file__).resolve().parents[2]
GPUPROBE_SRC = REPO / "tools" / "gpuprobe"

BUSYBOX_BIN = Path("/bin/busybox")  # Debian package busybox-static (static binary)
BUSYBOX_VERSION = "1.35.0"  # upstream part of the pinned busybox-static (lab/versions.yaml)
BUSYBOX_REF = f"docker.io/library/busybox:kaiops-{BUSYBOX_VERSION}"

# Under --fake-gpu-nodes KAI's binder starts reservation pods as image "ubuntu" with no
# tag, so the name resolves to ubuntu:latest (docs/kai-versions.md cites the source line,
# read at v0.16.8; recheck at the pair under test once the module is served).
UBUNTU_TAG = "latest"
UBUNTU_REF = f"docker.io/library/ubuntu:{UBUNTU_TAG}"

GPUPROBE_VERSION = "0.1.0"  # = Version in tools/gpuprobe/probe.go (a unit test checks)
GPUPROBE_REF = f"kaiops.dev/gpuprobe:{GPUPROBE_VERSION}"

# Must equal kubernetes.pause_image in lab/versions.yaml (a unit test checks).
PAUSE_REF = "registry.k8s.io/pause:3.10.1"
TOOLBOX_REF = "kaiops.dev/toolbox:lab"

# Applets linked in /bin. The lab's probes and tests need the first row; the rest make a
# shell in the image usable for debugging.
APPLETS = (
    "sh", "sleep", "cat", "env", "wget", "nc", "echo", "ls", "ps", "id", "true", "false",
    "ash", "test", "[", "printf", "grep", "sed", "awk", "head", "tail", "wc", "date",
    "hostname", "mkdir", "rm", "cp", "mv", "ln", "touch", "chmod", "kill", "uname",
    "nslookup", "ip", "ifconfig", "ping", "timeout", "tee", "tr", "cut", "sort", "uniq",
    "xargs", "find", "stat", "du", "df", "mount", "vi", "less", "base64", "sha256sum",
    "dd", "seq", "yes", "whoami", "pwd", "basename", "dirname", "readlink", "realpath",
    "expr", "sync", "nproc", "free", "top", "uptime", "which", "tar", "gzip", "gunzip",
)  # fmt: skip

PASSWD = b"root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/false\n"
GROUP = b"root:x:0:\nnogroup:x:65534:\n"
BASE_DIRS = {"/tmp": 0o1777, "/root": 0o700, "/proc": 0o555, "/sys": 0o555, "/dev": 0o755,
             "/etc": 0o755, "/var": 0o755, "/run": 0o755, "/usr/bin": 0o755}  # fmt: skip


@dataclass
class Layout:
    """Everything `build_image` needs besides the reference."""

    files: dict = field(default_factory=dict)
    symlinks: dict = field(default_factory=dict)
    dirs: dict = field(default_factory=dict)
    cmd: list | None = None
    entrypoint: list | None = None
    env: dict | None = None
    labels: dict = field(default_factory=dict)

    def merge(self, other: Layout) -> Layout:
        return Layout(
            files={**self.files, **other.files},
            symlinks={**self.symlinks, **other.symlinks},
            dirs={**self.dirs, **other.dirs},
            cmd=other.cmd or self.cmd,
            entrypoint=other.entrypoint or self.entrypoint,
            env={**(self.env or {}), **(other.env or {})} or None,
            labels={**self.labels, **other.labels},
        )


def _run(cmd: list[str], what: str, **kw) -> subprocess.CompletedProcess:
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, check=False, **kw)
    except OSError as exc:
        raise OciError(f"Failed to {what}: {exc}") from exc
    if proc.returncode != 0:
        raise OciError(f"Failed to {what}: {(proc.stderr or proc.stdout).strip()}")
    return proc


def busybox_applets(busybox: Path = BUSYBOX_BIN) -> set[str]:
    """The applets this busybox binary provides (`busybox --list`)."""
    return set(_run([str(busybox), "--list"], f"list applets of {busybox}").stdout.split())


def busybox_files(busybox: Path = BUSYBOX_BIN) -> Layout:
    """/bin/busybox with applet links, /etc/passwd and /etc/group, the usual dirs."""
    if not Path(busybox).is_file():
        raise OciError(
            f"Failed to find {busybox}: install the Debian package busybox-static (make lab-deps)"
        )
    missing = sorted(set(APPLETS) - busybox_applets(busybox))
    if missing:
        raise OciError(f"Failed to gather busybox: {busybox} lacks applets {missing}")
    return Layout(
        files={
            "/bin/busybox": (str(busybox), 0o755),
            "/etc/passwd": PASSWD,
            "/etc/group": GROUP,
        },
        symlinks={f"/bin/{a}": "busybox" for a in APPLETS}
        | {"/usr/bin/env": "/bin/busybox", "/usr/bin/sleep": "/bin/busybox"},
        dirs=dict(BASE_DIRS),
        cmd=["sh"],
        labels={"dev.kaiops.image": "busybox", "dev.kaiops.busybox": BUSYBOX_VERSION},
    )


def ubuntu_files(busybox: Path = BUSYBOX_BIN) -> Layout:
    """A stand-in for the ubuntu image of KAI's reservation pods: busybox, so that
    `sleep infinity` works, plus an os-release that says what it really is."""
    os_release = (
        b'NAME="kaiops ubuntu stand-in (busybox)"\nID=kaiops-busybox\n'
        b'PRETTY_NAME="busybox ' + BUSYBOX_VERSION.encode() + b' standing in for ubuntu"\n'
    )
    return busybox_files(busybox).merge(
        Layout(
            files={"/etc/os-release": os_release},
            cmd=["sleep", "infinity"],
            labels={"dev.kaiops.image": "ubuntu-stand-in"},
        )
    )


def _source_digest(src: Path) -> str:
    h = hashlib.sha256()
    for p in sorted(src.rglob("*")):
        rel = p.relative_to(src).as_posix()
        if p.is_file() and not rel.startswith(("bin/", "gpuprobe-results/")) and rel != "gpuprobe":
            h.update(rel.encode() + b"\0" + p.read_bytes() + b"\0")
    return h.hexdigest()[:12]


def gpuprobe_binary(cache_dir: Path, src: Path = GPUPROBE_SRC, go: str = "go") -> Path:
    """Build tools/gpuprobe (CGO_ENABLED=0, static) into cache_dir, keyed by a digest of
    its source; reuse the binary when it exists."""
    out = Path(cache_dir) / f"gpuprobe-{GPUPROBE_VERSION}-{_source_digest(src)}" / "gpuprobe"
    if out.exists():
        return out
    if shutil.which(go) is None:
        raise OciError(f"Failed to build gpuprobe: {go} not found on PATH")
    out.parent.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "CGO_ENABLED": "0", "GOFLAGS": "-buildvcs=false"}
    tmp = out.with_name("gpuprobe.tmp")
    _run(
        [go, "build", "-trimpath", "-ldflags=-s -w -buildid=", "-o", str(tmp), "."],
        "build gpuprobe",
        cwd=src,
        env=env,
    )
    os.replace(tmp, out)
    return out


def gpuprobe_files(cache_dir: Path, busybox: Path = BUSYBOX_BIN) -> Layout:
    """The probe (no-cuda build) in /usr/local/bin plus busybox for shell wrappers."""
    binary = gpuprobe_binary(cache_dir)
    return busybox_files(busybox).merge(
        Layout(
            files={"/usr/local/bin/gpuprobe": (str(binary), 0o755)},
            cmd=["/usr/local/bin/gpuprobe"],
            labels={"dev.kaiops.image": "gpuprobe", "dev.kaiops.gpuprobe": GPUPROBE_VERSION},
        )
    )


def toolbox_files(kubectl: Path, busybox: Path = BUSYBOX_BIN) -> Layout:
    """busybox plus the lab's kubectl, for in-cluster API checks."""
    return busybox_files(busybox).merge(
        Layout(
            files={"/usr/local/bin/kubectl": (str(kubectl), 0o755)},
            labels={"dev.kaiops.image": "toolbox"},
        )
    )


@dataclass(frozen=True)
class ImageSpec:
    name: str
    ref: str
    description: str
    gather: Callable[[dict, Path], Layout]  # (built, cache_dir) -> Layout


def pause_files(built: dict) -> Layout:
    """The sandbox image: the pause binary built from the pinned kubernetes module."""
    return Layout(files={"/pause": (Path(built["paths"]["pause"]), 0o755)}, entrypoint=["/pause"])


IMAGES: dict[str, ImageSpec] = {
    spec.name: spec
    for spec in (
        ImageSpec("pause", PAUSE_REF, "pause from build/pause/linux/pause.c in k8s.io/kubernetes",
                  lambda built, cache: pause_files(built)),
        ImageSpec("busybox", BUSYBOX_REF, "busybox-static with applet links",
                  lambda built, cache: busybox_files()),
        ImageSpec("ubuntu", UBUNTU_REF, "busybox standing in for KAI's reservation image",
                  lambda built, cache: ubuntu_files()),
        ImageSpec("gpuprobe", GPUPROBE_REF, "tools/gpuprobe (CGO_ENABLED=0) + busybox",
                  lambda built, cache: gpuprobe_files(cache / "gpuprobe")),
        ImageSpec("toolbox", TOOLBOX_REF, "busybox + the lab's kubectl",
                  lambda built, cache: toolbox_files(Path(built["paths"]["kubectl"]))),
    )
}  # fmt: skip


def _layout_key(ref: str, layout: Layout) -> str:
    """Cache key of an image: its spec plus each host file's path, size and mtime."""

    def src(v):
        s = v[0] if isinstance(v, tuple) else v
        if isinstance(s, (bytes, bytearray)):
            return hashlib.sha256(s).hexdigest()
        st = os.stat(s)
        return f"{s}:{st.st_size}:{st.st_mtime_ns}"

    desc = {
        "ref": ref,
        "files": {
            k: [src(v), v[1] if isinstance(v, tuple) else None] for k, v in layout.files.items()
        },
        "symlinks": layout.symlinks,
        "dirs": layout.dirs,
        "cmd": layout.cmd,
        "entrypoint": layout.entrypoint,
        "env": layout.env,
        "labels": layout.labels,
    }
    return hashlib.sha256(json.dumps(desc, sort_keys=True).encode()).hexdigest()[:12]


def build_one(name: str, built: dict, cache_dir: Path, log=print) -> tuple[str, Path]:
    """Build image `name` into cache_dir/images (reused when its inputs are unchanged)."""
    spec = IMAGES[name]
    layout = spec.gather(built, Path(cache_dir))
    out = Path(cache_dir) / "images" / f"{name}-{_layout_key(spec.ref, layout)}.tar"
    if not out.exists():
        build_image(
            spec.ref,
            layout.files,
            out,
            entrypoint=layout.entrypoint,
            cmd=layout.cmd,
            env=layout.env,
            symlinks=layout.symlinks,
            dirs=layout.dirs,
            labels=layout.labels,
        )
        log(f"  built image {spec.ref}")
    return spec.ref, out


def build_lab_images(versions: dict, built: dict, log=print, cache_dir: Path | None = None):
    """(reference, archive) for every lab image, built when missing.

    `versions` is lab/versions.yaml (busybox-static is checked against BUSYBOX_VERSION);
    `built` is build.build_all()'s result (the toolbox needs paths["kubectl"]).
    Errors are raised as the lab's LabError.
    """
    from .config import LabError, cache_root

    pinned = str(versions.get("debian", {}).get("busybox-static", ""))
    upstream = pinned.split(":", 1)[-1].split("-", 1)[0]
    if pinned and upstream != BUSYBOX_VERSION:
        log(f"  warning: busybox-static {pinned} pinned, images say {BUSYBOX_VERSION}")
    cache = Path(cache_dir) if cache_dir else cache_root() / "lab"
    paths = built.get("paths", {})
    needs = {"toolbox": "kubectl", "pause": "pause"}  # images made from a built program
    names = [n for n in IMAGES if n not in needs or needs[n] in paths]
    try:
        return [build_one(n, built, cache, log) for n in names]
    except OciError as exc:
        raise LabError(str(exc)) from exc


def standin_files(binary: Path) -> Layout:
    """The KAI stand-in: one static binary; each Deployment picks its component by argument."""
    return Layout(
        files={"/usr/local/bin/kai-standin": (str(binary), 0o755)},
        dirs={"/tmp": 0o1777},
        entrypoint=["/usr/local/bin/kai-standin"],
        labels={"dev.kaiops.image": "kai-standin", "dev.kaiops.kai-implementation": "standin"},
    )


def build_standin(ref: str, binary: Path, log=print, cache_dir: Path | None = None):
    """(reference, archive) of the stand-in image, built when its inputs changed."""
    from .config import LabError, cache_root

    layout = standin_files(Path(binary))
    cache = Path(cache_dir) if cache_dir else cache_root() / "lab"
    out = cache / "images" / f"kai-standin-{_layout_key(ref, layout)}.tar"
    if not out.exists():
        try:
            build_image(ref, layout.files, out, entrypoint=layout.entrypoint, dirs=layout.dirs,
                        labels=layout.labels)  # fmt: skip
        except OciError as exc:
            raise LabError(str(exc)) from exc
        log(f"  built image {ref}")
    return ref, out
