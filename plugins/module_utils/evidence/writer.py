# Copyright: kaiops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Evidence folder I/O: the writer every module and the evidence callback share.

- ``resolve_evidence_dir``: the run's folder from the module's ``evidence_dir`` option, which
  the collection's action plugins fill in from the run's context on the controller
  (plugins/plugin_utils/run_context.py); there is no environment variable.
- ``EvidenceWriter``: writes files inside that folder only, atomically (temp file + link), and
  never replaces an existing file. ``write_json`` and ``write_text`` pass what they write
  through the redaction policy it is given (``evidence/redact.py``; the collection's is
  ``bundle/policy.py``), so no module writes a secret, whatever it hands over: data as a
  structure, ``.jsonl`` text line by line as structures, other text by the value rules.
  ``write_bytes`` writes as given: its callers pass data that went through the policy.

The manifest lives in ``evidence/manifest.py``, the report writer in ``bundle/report.py``.
"""

import json
import math
import os
import re
import tempfile

from ansible_collections.kaiops.runbooks.plugins.module_utils.errors import (
    STATUS_INVALID,
    KaiopsError,
)

TEMP_PREFIX = ".kaiops-tmp-"
# Every file of a bundle, whoever writes it (a module, the callback, the recovery journal), gets
# this mode, whatever the umask: a bundle is handed on as a whole, and secrets never reach it.
FILE_MODE = 0o644

_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")
_SAFE_PART = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9._-]*$")


def safe_name(text, fallback="unnamed"):
    """A file/folder name made of [A-Za-z0-9._-], never starting with a dot."""
    name = _UNSAFE.sub("_", str(text or "")).strip("._-")
    return name[:120] or fallback


def resolve_evidence_dir(option=None):
    """The evidence folder to write into, or None when no run folder is known."""
    if not option:
        return None
    path = os.path.abspath(os.path.expanduser(option))
    if not os.path.isdir(path):
        raise KaiopsError(
            "Failed to open evidence folder %s (from evidence_dir): it is not a directory" % path,
            status=STATUS_INVALID,
        )
    return path


def finite(data):
    """``data`` with every NaN or infinite float as its text ("nan", "inf", "-inf"): JSON has no
    such numbers, and a file that holds one is not JSON."""
    if isinstance(data, float) and not math.isfinite(data):
        return repr(data)
    if isinstance(data, dict):
        return {k: finite(v) for k, v in data.items()}
    if isinstance(data, (list, tuple)):
        return [finite(v) for v in data]
    return data


def canonical_json(data):
    """Stable, readable JSON: sorted keys, two-space indent, trailing newline; always valid JSON
    (``finite``)."""
    return json.dumps(finite(data), indent=2, sort_keys=True, default=str, allow_nan=False) + "\n"


class EvidenceWriter:
    """Writes files under ``root``; every path is relative and stays inside it.

    ``policy``: the redaction policy applied by write_json/write_text (``bundle/policy.py``'s
    default, or kai_snapshot's with ConfigMap values kept when the user opted in). There is no
    default here: which ConfigMaps are evidence is the caller's to say.
    """

    def __init__(self, root, policy):
        self.root = os.path.realpath(root)
        self.policy = policy
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
            os.fchmod(fd, FILE_MODE)
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
        """Text through the policy: JSON lines as structures, anything else by the value rules."""
        if relpath.endswith(".jsonl"):
            text = self.policy.redact_jsonl(text)
        else:
            text = self.policy.redact_text(text)
        return self.write_bytes(relpath, text.encode("utf-8"))

    def write_json(self, relpath, data):
        """Data through the policy, written as canonical JSON."""
        return self.write_bytes(relpath, canonical_json(self.policy.redact(data)).encode("utf-8"))

    def write(self, relpath, data):
        """Text as text, anything else as JSON (both through the policy)."""
        if isinstance(data, str):
            return self.write_text(relpath, data)
        return self.write_json(relpath, data)
