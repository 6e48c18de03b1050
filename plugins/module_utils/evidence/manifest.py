# Copyright: kaiops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The bundle's manifest: ``sha256sum -c`` compatible, over every file but itself."""

import hashlib
import os

from ansible_collections.kaiops.runbooks.plugins.module_utils.evidence.writer import TEMP_PREFIX

MANIFEST = "manifest.sha256"
STATUS_FILE = "status"


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
