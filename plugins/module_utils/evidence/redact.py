# Copyright: kaiops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Keep secrets out of evidence: the one redaction policy every writer applies. Pure, no I/O.

Every file of a bundle passes through :class:`RedactionPolicy`: the evidence callback
(``run.json``, ``tasks.jsonl``) and :class:`evidence.writer.EvidenceWriter`, which every
module writes through (snapshots, inventory, recovery, gpu_access, rollout, reproduce). The same
object is therefore redacted the same way wherever it is written.

The policy judges keys *and* values:

- **Objects** (``OBJECT_RULES``, applied to anything shaped like a Kubernetes object, at any
  depth): Secret ``data``/``stringData``, Helm v2 release data, TokenRequest tokens, the
  last-applied annotation and ``managedFields`` are removed; ConfigMaps keep their keys, each
  value replaced by its hash (unless ``configmap_values``), except those the caller's
  ``evidence_configmap`` names: they keep keys and values, they are the evidence. This layer
  knows no scheduler: the collection's policy (``bundle/policy.py``) names KAI's GPU-sharing
  ConfigMaps (``kai/facts.py``).
- **Keys**: the value of a key whose name looks secret (``key_pattern``) is replaced, unless the
  name says it holds a reference (``REFERENCE_NAME``: ``secretName``, ``token_file``,
  ``--queue-label-key``; and a mapping key spelt ``key``, as in tolerations, selectors and
  ``secretKeyRef``). ``{name, value}`` pairs (env) are judged by the pair's name too.
- **Lists of arguments**: ``["--api-token", "<value>"]`` replaces the value after a bare flag
  whose name looks secret.
- **Text** (every string, and whole text files; ``TextRules``): PEM blocks, JWTs, bearer
  tokens, the password of ``scheme://user:password@host`` (scheme, user and host kept),
  ``--<secret name>=<value>`` and ``--<secret name> <value>``, ``<secret name>=<value>`` and
  ``"<secret name>": "<value>"``, and long high-entropy strings. Hex strings (hashes, sha256
  digests, resourceVersions), UUIDs (Kubernetes UIDs, ``GPU-<uuid>``), and names made of words
  and hex (``binder-5d8f7c9b6-x2x7k``) are never taken for high-entropy secrets.

