"""Build OCI image archives with the standard library only (no Docker here).

`build_image` writes one tar holding an OCI image layout (``oci-layout``,
``index.json``, ``blobs/sha256/...``) plus a docker-archive style ``manifest.json``
(with ``RepoTags``) pointing at the same blobs, so both ``ctr images import`` and
``docker load`` accept it. The image has a single gzip layer.

Output is deterministic: entries are sorted, every mtime is fixed, owners are root,
gzip headers carry no name or time, so the same inputs give the same digests (with the
same Python/zlib).
"""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import os
import posixpath
import re
import stat
import tarfile
from dataclasses import dataclass
from pathlib import Path

__all__ = ["ImageResult", "OciError", "build_image", "familiar_ref", "normalize_ref"]

EPOCH = 0  # mtime of every entry; history/created say 1970-01-01T00:00:00Z
CREATED = "1970-01-01T00:00:00Z"
DEFAULT_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

MT_INDEX = "application/vnd.oci.image.index.v1+json"
MT_MANIFEST = "application/vnd.oci.image.manifest.v1+json"
MT_CONFIG = "application/vnd.oci.image.config.v1+json"
MT_LAYER = "application/vnd.oci.image.layer.v1.tar+gzip"
ANN_REF_NAME = "org.opencontainers.image.ref.name"
ANN_CONTAINERD_NAME = "io.containerd.image.name"

_REF_RE = re.compile(
    r"^(?P<name>[a-z0-9]+(?:[._-][a-z0-9]+)*(?::[0-9]+)?(?:/[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*)*)"
    r":(?P<tag>[A-Za-z0-9_][A-Za-z0-9_.-]{0,127})$"
)


class OciError(Exception):
    """Base error; messages read "Failed to <verb> <object>: <reason>"."""


@dataclass(frozen=True)
class ImageResult:
    ref: str
    path: Path
    manifest_digest: str
    config_digest: str
    layer_digest: str
    diff_id: str
    size: int


def normalize_ref(ref: str) -> str:
    """Full reference the way containerd names images: busybox:1 ->
    docker.io/library/busybox:1. A tag is required (no digests: the lab tags images)."""
    m = _REF_RE.match(ref or "")
    if not m:
        raise OciError(f"Failed to parse image reference {ref!r}: expected name:tag")
    name, tag = m.group("name"), m.group("tag")
    first, _, rest = name.partition("/")
    if not rest:
        name = f"docker.io/library/{name}"
    elif not ("." in first or ":" in first or first == "localhost"):
        name = f"docker.io/{name}"
    return f"{name}:{tag}"


def familiar_ref(ref: str) -> str:
    """The short form docker prints: docker.io/library/busybox:1 -> busybox:1."""
    full = normalize_ref(ref)
    for prefix in ("docker.io/library/", "docker.io/"):
        if full.startswith(prefix):
            return full[len(prefix) :]
    return full


