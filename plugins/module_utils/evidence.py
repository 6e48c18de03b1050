# -*- coding: utf-8 -*-
# Copyright: kaiops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Evidence folder I/O shared by the modules and the evidence callback.

- ``resolve_evidence_dir``: the run's folder from the module option or KAIOPS_EVIDENCE_DIR.
- ``EvidenceWriter``: writes files inside that folder only, atomically (temp file + rename),
  and never replaces an existing file.
- ``build_manifest``: the ``sha256sum -c`` compatible manifest over every file.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import hashlib
import json
import os
import re
import tempfile

from ansible_collections.kaiops.runbooks.plugins.module_utils.errors import (
    STATUS_INVALID,
    KaiopsError,
)

ENV_EVIDENCE_DIR = "KAIOPS_EVIDENCE_DIR"
MANIFEST = "manifest.sha256"
STATUS_FILE = "status"
TEMP_PREFIX = ".kaiops-tmp-"

_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")
_SAFE_PART = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9._-]*$")


def safe_name(text, fallback="unnamed"):
    """A file/folder name made of [A-Za-z0-9._-], never starting with a dot."""
    name = _UNSAFE.sub("_", str(text or "")).strip("._-")
    return name[:120] or fallback


def resolve_evidence_dir(option=None, environ=None):
    """The evidence folder to write into, or None when no run folder is known."""
    environ = os.environ if environ is None else environ
    path = option or environ.get(ENV_EVIDENCE_DIR) or None
    if path is None:
        return None
    path = os.path.abspath(os.path.expanduser(path))
    if not os.path.isdir(path):
        source = "evidence_dir" if option else ENV_EVIDENCE_DIR
        raise KaiopsError(
            "Failed to open evidence folder %s (from %s): it is not a directory" % (path, source),
            status=STATUS_INVALID,
        )
    return path


def canonical_json(data):
    """Stable, readable JSON: sorted keys, two-space indent, trailing newline."""
    return json.dumps(data, indent=2, sort_keys=True, default=str) + "\n"


class EvidenceWriter(object):
    """Writes files under ``root``; every path is relative and stays inside it."""

    def __init__(self, root):
        self.root = os.path.realpath(root)
        self.written = []

    def _target(self, relpath):
        parts = [p for p in relpath.replace("\\", "/").split("/") if p]
        if not parts or not all(_SAFE_PART.match(p) for p in parts):
            raise KaiopsError(
                "Failed to write evidence file %r: use relative names of [A-Za-z0-9._-]" % relpath,
                status=STATUS_INVALID,
            )
        return os.path.join(self.root, *parts), "/".join(parts)

    def unique_dir(self, relpath):
        """Create and return a new folder: relpath, or relpath-2, -3... if taken."""
        base_abs, base_rel = self._target(relpath)
        candidate_abs, candidate_rel, n = base_abs, base_rel, 1
        while True:
            try:
                os.makedirs(candidate_abs)
                return candidate_rel
            except FileExistsError:
                n += 1
                candidate_abs, candidate_rel = "%s-%d" % (base_abs, n), "%s-%d" % (base_rel, n)
            except OSError as exc:
                raise KaiopsError(
                    "Failed to create evidence folder %s: %s" % (candidate_abs, exc)
                ) from exc

    def write_bytes(self, relpath, data):
        target, rel = self._target(relpath)
        folder = os.path.dirname(target)
        tmp = None
        try:
            os.makedirs(folder, exist_ok=True)
            fd, tmp = tempfile.mkstemp(prefix=TEMP_PREFIX, dir=folder)
            with os.fdopen(fd, "wb") as handle:
                handle.write(data)
            # link() refuses to replace: an existing file is never overwritten.
            os.link(tmp, target)
            os.unlink(tmp)
        except FileExistsError as exc:
            if tmp and os.path.exists(tmp):
                os.unlink(tmp)
            raise KaiopsError(
                "Failed to write evidence file %s: it already exists and is never replaced" % rel
            ) from exc
        except OSError as exc:
            raise KaiopsError("Failed to write evidence file %s: %s" % (rel, exc)) from exc
        self.written.append(rel)
        return rel

    def write_text(self, relpath, text):
        return self.write_bytes(relpath, text.encode("utf-8"))

    def write_json(self, relpath, data):
        return self.write_text(relpath, canonical_json(data))


def sha256_file(path, chunk=1024 * 1024):
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(chunk), b""):
            digest.update(block)
    return digest.hexdigest()


def bundle_files(root, exclude=(MANIFEST,)):
    """Relative paths of every regular file under root, sorted; temp files and links skipped."""
    found = []
    for folder, dirs, files in os.walk(root):
        dirs.sort()
        for name in files:
            full = os.path.join(folder, name)
            rel = os.path.relpath(full, root).replace(os.sep, "/")
            if name.startswith(TEMP_PREFIX) or rel in exclude or os.path.islink(full):
                continue
            found.append(rel)
    return sorted(found)


def build_manifest(root):
    """Text of manifest.sha256: '<sha256>  <relative path>' per file, as sha256sum writes it."""
    lines = ["%s  %s\n" % (sha256_file(os.path.join(root, rel)), rel) for rel in bundle_files(root)]
    return "".join(lines)


def verify_manifest(root):
    """List of problems (empty when every listed file matches and every file is listed)."""
    problems = []
    manifest_path = os.path.join(root, MANIFEST)
    if not os.path.isfile(manifest_path):
        return ["%s is missing" % MANIFEST]
    listed = {}
    with open(manifest_path, "r") as handle:
        for line in handle:
            digest, _sep, rel = line.rstrip("\n").partition("  ")
            listed[rel] = digest
    for rel, digest in sorted(listed.items()):
        full = os.path.join(root, rel)
        if not os.path.isfile(full):
            problems.append("%s: listed but missing" % rel)
        elif sha256_file(full) != digest:
            problems.append("%s: checksum mismatch" % rel)
    for rel in bundle_files(root):
        if rel not in listed:
            problems.append("%s: present but not in the manifest" % rel)
    return problems