A replaced value becomes ``<redacted len~N sha256:XXXXXXXX>``: N is its length class (the next
power of two, at least 8) and XXXXXXXX the first 8 hex digits of its SHA-256, so two runs can
be compared without either holding the value. ConfigMap values are ``<hashed ...>`` in the same
form. Applying the policy twice changes nothing.
"""

import copy
import hashlib
import json
import math
import re

# Key names whose values never reach evidence: tokens, passwords, secrets, keys, credentials.
DEFAULT_SECRET_KEY_PATTERN = (
    r"(?i)(token|passw(or)?d|passphrase|secret|credential|(^|[_.-])key$|private[_.-]?key"
    r"|api[_.-]?key|access[_.-]?key|client[_.-]?key|auth(orization)?$|bearer|cookie"
    r"|certificate[_.-]?authority[_.-]?data|client[_.-]?certificate[_.-]?data)"
)

# Names that match the secret pattern but hold a reference, a path or a setting, not a secret:
# secretName, token_file, --tls-private-key-file, tokenSecretNamespace, --token-ttl, and the
# keys of labels, annotations, taints... (KAI's --queue-label-key=kai.scheduler/queue).
REFERENCE_NAME = re.compile(
    r"(?i)((name|names|namespace|ref|file|path|dir|directory|url|uri|endpoint|ttl"
    r"|seconds|timeout|type|kind|enabled|disabled|mode|length|size|count)$"
    r"|(label|annotation|taint|toleration|selector|topology|sort|partition)[_.-]?keys?$)"
)
# A mapping key spelt `key` names something in Kubernetes (tolerations, label selectors,
# secretKeyRef/configMapKeyRef, volume items): its value is judged by the value rules only.
# (A flag --key=... or an env var KEY is still a secret by name.)
REFERENCE_KEYS = ("key", "keys")

LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"
HELM_V2_OWNER = "TILLER"

MARKER = re.compile(r"<(?:redacted|hashed) len~\d+ sha256:[0-9a-f]{8}>")
_MARKER_START = ("<redacted len~", "<hashed len~")
# Flag values and key values that say nothing secret.
_PLAIN_VALUES = ("", "true", "false", "yes", "no", "null", "none")


def marker(value, what="redacted"):
    """``<redacted len~N sha256:XXXXXXXX>`` for ``value`` (text, or any JSON value)."""
    if isinstance(value, bytes):
        value = value.decode("utf-8", "replace")
    text = value if isinstance(value, str) else json.dumps(value, sort_keys=True, default=str)
    size = 8
    while size < len(text):
        size *= 2
    digest = hashlib.sha256(text.encode("utf-8")).hexdigest()[:8]
    return "<%s len~%d sha256:%s>" % (what, size, digest)


def is_marker(value):
    """True for a value the policy already replaced (so applying it twice changes nothing)."""
    return isinstance(value, str) and value.startswith(_MARKER_START)


def is_redacted(value):
    """True for a whole value that is a redaction or hash marker."""
    return isinstance(value, str) and MARKER.fullmatch(value) is not None


def has_redaction(value):
    """True for text that holds a marker (a whole value replaced, or a part: a URL password)."""
    return isinstance(value, str) and MARKER.search(value) is not None


def _carries_value(value):
    """Under a secret-looking name everything but a flag or an empty value is replaced."""
    if value is None or isinstance(value, bool) or is_marker(value):
        return False
    if isinstance(value, str) and value.strip().lower() in _PLAIN_VALUES:
        return False
    return value not in ([], {})


# ------------------------------------------------------------------------------ text rules


def shannon_entropy(text):
    """Bits per character of ``text``."""
    if not text:
        return 0.0
    counts = {}
    for char in text:
        counts[char] = counts.get(char, 0) + 1
    total = float(len(text))
    return -sum(n / total * math.log(n / total, 2) for n in counts.values())


_HEX = re.compile(r"^[0-9a-fA-F]+$")
_UUID = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")
_SEGMENT = re.compile(r"[-_/.+=]+")
HIGH_ENTROPY_MIN_LENGTH = 32
HIGH_ENTROPY_MIN_BITS = 4.0


def _mixed(segment):
    """A segment with upper case, lower case and digits: how random tokens look."""
    return (
        any(c.isupper() for c in segment)
        and any(c.islower() for c in segment)
        and any(c.isdigit() for c in segment)
    )


def looks_high_entropy(token):
    """A long random-looking token: mixed case and digits, high entropy, not a hash or a UUID.

    Not secrets, never redacted: hex (hashes, digests, resourceVersions, commits), UUIDs
    (Kubernetes UIDs, GPU-<uuid>), and tokens whose parts are words, numbers or hex
    (``binder-5d8f7c9b6-x2x7k``, ``venv-b7474972fff5/lib/python3``).
    """
    if len(token) < HIGH_ENTROPY_MIN_LENGTH or is_marker(token):
        return False
    bare = _UUID.sub("", token)
    if _HEX.match(_SEGMENT.sub("", bare) or "0"):
        return False
    segments = [s for s in _SEGMENT.split(bare) if s]
    if not any(_mixed(s) and len(s) >= 8 for s in segments):
        return False
    return shannon_entropy(token) >= HIGH_ENTROPY_MIN_BITS


def _at_marker(match, group):
    """The group starts where a marker already is (the policy ran on this text before)."""
    return match.string.startswith(_MARKER_START, match.start(group))


def _value_group(match, group):
    """Replace one group of a match with its marker, keeping the rest of the match."""
    if _at_marker(match, group):
        return match.group(0)
    start, end = match.span(group)
    whole = match.group(0)
    offset = match.start(0)
    return whole[: start - offset] + marker(match.group(group)) + whole[end - offset :]


def _looks_credential(text):
    """After 'Bearer'/'Basic': a credential, not a word of prose."""
    return (
        any(c.isdigit() for c in text)
        or "=" in text
        or (any(c.isupper() for c in text) and any(c.islower() for c in text))
    )


class TextRules:
    """The value rules over one string (``apply``): each replaces what it finds with a marker."""

    PEM = re.compile(r"-----BEGIN ([A-Z0-9 ]+)-----(?:(?!-----END ).)*?(-----END \1-----|\Z)", re.S)
    JWT = re.compile(r"\beyJ[A-Za-z0-9_-]{6,}\.[A-Za-z0-9_-]{6,}\.[A-Za-z0-9_-]*")
    # 'Bearer <token>' (RFC 6750 characters) and 'Basic <base64>'.
    BEARER = re.compile(
        r"(?i)\b(bearer)(\s+)([A-Za-z0-9._~+/-]{8,}=*)"
        r"|\b(basic)(\s+)([A-Za-z0-9+/]{8,}={0,2})(?![\w.~-])"
    )
    URL_PASSWORD = re.compile(r"\b([A-Za-z][A-Za-z0-9+.-]*://)([^\s:/?#@<>\"']*):([^\s/?#@\"']+)@")
    # Where a value may follow a name: --flag=, --flag<space>, -flag=, name=, "name": (JSON in
    # text). An unquoted 'Name: value' is prose or YAML and left alone (YAML ConfigMap values are
    # hashed anyway). Only the head is matched, so a value that is not judged (a quoted
    # sh -c '... --token x') is still scanned for the names inside it.
    HEADS = re.compile(
        r"(?<![\w-])(?P<fd>--?)(?P<fname>[A-Za-z][\w.-]*)(?P<fsep>=|[ \t]+)"
        r"|(?<![\w.-])(?P<quote>[\"'])(?P<qname>[A-Za-z_][\w.-]*)(?P=quote)\s*[=:]\s*"
        r"|(?<![\w.-])(?P<aname>[A-Za-z_][\w.-]*)\s*=\s*"
    )
    # A value: "double quoted", 'single quoted' (the rule replaces what is inside) or bare.
    VALUE = re.compile(r"\"(?P<dq>[^\"]*)\"|'(?P<sq>[^']*)'|(?P<bare>[^\s\"',;&}\]]+)")
    TOKEN = re.compile(r"(?<![A-Za-z0-9+/_=-])[A-Za-z0-9+/_-]{%d,}={0,2}(?![A-Za-z0-9+/_=-])"
                       % HIGH_ENTROPY_MIN_LENGTH)  # fmt: skip

    def __init__(self, name_is_secret):
        self._secret = name_is_secret

    def apply(self, text):
        if len(text) < 6 or is_redacted(text):
            return text
        if "-----BEGIN " in text:
            text = self.PEM.sub(self._pem, text)
        if "eyJ" in text:
            text = self.JWT.sub(lambda m: marker(m.group(0)), text)
        text = self.BEARER.sub(self._bearer, text)
        if "://" in text:
            text = self.URL_PASSWORD.sub(self._url, text)
        if "=" in text or ":" in text or "-" in text:
            text = self._named_values(text)
        return self.TOKEN.sub(self._token, text)

    def _named_values(self, text):
        """Replace the value after every secret-looking name (flags, assignments, JSON keys)."""
        out, done = [], 0
        for head in self.HEADS.finditer(text):
            if head.start() < done:
                continue  # inside a value replaced already
            name = head.group("fname") or head.group("qname") or head.group("aname")
            if head.group("qname") and name in REFERENCE_KEYS:
                continue  # '"key": "nvidia.com/gpu"': JSON of a toleration, as for mappings
            spaced = head.group("fsep") is not None and head.group("fsep").strip() == ""
            if spaced and head.group("fd") == "-":
                continue  # '-x word': a short option's argument is not judged
            value = self.VALUE.match(text, head.end())
            if value is None or (spaced and value.group(0).startswith("-")):
                continue  # '--flag --next': no value
            group = next(g for g in ("dq", "sq", "bare") if value.group(g) is not None)
            inner = value.group(group)
            if (
                not self._secret(name)
                or not _carries_value(inner)
                or inner.lower() in ("bearer", "basic")  # 'Authorization: Bearer <t>': own rule
                or text.startswith(_MARKER_START, value.start(group))
            ):
                continue
            out.append(text[done : value.start(group)])
            out.append(marker(inner))
            done = value.end(group)
        out.append(text[done:])
        return "".join(out)

    @staticmethod
    def _pem(match):
        kind, whole = match.group(1), match.group(0)
        header = "-----BEGIN %s-----" % kind
        footer = "-----END %s-----" % kind
        inner = whole[len(header) :]
        inner = inner[: -len(footer)] if inner.endswith(footer) else inner
        if is_redacted(inner):
            return whole
        return header + marker(whole) + footer

    @staticmethod
    def _bearer(match):
        group = 3 if match.group(3) is not None else 6
        if is_marker(match.group(group)) or not _looks_credential(match.group(group)):
            return match.group(0)
        return _value_group(match, group)

    @staticmethod
    def _url(match):
        if is_marker(match.group(3)):
            return match.group(0)
        return _value_group(match, 3)

    @staticmethod
    def _token(match):
        token = match.group(0)
        return marker(token) if looks_high_entropy(token) else token


# ------------------------------------------------------------------------------ object rules


def _meta(obj):
    meta = obj.get("metadata")
    return meta if isinstance(meta, dict) else {}


def object_kind(obj):
    """The kind of a Kubernetes-shaped dict, or None; items of a LIST may lack ``kind``."""
    if not isinstance(obj, dict):
        return None
    kind = obj.get("kind")
    if isinstance(kind, str):
        return kind
    if not isinstance(obj.get("metadata"), dict):
        return None
    if "apiVersion" in obj or "data" in obj or "stringData" in obj:
        if isinstance(obj.get("type"), str) and ("data" in obj or "stringData" in obj):
            return "Secret"
        data = obj.get("data")
        if isinstance(data, dict) and all(isinstance(v, str) for v in data.values()):
            return "ConfigMap"
    return None


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


def _pod_specs(obj):
    """Pod specs in an object: a Pod, a template (Deployment, Job...), a CronJob's template."""
    spec = obj.get("spec") if isinstance(obj.get("spec"), dict) else {}
    found = [spec]
    template = spec.get("template")
    if isinstance(template, dict) and isinstance(template.get("spec"), dict):
        found.append(template["spec"])
    job = (spec.get("jobTemplate") or {}).get("spec") if isinstance(spec, dict) else None
    if isinstance(job, dict):
        found.append(((job.get("template") or {}).get("spec")) or {})
    return found


