# -*- coding: utf-8 -*-
# Copyright: kaiops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Keep secrets out of evidence: pure functions, no I/O.

Two tools:

- ``sanitize_object`` reduces one Kubernetes object before it is written or returned.
  The rules are data (``OBJECT_RULES``): each has a predicate and a list of fields it
  removes. Every removal is reported so the evidence says what was left out.
- ``redact_values`` walks any structure (task results, extra vars) and replaces the
  values of keys whose name looks secret, and reduces any embedded Secret object.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import copy
import re

REDACTED = "**REDACTED**"

# Key names whose values never reach evidence: tokens, passwords, secrets, keys, credentials.
DEFAULT_SECRET_KEY_PATTERN = (
    r"(?i)(token|passw(or)?d|passphrase|secret|credential|(^|[_.-])key$|private[_.-]?key"
    r"|api[_.-]?key|access[_.-]?key|client[_.-]?key|auth(orization)?$|bearer|cookie"
    r"|certificate[_.-]?authority[_.-]?data|client[_.-]?certificate[_.-]?data)"
)

LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"

# Environment variable names whose literal values are treated as secrets in Pod specs.
SECRET_ENV_NAME = re.compile(r"(?i)(token|passw|secret|credential|api_?key|access_?key|private)")


def _is_secret(obj):
    return obj.get("kind") == "Secret"


def _is_helm_v2_release(obj):
    labels = (obj.get("metadata") or {}).get("labels") or {}
    return obj.get("kind") == "ConfigMap" and labels.get("OWNER") == "TILLER"


def _is_token_request(obj):
    return obj.get("kind") == "TokenRequest"


def _always(obj):
    return True


def _drop(obj, path):
    """Remove obj[path...]; return True when something was removed."""
    parent = obj
    for part in path[:-1]:
        parent = parent.get(part) if isinstance(parent, dict) else None
        if parent is None:
            return False
    if isinstance(parent, dict) and path[-1] in parent:
        del parent[path[-1]]
        return True
    return False


def _drop_secret_env(obj):
    """Blank literal env values with secret-looking names in every container of a pod spec."""
    removed = []
    spec = obj.get("spec") or {}
    template = (spec.get("template") or {}).get("spec")
    for pod_spec in (spec, template or {}):
        for group in ("initContainers", "containers", "ephemeralContainers"):
            for container in pod_spec.get(group) or []:
                for env in container.get("env") or []:
                    if "value" in env and SECRET_ENV_NAME.search(env.get("name", "")):
                        env["value"] = REDACTED
                        removed.append("env %s/%s" % (container.get("name"), env.get("name")))
    return removed


# Rules as data: (name, predicate, fields removed). Applied in order to a deep copy.
OBJECT_RULES = (
    ("secret-data", _is_secret, (("data",), ("stringData",))),
    ("helm-v2-release", _is_helm_v2_release, (("data",), ("binaryData",))),
    ("token-request", _is_token_request, (("status", "token"),)),
    ("last-applied", _always, (("metadata", "annotations", LAST_APPLIED),)),
    ("managed-fields", _always, (("metadata", "managedFields"),)),
)


def sanitize_object(obj):
    """Return (copy of obj without sensitive fields, list of what was removed)."""
    clean = copy.deepcopy(obj)
    removed = []
    for name, predicate, fields in OBJECT_RULES:
        if not predicate(clean):
            continue
        for path in fields:
            if _drop(clean, path) and name != "managed-fields":
                removed.append(".".join(path))
    removed.extend(_drop_secret_env(clean))
    return clean, removed


class Redactor(object):
    """Replace values of secret-looking keys in any JSON-like structure."""

    def __init__(self, pattern=DEFAULT_SECRET_KEY_PATTERN):
        self._pattern = re.compile(pattern)

    def key_is_secret(self, key):
        return bool(self._pattern.search(str(key)))

    def redact(self, value):
        if isinstance(value, dict):
            if value.get("kind") == "Secret" and ("data" in value or "stringData" in value):
                value = sanitize_object(value)[0]
            out = {}
            for key, item in value.items():
                if self.key_is_secret(key) and _carries_value(item):
                    out[key] = REDACTED
                elif key == LAST_APPLIED:
                    out[key] = REDACTED
                else:
                    out[key] = self.redact(item)
            return out
        if isinstance(value, (list, tuple)):
            return [self.redact(item) for item in value]
        return value


def _carries_value(value):
    """Under a secret-looking key everything but a flag or an empty value is replaced whole."""
    if value is None or isinstance(value, bool):
        return False
    return value not in ("", [], {})


def redact_values(value, pattern=DEFAULT_SECRET_KEY_PATTERN):
    """Shortcut for Redactor(pattern).redact(value)."""
    return Redactor(pattern).redact(value)