def _digest(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


def _json(obj) -> bytes:
    return json.dumps(obj, sort_keys=True, separators=(",", ":")).encode()


def _clean(path: str, what: str) -> str:
    """In-image path without the leading slash, normalised; rejects escapes."""
    if not isinstance(path, str) or not path.startswith("/"):
        raise OciError(f"Failed to add {what} {path!r}: paths in the image must be absolute")
    norm = posixpath.normpath(path).lstrip("/")
    if not norm or norm == "." or norm.startswith(".."):
        raise OciError(f"Failed to add {what} {path!r}: not a path below /")
    return norm


def _read_source(image_path: str, spec) -> tuple[bytes, int]:
    """(content, mode) of one entry of ``files``: bytes, a host path, or (either, mode)."""
    mode = None
    src = spec
    if isinstance(spec, tuple):
        if len(spec) != 2 or not isinstance(spec[1], int):
            raise OciError(f"Failed to add file {image_path}: expected (source, mode)")
        src, mode = spec
    if isinstance(src, (bytes, bytearray)):
        return bytes(src), 0o644 if mode is None else mode
    if isinstance(src, (str, os.PathLike)):
        try:
            with open(src, "rb") as fh:
                data = fh.read()
            host_mode = stat.S_IMODE(os.stat(src).st_mode)
        except OSError as exc:
            raise OciError(f"Failed to read {src} for {image_path}: {exc.strerror}") from exc
        if mode is None:
            mode = 0o755 if host_mode & 0o111 else 0o644
        return data, mode
    raise OciError(f"Failed to add file {image_path}: unsupported source {type(src).__name__}")


def _tarinfo(name: str, kind: bytes, mode: int, size: int = 0, target: str = "") -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type = kind
    info.mode = mode
    info.size = size
    info.linkname = target
    info.mtime = EPOCH
    info.uid = info.gid = 0
    info.uname = info.gname = ""
    return info


def _layer_tar(files, symlinks, dirs) -> bytes:
    """The uncompressed layer: parent directories, files, symlinks, sorted by path."""
    entries: dict[str, tuple] = {}
    for path, mode in (dirs or {}).items():
        entries[_clean(path, "directory")] = ("dir", mode)
    for path, spec in (files or {}).items():
        name = _clean(path, "file")
        if name in entries:
            raise OciError(f"Failed to add file {path}: it is given twice")
        entries[name] = ("file", *_read_source(path, spec))
    for path, target in (symlinks or {}).items():
        name = _clean(path, "symlink")
        if name in entries:
            raise OciError(f"Failed to add symlink {path}: the path is also a file or directory")
        if not isinstance(target, str) or not target:
            raise OciError(f"Failed to add symlink {path}: empty target")
        entries[name] = ("symlink", target)
    for name in list(entries):
        parent = posixpath.dirname(name)
        while parent:
            kind = entries.get(parent)
            if kind is None:
                entries[parent] = ("dir", 0o755)
            elif kind[0] != "dir":
                raise OciError(f"Failed to add /{name}: /{parent} is not a directory")
            parent = posixpath.dirname(parent)

    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for name in sorted(entries):
            entry = entries[name]
            if entry[0] == "dir":
                tar.addfile(_tarinfo(name + "/", tarfile.DIRTYPE, entry[1]))
            elif entry[0] == "symlink":
                tar.addfile(_tarinfo(name, tarfile.SYMTYPE, 0o777, target=entry[1]))
            else:
                data, mode = entry[1], entry[2]
                tar.addfile(_tarinfo(name, tarfile.REGTYPE, mode, size=len(data)), io.BytesIO(data))
    return buf.getvalue()


def _gzip(data: bytes) -> bytes:
    buf = io.BytesIO()
    with gzip.GzipFile(filename="", mode="wb", fileobj=buf, mtime=0, compresslevel=6) as gz:
        gz.write(data)
    return buf.getvalue()


def build_image(
    ref: str,
    files: dict,
    out_path,
    *,
    entrypoint: list[str] | None = None,
    cmd: list[str] | None = None,
    env: dict[str, str] | list[str] | None = None,
    workdir: str | None = None,
    symlinks: dict[str, str] | None = None,
    arch: str = "amd64",
    dirs: dict[str, int] | None = None,
    labels: dict[str, str] | None = None,
) -> ImageResult:
    """Write a one-layer image as an importable tar at ``out_path``.

    ``files`` maps an absolute in-image path to bytes, a host path, or a
    ``(bytes-or-host-path, mode)`` tuple (default mode: 0o755 for executable host files,
    else 0o644). ``symlinks`` maps an in-image path to its target; ``dirs`` adds
    (empty) directories with a mode, e.g. ``{"/tmp": 0o1777}``. Parent directories are
    created 0o755. ``env`` is a dict or ``KEY=VALUE`` list; PATH defaults to the usual.
    """
    full = normalize_ref(ref)
    tag = full.rsplit(":", 1)[1]
    layer = _layer_tar(files, symlinks, dirs)
    layer_gz = _gzip(layer)

    if env is None:
        env_list = [f"PATH={DEFAULT_PATH}"]
    elif isinstance(env, dict):
        env_list = [f"{k}={v}" for k, v in env.items()]
        if "PATH" not in env:
            env_list.insert(0, f"PATH={DEFAULT_PATH}")
    else:
        env_list = list(env)
    container_config: dict = {"Env": env_list}
    if entrypoint is not None:
        container_config["Entrypoint"] = list(entrypoint)
    if cmd is not None:
        container_config["Cmd"] = list(cmd)
    if workdir:
        container_config["WorkingDir"] = workdir
    if labels:
        container_config["Labels"] = dict(labels)

    config = _json(
        {
            "architecture": arch,
            "os": "linux",
            "created": CREATED,
            "config": container_config,
            "rootfs": {"type": "layers", "diff_ids": [_digest(layer)]},
            "history": [{"created": CREATED, "created_by": "kaiops lab/kailab/oci.py"}],
        }
    )
    manifest = _json(
        {
            "schemaVersion": 2,
            "mediaType": MT_MANIFEST,
            "config": {"mediaType": MT_CONFIG, "digest": _digest(config), "size": len(config)},
            "layers": [{"mediaType": MT_LAYER, "digest": _digest(layer_gz), "size": len(layer_gz)}],
        }
    )
    index = _json(
        {
            "schemaVersion": 2,
            "mediaType": MT_INDEX,
            "manifests": [
                {
                    "mediaType": MT_MANIFEST,
                    "digest": _digest(manifest),
                    "size": len(manifest),
                    "platform": {"architecture": arch, "os": "linux"},
                    "annotations": {ANN_CONTAINERD_NAME: full, ANN_REF_NAME: tag},
                }
            ],
        }
    )
    blobs = {_digest(b): b for b in (layer_gz, config, manifest)}
    docker_manifest = _json(
        [
            {
                "Config": "blobs/sha256/" + _digest(config).split(":", 1)[1],
                "RepoTags": [familiar_ref(full)],
                "Layers": ["blobs/sha256/" + _digest(layer_gz).split(":", 1)[1]],
            }
        ]
    )

    outer: list[tuple[str, bytes | None]] = [
        ("blobs/", None),
        ("blobs/sha256/", None),
        *(("blobs/sha256/" + d.split(":", 1)[1], b) for d, b in sorted(blobs.items())),
        ("index.json", index),
        ("manifest.json", docker_manifest),
        ("oci-layout", _json({"imageLayoutVersion": "1.0.0"})),
    ]
    out_path = Path(out_path)
    tmp = out_path.with_name(out_path.name + ".tmp")
    try:
        out_path.parent.mkdir(parents=True, exist_ok=True)
        with tarfile.open(tmp, mode="w", format=tarfile.PAX_FORMAT) as tar:
            for name, data in outer:
                if data is None:
                    tar.addfile(_tarinfo(name, tarfile.DIRTYPE, 0o755))
                else:
                    info = _tarinfo(name, tarfile.REGTYPE, 0o644, size=len(data))
                    tar.addfile(info, io.BytesIO(data))
        os.replace(tmp, out_path)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        raise OciError(f"Failed to write image archive {out_path}: {exc.strerror}") from exc
    return ImageResult(
        ref=full,
        path=out_path,
        manifest_digest=_digest(manifest),
        config_digest=_digest(config),
        layer_digest=_digest(layer_gz),
        diff_id=_digest(layer),
        size=out_path.stat().st_size,
    )
