"""Build the lab's programs from pinned module versions into a cache keyed by version.

Go programs come from the module proxy through the wrapper modules in
lab/build/<family>/; the pause binary from the C source that ships inside the
pinned k8s.io/kubernetes module. Nothing is rebuilt when its output exists.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

from .config import REPO, LabError, cache_root, family_key, load_versions

GO_FAMILIES = ("etcd", "kubernetes", "kwok", "helm", "fakegpu", "kai-standin")
DEBIAN_BINARIES = {"containerd": "/usr/bin/containerd", "runc": "/usr/sbin/runc"}
HEARTBEAT_S = 30  # a line every this many seconds while one `go build` runs


def _ldflags(family: str, version: str) -> str:
    """Version stamps, so `kubectl version` and friends report the real version."""
    if family == "kubernetes":
        major, minor = version.lstrip("v").split(".")[:2]
        stamps = []
        for pkg in ("k8s.io/component-base/version", "k8s.io/client-go/pkg/version"):
            stamps += [
                f"-X {pkg}.gitVersion={version}",
                f"-X {pkg}.gitMajor={major}",
                f"-X {pkg}.gitMinor={minor}",
                f"-X {pkg}.gitTreeState=clean",
                f"-X {pkg}.buildDate=1970-01-01T00:00:00Z",
            ]
        return " ".join(["-s -w", *stamps])
    if family == "helm":
        return f"-s -w -X helm.sh/helm/v3/internal/version.version={version}"
    if family == "kwok":
        return f"-s -w -X sigs.k8s.io/kwok/pkg/consts.Version={version}"
    if family in ("etcd", "fakegpu", "kai-standin"):
        return "-s -w"
    raise LabError(f"Failed to build {family}: no ldflags defined for this family")


def _package(family: str, module: str, program: str) -> str:
    if family == "kubernetes":
        return f"{module}/cmd/{program}"
    if family == "kwok":
        return f"{module}/cmd/kwok"
    if family == "helm":
        return f"{module}/cmd/helm"
    return "."  # etcd (our main calls etcdmain) and our own fakegpu plugin


def bin_dir(versions: dict, family: str) -> Path:
    return cache_root() / "lab" / "bin" / family_key(versions, family)


def build_family(versions: dict, family: str, log=print) -> dict[str, Path]:
    spec = versions[family]
    out = bin_dir(versions, family)
    out.mkdir(parents=True, exist_ok=True)
    wrapper = REPO / spec["wrapper"]
    goflags = f"{os.environ.get('GOFLAGS', '')} -mod=readonly -buildvcs=false".strip()
    env = {**os.environ, "CGO_ENABLED": "0", "GOFLAGS": goflags}
    paths = {}
    for program in spec["programs"]:
        target = out / program
        paths[program] = target
        if target.exists():
            continue
        started = time.monotonic()
        log(f"  building {program} {spec['version']} ...")
        tmp = target.with_suffix(".tmp")
        proc = subprocess.Popen(
            ["go", "build", "-trimpath", "-ldflags", _ldflags(family, spec["version"]),
             "-o", str(tmp), _package(family, spec["module"], program)],
            cwd=wrapper, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )  # fmt: skip
        # A cold build of one program can take minutes: say it is still running.
        # communicate() rather than wait(): it drains the pipes, so a chatty build cannot block.
        try:
            while True:
                try:
                    _, stderr = proc.communicate(timeout=HEARTBEAT_S)
                    break
                except subprocess.TimeoutExpired:
                    log(f"  building {program} ... {time.monotonic() - started:.0f}s")
        except BaseException:
            proc.kill()  # as subprocess.run does: no go build outlives an interrupted lab build
            proc.wait()
            raise
        if proc.returncode != 0:
            raise LabError(f"Failed to build {program}: {stderr.strip()[-2000:]}")
        tmp.rename(target)  # only a finished build counts as present
        log(f"  built {program} in {time.monotonic() - started:.0f}s")
    return paths


def module_dir(versions: dict, family: str) -> Path:
    spec = versions[family]
    proc = subprocess.run(
        ["go", "mod", "download", "-json", f"{spec['module']}@{spec['version']}"],
        cwd=REPO / spec["wrapper"], capture_output=True, text=True, check=False,
    )  # fmt: skip
    if proc.returncode != 0:
        raise LabError(f"Failed to download {spec['module']}: {proc.stderr.strip()}")
    return Path(json.loads(proc.stdout)["Dir"])


def build_pause(versions: dict, log=print) -> Path:
    """pause from build/pause/linux/pause.c in the pinned kubernetes module, linked statically."""
    out = bin_dir(versions, "kubernetes") / "pause"
    if out.exists():
        return out
    src = module_dir(versions, "kubernetes") / "build" / "pause" / "linux" / "pause.c"
    cc = shutil.which("gcc") or shutil.which("cc")
    if not cc:
        raise LabError("Failed to build pause: no C compiler; install gcc")
    tag = versions["kubernetes"]["pause_image"].rsplit(":", 1)[1]
    proc = subprocess.run(
        [cc, "-Os", "-static", "-Wall", "-Werror", f'-DVERSION="{tag}"', "-o", str(out), str(src)],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    if proc.returncode != 0:
        raise LabError(f"Failed to build pause: {proc.stderr.strip()}")
    log(f"  built pause {tag}")
    return out


def kwok_stages_path(versions: dict) -> Path:
    return cache_root() / "lab" / "kwok" / family_key(versions, "kwok") / "stages.yaml"


def kwok_stages(versions: dict) -> Path:
    """The node and pod stages that ship in the pinned kwok module, as one config file."""
    out = kwok_stages_path(versions)
    if out.exists():
        return out
    root = module_dir(versions, "kwok") / "kustomize" / "stage"
    docs = []
    for sub in ("node/fast", "node/heartbeat-with-lease", "pod/fast"):
        for f in sorted((root / sub).glob("*.yaml")):
            if f.name != "kustomization.yaml":
                docs.append(f.read_text().strip())
    if not docs:
        raise LabError(f"Failed to read kwok stages: none found under {root}")
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("\n---\n".join(docs) + "\n")
    return out


def debian_binaries() -> dict[str, Path]:
    missing = [name for name, p in DEBIAN_BINARIES.items() if not Path(p).exists()]
    if missing:
        raise LabError(
            f"Failed to find {', '.join(missing)}: install the Debian packages with `make lab-deps`"
        )
    return {name: Path(p) for name, p in DEBIAN_BINARIES.items()}


def debian_version(package: str) -> str:
    proc = subprocess.run(
        ["dpkg-query", "-W", "-f=${Version}", package], capture_output=True, text=True, check=False
    )
    return proc.stdout.strip() if proc.returncode == 0 else "not installed"


def build_all(log=print, skip: tuple[str, ...] = ()) -> dict:
    versions = load_versions()
    paths, stamps = {}, {}
    for family in (f for f in GO_FAMILIES if f not in skip):
        for program, path in build_family(versions, family, log).items():
            paths[program] = path
            stamps[program] = versions[family]["version"]
    paths["pause"] = build_pause(versions, log)
    for name, path in debian_binaries().items():
        paths[name] = path
        stamps[name] = debian_version(name)
    # Debian replaces old versions in its archive, so packages install by name; a drift
    # from the pinned version is said, and the lab's stamp records what really runs.
    for package, pinned in versions["debian"].items():
        installed = debian_version(package)
        if pinned != "any" and installed != pinned:
            log(f"  note: {package} {installed} installed, {pinned} pinned in lab/versions.yaml")
    return {"paths": paths, "versions": stamps, "stages": kwok_stages(versions)}


if __name__ == "__main__":  # pragma: no cover - used by `make lab-build`
    try:
        build_all()
    except LabError as exc:
        print(exc, file=sys.stderr)
        sys.exit(1)