def _no_configmap(obj):
    return False


def _containers(obj):
    for pod_spec in _pod_specs(obj):
        for group in ("initContainers", "containers", "ephemeralContainers"):
            for container in pod_spec.get(group) or []:
                if isinstance(container, dict):
                    yield container


class RedactionPolicy:
    """The one policy: objects, keys, argument lists and text. See the module docstring.

    ``key_pattern``: regular expression searched in key, flag and env names (the callback's
    ``redact_pattern`` option); ``configmap_values``: keep the values of every ConfigMap
    (kai_snapshot's opt-in); ``evidence_configmap``: ``predicate(obj)``, true for a ConfigMap
    whose values are the evidence and are always kept (none without one).
    """

    def __init__(
        self,
        key_pattern=DEFAULT_SECRET_KEY_PATTERN,
        configmap_values=False,
        evidence_configmap=None,
    ):
        self._pattern = re.compile(key_pattern or DEFAULT_SECRET_KEY_PATTERN)
        self.configmap_values = bool(configmap_values)
        self.evidence_configmap = evidence_configmap or _no_configmap
        self.text_rules = TextRules(self.name_is_secret)

    # ----------------------------------------------------------------- names

    def key_is_secret(self, key):
        """The key's name matches the pattern (whatever it holds)."""
        return bool(self._pattern.search(str(key)))

    def name_is_secret(self, name):
        """A flag, env or key name whose value is a secret: it matches, and is no reference."""
        name = str(name)
        return self.key_is_secret(name) and not REFERENCE_NAME.search(name)

    def mapping_key_is_secret(self, key):
        """A mapping key whose value is a secret: a secret name, and not a bare ``key``."""
        return str(key) not in REFERENCE_KEYS and self.name_is_secret(key)

    # ----------------------------------------------------------------- entry points

    def redact(self, value):
        """Any JSON-like structure (task results, extra vars, documents), redacted."""
        return self._walk(value, "", None)

    def redact_text(self, text):
        """Free text (Markdown reports, logs): the value rules of every line."""
        return self.text_rules.apply(text) if isinstance(text, str) else text

    def redact_jsonl(self, text):
        """JSON lines: each line redacted as a structure; a line that is not JSON, as text."""
        out = []
        for line in text.split("\n"):
            try:
                value = json.loads(line) if line.strip() else None
            except ValueError:
                out.append(self.redact_text(line))
                continue
            if value is None and not line.strip():
                out.append(line)
                continue
            out.append(
                json.dumps(self.redact(value), sort_keys=True, separators=(",", ":"), default=str)
            )
        return "\n".join(out)

    def sanitize_object(self, obj):
        """(redacted copy of one Kubernetes object, list of what was removed or replaced)."""
        found = []
        clean = copy.deepcopy(obj)
        found.extend(self._object_rules(clean))
        clean = self._walk(clean, "", found, object_done=True)
        return clean, found

    # ----------------------------------------------------------------- walking

    def _note(self, found, path):
        if found is not None:
            found.append(path)

    def _walk(self, value, path, found, object_done=False):
        if isinstance(value, dict):
            if not object_done and object_kind(value):
                value = copy.deepcopy(value)
                self._object_rules(value)
            return self._walk_dict(value, path, found)
        if isinstance(value, (list, tuple)):
            return self._walk_list(value, path, found)
        if isinstance(value, str):
            clean = self.redact_text(value)
            if clean != value:
                self._note(found, path)
            return clean
        return value

    def _walk_dict(self, value, path, found):
        env_secret = (
            isinstance(value.get("name"), str)
            and "value" in value
            and self.name_is_secret(value["name"])
        )
        out = {}
        for key, item in value.items():
            sub = "%s.%s" % (path, key) if path else str(key)
            if key == LAST_APPLIED or (key == "managedFields" and isinstance(item, list)):
                continue
            if env_secret and key == "value" and _carries_value(item):
                out[key] = marker(item)
                self._note(found, sub)
            elif self.mapping_key_is_secret(key) and _carries_value(item):
                out[key] = self._secret_value(item, sub, found)
            else:
                out[key] = self._walk(item, sub, found)
        return out

    def _walk_list(self, value, path, found):
        out = []
        secret_next = False
        for number, item in enumerate(value):
            sub = "%s[%d]" % (path, number)
            if secret_next and isinstance(item, str) and not item.startswith("-"):
                secret_next = False
                if _carries_value(item):
                    out.append(marker(item))
                    self._note(found, sub)
                    continue
            secret_next = isinstance(item, str) and self._bare_secret_flag(item)
            out.append(self._walk(item, sub, found))
        return out

    _BARE_FLAG = re.compile(r"^--?([A-Za-z][\w.-]*)$")

    def _bare_secret_flag(self, item):
        match = self._BARE_FLAG.match(item)
        return bool(match) and self.name_is_secret(match.group(1))

    def _secret_value(self, item, path, found):
        """The value of a secret-looking key: replaced whole, or for a mapping (a secretKeyRef,
        a volume's secret), every leaf but the references."""
        if isinstance(item, dict):
            out = {}
            for key, sub_item in item.items():
                sub = "%s.%s" % (path, key)
                reference = str(key) in REFERENCE_KEYS or REFERENCE_NAME.search(str(key))
                if reference or not _carries_value(sub_item):
                    out[key] = self._walk(sub_item, sub, found)
                elif isinstance(sub_item, (dict, list)):
                    out[key] = self._secret_value(sub_item, sub, found)
                elif isinstance(sub_item, str):
                    out[key] = marker(sub_item)
                    self._note(found, sub)
                else:
                    out[key] = sub_item
            return out
        if isinstance(item, list):
            out = []
            for number, sub_item in enumerate(item):
                sub = "%s[%d]" % (path, number)
                if isinstance(sub_item, (dict, list)):
                    out.append(self._secret_value(sub_item, sub, found))
                elif _carries_value(sub_item):
                    out.append(marker(sub_item))
                    self._note(found, sub)
                else:
                    out.append(sub_item)
            return out
        self._note(found, path)
        return marker(item)

    # ----------------------------------------------------------------- objects

    def _object_rules(self, obj):
        """Apply OBJECT_RULES to ``obj`` in place; returns what was removed or replaced."""
        removed = []
        kind = object_kind(obj)
        for _name, predicate, action in OBJECT_RULES:
            if predicate(self, obj, kind):
                removed.extend(action(self, obj))
        return removed

    def _hash_configmap(self, obj):
        done = []
        for field in ("data", "binaryData"):
            data = obj.get(field)
            if not isinstance(data, dict):
                continue
            hashed = 0
            for key, item in data.items():
                if not is_marker(item):
                    data[key] = marker(item, "hashed")
                    hashed += 1
            if hashed:
                done.append("%s: values hashed: %d (not a GPU-sharing ConfigMap)" % (field, hashed))
        return done

    def _secret_env(self, obj):
        """Literal env values with secret-looking names, named 'env <container>/<NAME>'."""
        done = []
        for container in _containers(obj):
            for env in container.get("env") or []:
                if not isinstance(env, dict) or not _carries_value(env.get("value")):
                    continue
                if self.name_is_secret(env.get("name", "")):
                    env["value"] = marker(env["value"])
                    done.append("env %s/%s" % (container.get("name"), env.get("name")))
        return done

    def _secret_args(self, obj):
        """Container args/command with a secret-looking flag, named 'args <container>[i]'."""
        done = []
        for container in _containers(obj):
            for field in ("command", "args"):
                items = container.get(field)
                if not isinstance(items, list):
                    continue
                clean = self._walk_list(items, "", [])
                for number, before in enumerate(items):
                    if before != clean[number]:
                        done.append("%s %s[%d]" % (field, container.get("name"), number))
                container[field] = clean
        return done


