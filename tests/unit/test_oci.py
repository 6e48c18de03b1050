"""Unit tests for lab/kailab/oci.py (OCI image archives) and lab/kailab/images.py."""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import re
import sys
import tarfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "lab"))

from kailab import images, oci  # noqa: E402

HAVE_BUSYBOX = images.BUSYBOX_BIN.is_file()


def sha(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


def read_archive(path: Path) -> dict[str, bytes | None]:
    out: dict[str, bytes | None] = {}
    with tarfile.open(path) as tar:
        for m in tar.getmembers():
            f = tar.extractfile(m) if m.isfile() else None
            out[m.name] = f.read() if f else None
    return out


def blob(archive: dict, digest: str) -> bytes:
    return archive["blobs/sha256/" + digest.split(":", 1)[1]]


def layer_members(archive: dict) -> dict[str, tarfile.TarInfo]:
    index = json.loads(archive["index.json"])
    manifest = json.loads(blob(archive, index["manifests"][0]["digest"]))
    layer = gzip.decompress(blob(archive, manifest["layers"][0]["digest"]))
    with tarfile.open(fileobj=io.BytesIO(layer)) as tar:
        return {m.name: m for m in tar.getmembers()}


@pytest.fixture
def sample(tmp_path):
    host = tmp_path / "tool"
    host.write_bytes(b"#!/bin/sh\necho tool\n")
    host.chmod(0o755)
    files = {
        "/usr/local/bin/tool": host,
        "/etc/motd": b"hello\n",
        "/etc/secret": (b"s3cret", 0o600),
    }
    links = {"/bin/sh": "/usr/local/bin/tool", "/usr/bin/tool": "../local/bin/tool"}
    return files, links


def build(tmp_path, files, links, name="img.tar", **kw):
    return oci.build_image(
        "example.test/team/img:v1",
        files,
        tmp_path / name,
        symlinks=links,
        **kw,
    )


# ------------------------------------------------------------------------- structure


def test_build_image_archive_structure(tmp_path, sample):
    res = build(tmp_path, *sample, cmd=["tool"], entrypoint=["/bin/sh", "-c"], workdir="/work")
    archive = read_archive(res.path)
    assert json.loads(archive["oci-layout"]) == {"imageLayoutVersion": "1.0.0"}

    index = json.loads(archive["index.json"])
    assert index["schemaVersion"] == 2
    assert index["mediaType"] == oci.MT_INDEX
    (desc,) = index["manifests"]
    assert desc["annotations"] == {
        "io.containerd.image.name": "example.test/team/img:v1",
        "org.opencontainers.image.ref.name": "v1",
    }
    assert desc["platform"] == {"architecture": "amd64", "os": "linux"}

    manifest_bytes = blob(archive, desc["digest"])
    assert sha(manifest_bytes) == desc["digest"] == res.manifest_digest
    assert len(manifest_bytes) == desc["size"]
    manifest = json.loads(manifest_bytes)
    assert manifest["mediaType"] == oci.MT_MANIFEST
    for d in (manifest["config"], *manifest["layers"]):
        data = blob(archive, d["digest"])
        assert sha(data) == d["digest"]
        assert len(data) == d["size"]
    assert manifest["layers"][0]["mediaType"] == oci.MT_LAYER
    assert manifest["layers"][0]["digest"] == res.layer_digest

    config = json.loads(blob(archive, manifest["config"]["digest"]))
    layer = gzip.decompress(blob(archive, res.layer_digest))
    assert config["rootfs"] == {"type": "layers", "diff_ids": [sha(layer)]}
    assert res.diff_id == sha(layer)
    assert config["architecture"] == "amd64" and config["os"] == "linux"
    assert config["config"]["Cmd"] == ["tool"]
    assert config["config"]["Entrypoint"] == ["/bin/sh", "-c"]
    assert config["config"]["WorkingDir"] == "/work"
    assert config["config"]["Env"] == [f"PATH={oci.DEFAULT_PATH}"]

    (docker,) = json.loads(archive["manifest.json"])
    assert docker["RepoTags"] == ["example.test/team/img:v1"]
    assert docker["Config"] in archive and docker["Layers"][0] in archive

    # only the three blobs, nothing else in blobs/
    blobs = [n for n, v in archive.items() if n.startswith("blobs/sha256/") and v is not None]
    assert len(blobs) == 3
    assert res.size == res.path.stat().st_size


def test_layer_contents_modes_links_and_parents(tmp_path, sample):
    res = build(tmp_path, *sample, dirs={"/tmp": 0o1777})
    members = layer_members(read_archive(res.path))
    assert list(members) == sorted(members)
    assert members["usr/local/bin/tool"].mode == 0o755
    assert members["etc/motd"].mode == 0o644
    assert members["etc/secret"].mode == 0o600
    assert members["bin/sh"].issym() and members["bin/sh"].linkname == "/usr/local/bin/tool"
    assert members["usr/bin/tool"].linkname == "../local/bin/tool"
    # (tarfile drops the trailing slash of directory names when reading)
    for parent in ("usr", "usr/local", "usr/local/bin", "etc", "bin", "usr/bin"):
        assert members[parent].isdir() and members[parent].mode == 0o755
    assert members["tmp"].mode == 0o1777
    for m in members.values():
        assert (m.mtime, m.uid, m.gid, m.uname, m.gname) == (0, 0, 0, "", "")


def test_outer_archive_is_sorted_with_fixed_metadata(tmp_path, sample):
    res = build(tmp_path, *sample)
    with tarfile.open(res.path) as tar:
        members = tar.getmembers()
    names = [m.name for m in members]
    assert names == sorted(names)
    assert {m.mtime for m in members} == {0}
    assert {m.uid for m in members} == {0}


@pytest.mark.parametrize(
    ("env", "expected"),
    [
        pytest.param(None, [f"PATH={oci.DEFAULT_PATH}"], id="default PATH"),
        pytest.param({"A": "1"}, [f"PATH={oci.DEFAULT_PATH}", "A=1"], id="dict keeps PATH"),
        pytest.param({"PATH": "/bin", "A": "1"}, ["PATH=/bin", "A=1"], id="dict overrides PATH"),
        pytest.param(["X=y"], ["X=y"], id="list as given"),
    ],
)
def test_config_env(tmp_path, env, expected):
    res = oci.build_image("busybox:t", {"/a": b"a"}, tmp_path / "e.tar", env=env, arch="arm64")
    archive = read_archive(res.path)
    config = json.loads(blob(archive, res.config_digest))
    assert config["config"]["Env"] == expected
    assert config["architecture"] == "arm64"


# ---------------------------------------------------------------------- determinism


def test_same_inputs_give_identical_archives(tmp_path, sample):
    a = build(tmp_path, *sample, name="a.tar", cmd=["x"])
    b = build(tmp_path, *sample, name="b.tar", cmd=["x"])
    assert a.manifest_digest == b.manifest_digest
    assert a.path.read_bytes() == b.path.read_bytes()


def test_file_order_does_not_matter(tmp_path, sample):
    files, links = sample
    a = build(tmp_path, files, links, name="a.tar")
    b = build(tmp_path, dict(reversed(files.items())), dict(reversed(links.items())), name="b.tar")
    assert a.manifest_digest == b.manifest_digest


def test_host_mtime_does_not_change_digest(tmp_path, sample):
    files, links = sample
    a = build(tmp_path, files, links, name="a.tar")
    files["/usr/local/bin/tool"].touch()
    b = build(tmp_path, files, links, name="b.tar")
    assert a.layer_digest == b.layer_digest


@pytest.mark.parametrize(
    "change",
    [
        pytest.param({"cmd": ["other"]}, id="config change"),
        pytest.param({"files": {"/etc/motd": b"bye\n"}}, id="content change"),
        pytest.param({"files": {"/etc/motd": (b"hello\n", 0o600)}}, id="mode change"),
    ],
)
def test_any_change_changes_the_manifest_digest(tmp_path, sample, change):
    files, links = sample
    base = build(tmp_path, files, links, name="a.tar")
    changed = build(
        tmp_path,
        {**files, **change.get("files", {})},
        links,
        name="b.tar",
        **{k: v for k, v in change.items() if k != "files"},
    )
    assert base.manifest_digest != changed.manifest_digest


# --------------------------------------------------------------------------- refs


@pytest.mark.parametrize(
    ("ref", "full", "familiar"),
    [
        (
            "busybox:kaiops-1.35.0",
            "docker.io/library/busybox:kaiops-1.35.0",
            "busybox:kaiops-1.35.0",
        ),
        ("docker.io/library/ubuntu:latest", "docker.io/library/ubuntu:latest", "ubuntu:latest"),
        ("team/app:1", "docker.io/team/app:1", "team/app:1"),
        ("kaiops.dev/gpuprobe:0.1.0", "kaiops.dev/gpuprobe:0.1.0", "kaiops.dev/gpuprobe:0.1.0"),
        ("localhost:5000/x:y", "localhost:5000/x:y", "localhost:5000/x:y"),
        (
            "registry.k8s.io/pause:3.10.1",
            "registry.k8s.io/pause:3.10.1",
            "registry.k8s.io/pause:3.10.1",
        ),
    ],
)
def test_normalize_ref(ref, full, familiar):
    assert oci.normalize_ref(ref) == full
    assert oci.familiar_ref(ref) == familiar


@pytest.mark.parametrize(
    "ref", ["busybox", "Busybox:1", "a:b:c", "", "x:" + "t" * 200, "x@sha256:ab"]
)
def test_normalize_ref_rejects(ref):
    with pytest.raises(oci.OciError, match="Failed to parse image reference"):
        oci.normalize_ref(ref)


# ------------------------------------------------------------------------- errors


@pytest.mark.parametrize(
    ("files", "links", "message"),
    [
        pytest.param({"relative": b""}, None, "must be absolute", id="relative path"),
        pytest.param({"/.": b""}, None, "not a path below", id="dot"),
        pytest.param({"/": b""}, None, "not a path below", id="root"),
        pytest.param({"/missing": "/nonexistent/file"}, None, "Failed to read", id="missing"),
        pytest.param({"/a": (b"", "644")}, None, "expected", id="bad mode"),
        pytest.param({"/a": 42}, None, "unsupported source", id="bad source"),
        pytest.param({"/bin/sh": b""}, {"/bin/sh": "busybox"}, "also a file", id="link clash"),
        pytest.param({"/a/b": b""}, {"/a": "x"}, "not a directory", id="file under link"),
        pytest.param({"/a": b"", "/a/b": b""}, None, "not a directory", id="file under file"),
        pytest.param({}, {"/l": ""}, "empty target", id="empty link"),
    ],
)
def test_build_image_errors(tmp_path, files, links, message):
    with pytest.raises(oci.OciError, match=message) as info:
        oci.build_image("busybox:t", files, tmp_path / "x.tar", symlinks=links)
    assert str(info.value).startswith("Failed to ")
    assert not (tmp_path / "x.tar").exists()


# ------------------------------------------------------------------------- images.py


def test_dotdot_cannot_escape_the_root(tmp_path):
    res = oci.build_image("busybox:t", {"/a/../../etc/x": b"x"}, tmp_path / "d.tar")
    assert "etc/x" in layer_members(read_archive(res.path))


def test_gpuprobe_version_matches_the_probe_source():
    src = (REPO / "tools" / "gpuprobe" / "probe.go").read_text()
    assert f'const Version = "{images.GPUPROBE_VERSION}"' in src


def test_image_references_are_normalized():
    for spec in images.IMAGES.values():
        assert oci.normalize_ref(spec.ref) == spec.ref
    assert images.BUSYBOX_REF == "docker.io/library/busybox:kaiops-1.35.0"
    assert images.UBUNTU_REF.startswith("docker.io/library/ubuntu:")
    assert images.IMAGES["pause"].ref == images.PAUSE_REF


@pytest.mark.skipif(not HAVE_BUSYBOX, reason="busybox-static not installed")
def test_busybox_files_link_every_applet():
    layout = images.busybox_files()
    assert layout.files["/bin/busybox"][1] == 0o755
    for applet in ("sh", "sleep", "cat", "env", "wget", "nc", "echo", "ls", "ps", "id"):
        assert layout.symlinks[f"/bin/{applet}"] == "busybox"
    assert layout.dirs["/tmp"] == 0o1777


@pytest.mark.skipif(not HAVE_BUSYBOX, reason="busybox-static not installed")
def test_ubuntu_stand_in_sleeps_forever():
    layout = images.ubuntu_files()
    assert layout.cmd == ["sleep", "infinity"]
    assert "/etc/os-release" in layout.files


def test_busybox_files_missing_binary(tmp_path):
    with pytest.raises(oci.OciError, match="busybox-static"):
        images.busybox_files(tmp_path / "busybox")


@pytest.mark.skipif(not HAVE_BUSYBOX, reason="busybox-static not installed")
def test_build_one_busybox_is_cached_and_deterministic(tmp_path):
    logs: list[str] = []
    ref, first = images.build_one("busybox", {}, tmp_path / "a", log=logs.append)
    again_ref, again = images.build_one("busybox", {}, tmp_path / "a", log=logs.append)
    _, other = images.build_one("busybox", {}, tmp_path / "b", log=logs.append)
    assert ref == again_ref == images.BUSYBOX_REF
    assert first == again and len(logs) == 2  # second call reused the archive
    assert first.read_bytes() == other.read_bytes()
    members = layer_members(read_archive(first))
    assert members["bin/busybox"].size == images.BUSYBOX_BIN.stat().st_size
    assert re.fullmatch(r"busybox-[0-9a-f]{12}\.tar", first.name)