def _drop_fields(*paths, **kwargs):
    report = kwargs.get("report", True)

    def action(policy, obj):
        done = [".".join(p) for p in paths if _drop(obj, p)]
        return done if report else []

    return action


def _kind_is(*kinds):
    return lambda policy, obj, kind: kind in kinds


def _helm_v2(policy, obj, kind):
    return kind == "ConfigMap" and (_meta(obj).get("labels") or {}).get("OWNER") == HELM_V2_OWNER


def _plain_configmap(policy, obj, kind):
    return (
        kind == "ConfigMap"
        and not policy.configmap_values
        and not _helm_v2(policy, obj, kind)
        and not policy.evidence_configmap(obj)
    )


def _always(policy, obj, kind):
    return True


# Rules as data: (name, predicate(policy, obj, kind), action(policy, obj) -> removed), in order.
OBJECT_RULES = (
    ("secret-data", _kind_is("Secret"), _drop_fields(("data",), ("stringData",))),
    ("helm-v2-release", _helm_v2, _drop_fields(("data",), ("binaryData",))),
    ("configmap-values", _plain_configmap, RedactionPolicy._hash_configmap),
    ("token-request", _kind_is("TokenRequest"), _drop_fields(("status", "token"))),
    ("last-applied", _always, _drop_fields(("metadata", "annotations", LAST_APPLIED))),
    ("managed-fields", _always, _drop_fields(("metadata", "managedFields"), report=False)),
    ("secret-env", _always, RedactionPolicy._secret_env),
    ("secret-args", _always, RedactionPolicy._secret_args),
)
