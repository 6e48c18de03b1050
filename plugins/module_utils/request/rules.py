# Copyright: kaiops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The one request check of every playbook, as data. Pure: no I/O but what ``paths`` says.

Before a playbook reads any cluster, ``check(playbook, given)`` judges what the person asked
for: the ``kaiops_*`` variables set for the host (the vocabulary's, ``vocabulary.py``; an unknown
name is refused with the nearest known one) and the role variables a playbook lets ``-e`` give.

- ``KINDS``: one rule per kind of value, ``rule(value, spec) -> (value as read, problem or
  None)``: types named in the message, numbers finite and within their bounds, release tags
  matched whole and ASCII only, lists never read letter by letter, paths that are what they
  should be (a kubeconfig that is a directory is a directory, not "missing").
- ``PLAYBOOKS``: per playbook, the variables it reads with their kind and bounds, and the
  feature prefix whose unknown names it refuses (``rollout.yml`` judges its own names and
  values in ``rollout/gates.py`` on the same vocabulary: here it only gets what the gates do not
  see - values a person must have written, the kubeconfig and the evidence store).
- ``HUMAN``: fields whose value is what a person wrote (owner, approver, reason, decision): a
  value that came out of a template or lookup is refused, and never recorded.

``check`` never raises: any input is either valid or refused with problems ``{field, message,
fix}``, each naming its field (``tests/unit/plugins/module_utils/request/test_rules.py``).
"""

import difflib
import math
import re

from ansible.module_utils.common.arg_spec import ArgumentSpecValidator

from ansible_collections.kaiops.runbooks.plugins.module_utils.evidence.writer import finite
from ansible_collections.kaiops.runbooks.plugins.module_utils.probes.cases import (
    DEFAULT_CASES as REPRODUCE_CASES,
)
from ansible_collections.kaiops.runbooks.plugins.module_utils.vocabulary import (
    KIND_BOUNDS,
    RECOVERY_STEPS,
    THRESHOLDS,
    WAIVER_FIELDS,
    as_number,
    is_release_tag,
    nearest_threshold,
    read_waves,
    type_name,
    unknown_variables,
)

DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?\Z", re.ASCII)
TEMPLATE = re.compile(r"{{|{%|{#")
# What of a role's argument spec judges one value.
SPEC_KEYS = ("type", "elements", "choices", "options")
TRUE = ("true", "yes", "on", "1")
FALSE = ("false", "no", "off", "0", "")
ISOLATIONS = ("none", "time-slicing", "mig", "mps", "hami-core")
EVIDENCE_FIX = (
    "point the evidence store at a folder this user can write: KAIOPS_EVIDENCE_ROOT=<dir> for "
    "one run, or [kaiops_evidence] root in ansible.cfg"
)


def _missing(value):
    return value is None or value == ""


def _ok(value):
    return value, None


# ---------------------------------------------------------------- rules, one per kind


def _text(value, spec):
    if _missing(value):
        return (value, "is missing") if spec.get("required") else _ok(value)
    if not isinstance(value, str):
        return value, "must be text, got %s" % type_name(value)
    if "\n" in value or "\r" in value or "\x00" in value:
        return value, "must be one line of text, got %s" % type_name(value)
    return _ok(value.strip())


def _dns_label(value, spec):
    value, problem = _text(value, spec)
    if problem or _missing(value):
        return value, problem
    if not DNS_LABEL.match(value):
        return value, "%r is not a namespace name (a lowercase DNS label)" % value
    return _ok(value)


def _tag(value, spec):
    if _missing(value):
        return (value, "is missing") if spec.get("required") else _ok(value)
    if not isinstance(value, str):
        return value, "must be a release tag vMAJOR.MINOR.PATCH, got %s" % type_name(value)
    if not is_release_tag(value):
        return value, "%r is not a release tag vMAJOR.MINOR.PATCH (ASCII, nothing around it)" % (
            value,
        )
    return _ok(value)


def _number(value, spec):
    if _missing(value):
        return (value, "is missing") if spec.get("required") else _ok(value)
    if isinstance(value, float) and not math.isfinite(value):
        return value, "must be a finite number, got %s" % value
    number, ok = as_number(value)
    if not ok:
        return value, "must be a number, got %s" % type_name(value)
    if spec.get("whole") and number != int(number):
        return value, "must be a whole number, got %s" % number
    low, high = spec.get("min"), spec.get("max")
    if (low is not None and number < low) or (high is not None and number > high):
        return value, "must be %s, got %s" % (_bounds(low, high), number)
    return _ok(number)


def _bounds(low, high):
    if high is None:
        return "%s or more" % low
    if low is None:
        return "%s or less" % high
    return "between %s and %s" % (low, high)


def _bool(value, spec):
    if isinstance(value, bool) or value is None:
        return _ok(bool(value))
    if isinstance(value, str) and value.strip().lower() in TRUE + FALSE:
        return _ok(value.strip().lower() in TRUE)
    return value, "must be true or false, got %s" % type_name(value)


def _choice(value, spec):
    if _missing(value) and not spec.get("required"):
        return _ok(value)
    if not isinstance(value, str) or value not in spec["choices"]:
        return value, "must be one of %s, got %s" % (", ".join(spec["choices"]), type_name(value))
    return _ok(value)


def _list(value, spec):
    if value is None:
        return _ok([])
    if not isinstance(value, list):
        return value, "must be a list, got %s" % type_name(value)
    bad = [item for item in value if not isinstance(item, str)]
    if bad:
        return value, "must be a list of names, got %s in it" % type_name(bad[0])
    unknown = [item for item in value if spec.get("choices") and item not in spec["choices"]]
    if unknown:
        return value, "has unknown %s: use some of %s" % (
            ", ".join(repr(u) for u in unknown),
            ", ".join(spec["choices"]),
        )
    return _ok(list(value))


def _mapping(value, spec):
    if value is None or value == "":
        return _ok({})
    if not isinstance(value, dict):
        return value, "must be a mapping, got %s" % type_name(value)
    return _ok(value)


def _thresholds(value, spec):
    value, problem = _mapping(value, spec)
    if problem:
        return value, problem + " of threshold names to numbers (kaiops_thresholds: {name: n})"
    out, problems = {}, []
    for name in sorted(value, key=str):
        if name not in THRESHOLDS:
            # A typo would leave its threshold unset and the default judging in its place.
            near = nearest_threshold(str(name))
            problems.append(
                "has unknown threshold %r%s" % (name, " (did you mean %s?)" % near if near else "")
            )
            continue
        if name not in spec.get("names", THRESHOLDS):
            out[name] = value[name]
            continue
        kind = THRESHOLDS[name]["kind"]
        read, why = _number(value[name], dict(KIND_BOUNDS[kind], required=True))
        if why:
            problems.append("%s %s" % (name, why))
        out[name] = read
    return out, "; ".join(problems) or None


def _person(value, spec):
    """A waiver or policy mapping whose text fields a person writes (reason, approved_by...)."""
    if value in (None, "", {}):
        return _ok(value)
    if not isinstance(value, dict):
        return _ok(value)  # its own gate says why (rollout/gates.py, rollout/change.py)
    bad = [k for k in spec.get("fields", ()) if k in value and not _plain_text(value[k])]
    if bad:
        return value, "%s must be text a person wrote" % " and ".join(bad)
    return _ok(value)


def _plain_text(value):
    return value is None or isinstance(value, str)


def _kubeconfig(value, spec):
    value, problem = _text(value, spec)
    if problem or _missing(value):
        return value, problem
    kind = (spec.get("paths") or {}).get(value)
    if kind == "dir":
        return value, "%s is a directory, not a kubeconfig file" % value
    if kind == "missing" and spec.get("must_exist"):
        return value, "%s does not exist on the controller" % value
    # rollout.yml and rollback.yml record a missing one as their cluster gate (reachable).
    if kind == "unreadable":
        return value, "%s cannot be read by this user" % value
    return _ok(value)


def _bundle(value, spec):
    if _missing(value):
        return value, "is missing: give the rollout bundle to restore from (evidence/<bundle>)"
    if not isinstance(value, str):
        return value, "must be the path of one rollout bundle, got %s" % type_name(value)
    kind = (spec.get("paths") or {}).get(value)
    if kind in (None, "dir"):
        return _ok(value)
    if kind == "file":
        return value, "%s is a file, not a bundle folder" % value
    return value, (
        "%s is not a bundle: no folder of that name from the current directory or in the "
        "evidence store" % value
    )


def _waves(value, spec):
    waves, problem = read_waves(value)
    return (waves, None) if problem is None else (value, problem)


KINDS = {
    "text": _text,
    "dns_label": _dns_label,
    "tag": _tag,
    "number": _number,
    "bool": _bool,
    "choice": _choice,
    "list": _list,
    "mapping": _mapping,
    "thresholds": _thresholds,
    "person": _person,
    "kubeconfig": _kubeconfig,
    "bundle": _bundle,
    "waves": _waves,
}


def _v(kind, fix, **spec):
    return dict(spec, kind=kind, fix=fix)


KUBECONFIG_FIX = (
    "set kaiops_kubeconfig for the host to its kubeconfig file, or leave it out for KUBECONFIG "
    "(the lab's: make -s lab-kubeconfig)"
)
CONNECTION = {
    "kaiops_kubeconfig": _v("kubeconfig", KUBECONFIG_FIX),
    "kaiops_context": _v("text", "set kaiops_context to a context name of the kubeconfig"),
    "kaiops_kai_namespace": _v("dns_label", "set kaiops_kai_namespace to KAI's namespace"),
}
# The playbooks whose roles refuse a kubeconfig that does not exist refuse it here, with a report.
CONNECTION_CHECKED = dict(
    CONNECTION, kaiops_kubeconfig=_v("kubeconfig", KUBECONFIG_FIX, must_exist=True)
)
OWNER = {"kaiops_change_owner": _v("text", "write who answers for the change, as text")}
# The chart and values a rollout upgrades to and a rollback installs (the role's argument spec
# takes them as raw, so that this refusal, with the report, names the fix).
HELM = {
    "kaiops_kai_chart_ref": _v("text", "give the chart reference as text"),
    "kaiops_kai_helm_values": _v("mapping", "give kaiops_kai_helm_values as a mapping"),
}
STEPS = _v(
    "list",
    'give kaiops_recovery_steps as a list, e.g. -e \'{"kaiops_recovery_steps": '
    '["delete_orphan_configmaps"]}\' (or [] for a read-only run)',
    choices=RECOVERY_STEPS,
)
# Judged here rather than by the role's argument spec, whose refusal prints the whole spec and
# leaves no report.
DOWNGRADE = _v(
    "choice",
    "give kaiops_rollout_downgrade_method: auto, upgrade or reinstall (helm rollback is never "
    "used: it does not restore KAI)",
    choices=("auto", "upgrade", "reinstall"),
)

# Per playbook: the feature whose kaiops_<feature>_* names it judges (None: the shared names
# only), whether it judges unknown names here (rollout.yml: rollout/gates.py does), the name of
# its report (<report>.json, <report>.md) and its variables.
PLAYBOOKS = {
    "inventory": {
        "feature": None,
        "names": True,
        "report": "inventory",
        "role": "kai_inventory",
        "vars": dict(
            CONNECTION_CHECKED,
            kaiops_thresholds=_v(
                "thresholds",
                "give kaiops_thresholds as a mapping, e.g. {component_restarts_max: 0}",
                names=("component_restarts_max",),
            ),
            **OWNER,
        ),
    },
    "reproduce": {
        "feature": "reproduce",
        "names": True,
        "report": "report",
        "role": "kai_reproduce",
        "vars": dict(
            CONNECTION_CHECKED,
            kaiops_kai_chart_ref=_v("text", "give the chart reference as text"),
            kaiops_kai_helm_values=_v("mapping", "give kaiops_kai_helm_values as a mapping"),
            kaiops_reproduce_cases=_v("list", "give a list of cases", choices=REPRODUCE_CASES),
            kaiops_reproduce_builds=_v("list", "give a list of release tags, e.g. [pre, patched]"),
            kaiops_reproduce_install=_v("bool", "give true or false"),
            kaiops_reproduce_restore=_v("bool", "give true or false"),
            kaiops_reproduce_keep_namespaces=_v("bool", "give true or false"),
            kaiops_reproduce_allow_non_disposable=_v("bool", "give true or false"),
            kaiops_reproduce_override_reason=_v("text", "write why, as text"),
            kaiops_reproduce_window_s=_v(
                "number", "give seconds, 10 to 600", min=10, max=600, whole=True
            ),
            kaiops_reproduce_concurrency=_v(
                "number", "give a whole number, 1 to 100", min=1, max=100, whole=True
            ),
            kaiops_reproduce_gpus=_v(
                "number", "give a whole number of GPUs", min=0, max=100000, whole=True
            ),
            kaiops_reproduce_placement=_v("mapping", "give a placement mapping"),
            kaiops_reproduce_probe_placement=_v("mapping", "give a placement mapping"),
            kaiops_gpu_hour_rate=_v("number", "give a cost per GPU-hour, 0 or more", min=0),
        ),
    },
    "recovery": {
        "feature": "recovery",
        "names": True,
        "report": "recovery",
        "role": "kai_recovery",
        "vars": dict(
            CONNECTION_CHECKED,
            kaiops_recovery_steps=STEPS,
            # The role's own name, read before kaiops_recovery_steps existed: still judged (and
            # applied), with a deprecation warning from the request check.
            kai_recovery_steps=STEPS,
            kai_recovery_allow_non_disposable=_v("bool", "give true or false"),
        ),
    },
    "diagnose": {
        "feature": None,
        "names": True,
        "report": "report",
        "role": "kai_diagnose",
        "vars": dict(
            CONNECTION_CHECKED,
            kai_diagnose_namespaces=_v(
                "list",
                'give kai_diagnose_namespaces as a list, e.g. -e \'{"kai_diagnose_namespaces": '
                '["team-a"]}\' (or [] for every namespace)',
            ),
        ),
    },
    "gpu_access": {
        "feature": "gpu_access",
        "names": True,
        "report": "gpu_access",
        "role": "kai_gpu_access",
        "vars": dict(
            CONNECTION_CHECKED,
            kaiops_gpu_access_allow_non_disposable=_v("bool", "give true or false"),
            kaiops_gpu_access_require_sharing=_v("bool", "give true or false"),
            kaiops_gpu_access_expected_isolation=_v(
                "choice", "give one of %s" % ", ".join(ISOLATIONS), choices=ISOLATIONS
            ),
        ),
    },
    "rollout": {
        "feature": "rollout",
        "names": False,  # rollout/gates.py judges them (gate variables), on the same vocabulary
        "report": "report",
        "vars": dict(
            CONNECTION,
            **HELM,
            kaiops_rollout_probe_placement=_v(
                "mapping", "give kaiops_rollout_probe_placement as a mapping (a pod spec's part)"
            ),
            kaiops_rollout_kwok_placement=_v(
                "mapping", "give kaiops_rollout_kwok_placement as a mapping (a pod spec's part)"
            ),
            kaiops_rollout_governance=_v(
                "mapping",
                "give kaiops_rollout_governance as a mapping, e.g. {refuse_broad_grants: true}",
            ),
            kaiops_rollout_downgrade_method=DOWNGRADE,
            kaiops_rollout_probes=_v(
                "number", "give a whole number of GPU probes, 0 to 16", min=0, max=16, whole=True
            ),
            kaiops_rollout_kwok_probes=_v(
                "number", "give a whole number of KWOK probes, 0 to 64", min=0, max=64, whole=True
            ),
            kaiops_rollout_gang_probes=_v(
                "number",
                "give a whole number of gang probes (PodGroups of 2 pods), 0 to 8; 0 turns the "
                "gang_bound gate off",
                min=0,
                max=8,
                whole=True,
            ),
            kaiops_rollout_burst_probes=_v(
                "number",
                "give a whole number of burst pods (0.5 GPU each on one KWOK node), 0 (off) to "
                "64; at most twice the GPUs that node has free",
                min=0,
                max=64,
                whole=True,
            ),
            kaiops_rollout_canary=_v(
                "text",
                "name the canary's inventory group as text, e.g. -e kaiops_rollout_canary=canary",
            ),
            kaiops_rollout_failure_budget=_v(
                "number",
                "give kaiops_rollout_failure_budget as a whole number of clusters, 0 or more "
                "(default 0: the first failure after the canary stops the waves after it)",
                whole=True,
                min=0,
            ),
            kaiops_rollout_soak_s=_v(
                "number",
                "give kaiops_rollout_soak_s as a whole number of seconds, 0 to 86400 (default 0: "
                "no soak after the verification)",
                whole=True,
                min=0,
                max=86400,
            ),
            kaiops_rollout_progress_deadline_s=_v(
                "number",
                "give kaiops_rollout_progress_deadline_s as a whole number of seconds, 0 to 86400 "
                "(default 0: no deadline from the upgrade's start to the decision)",
                whole=True,
                min=0,
                max=86400,
            ),
            kaiops_rollout_regression_waiver=_v(
                "person", "write the waiver's reason and approver as text", fields=WAIVER_FIELDS
            ),
            kaiops_rollout_rehearsal_waiver=_v(
                "person", "write the waiver's reason and approver as text", fields=WAIVER_FIELDS
            ),
            kaiops_rollout_on_failed_gate=_v(
                "person",
                "write the decision and approver as text",
                fields=("decision", "approved_by"),
            ),
        ),
    },
    "rollback": {
        "feature": "rollout",
        "names": True,
        "report": "report",
        "vars": dict(
            CONNECTION,
            kaiops_rollout_rollback_bundle=_v(
                "bundle",
                "give -e kaiops_rollout_rollback_bundle=evidence/<rollout bundle> (a path from "
                "where the command runs, or a bundle folder of the evidence store)",
                required=True,
            ),
            kaiops_thresholds=_v(
                "thresholds", "give kaiops_thresholds as a mapping of threshold names to numbers"
            ),
            kaiops_rollout_downgrade_method=DOWNGRADE,
            **dict(HELM, **OWNER),
        ),
    },
}
# What a person writes, by variable: the whole value, or these fields of a mapping.
HUMAN = {
    "kaiops_change_owner": None,
    "kaiops_reproduce_override_reason": None,
    "kai_reproduce_override_reason": None,
    "kaiops_rollout_regression_waiver": WAIVER_FIELDS,
    "kaiops_rollout_rehearsal_waiver": WAIVER_FIELDS,
    "kaiops_rollout_on_failed_gate": ("decision", "approved_by"),
}
TEMPLATED_FIX = (
    "write the value itself: a value that comes out of a template or lookup is never run, "
    "judged or recorded as what the request says (kaiops_kubeconfig may be one)"
)
# A path to a file, often read from the environment (the lab inventory's): never recorded whole.
TEMPLATE_ALLOWED = ("kaiops_kubeconfig",)


# Names still read, with the name that replaces them: the request check warns.
DEPRECATED = {
    "kai_recovery_steps": ("kaiops_recovery_steps", "1.0.0"),
}


def deprecations(given):
    """[(message, removal version)] for each deprecated name given."""
    return [
        ("%s is deprecated: give %s instead" % (old, new), version)
        for old, (new, version) in sorted(DEPRECATED.items())
        if old in (given or {})
    ]


def problem(field, message, fix):
    return {"field": field, "message": "%s: %s" % (field, message), "fix": fix}


def has_template(value):
    """True when a value as written (before Ansible templated it) holds a template."""
    if isinstance(value, str):
        return bool(TEMPLATE.search(value))
    if isinstance(value, dict):
        return any(has_template(k) or has_template(v) for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return any(has_template(v) for v in value)
    return False


def judged_names(playbook, names):
    """The variables whose value as written must hold no template: every ``kaiops_*`` name set
    (but TEMPLATE_ALLOWED), the playbook's own variables and the HUMAN ones."""
    table = PLAYBOOKS.get(playbook) or {"vars": {}}
    own = [n for n in names or () if isinstance(n, str) and n.startswith("kaiops_")]
    return sorted(set(own) | set(table["vars"]) | set(HUMAN))


def templated_fields(raw):
    """The fields whose value as written holds a template: [(name, field or None)]; a HUMAN
    mapping by its person-written fields, any other variable as a whole."""
    out = []
    for name in sorted(raw or {}, key=str):
        if name in TEMPLATE_ALLOWED:
            continue
        fields, value = HUMAN.get(name), raw[name]
        if fields is None or not isinstance(value, dict):
            if has_template(value):
                out.append((name, None))
            continue
        out.extend((name, f) for f in fields if f in value and has_template(value[f]))
    return out


def _unknown(names, table):
    out = []
    for name, text in unknown_variables(list(names or []), table["feature"]):
        role_var = "kai_" + name[len("kaiops_") :]
        if role_var in table["vars"]:
            text = "unknown variable %s (did you mean %s? the role's variable)" % (name, role_var)
        fix = "rename or remove %s (inventories/example/ sets each known name)" % name
        out.append({"field": name, "message": text, "fix": fix})
    return out


def check(
    playbook, given, raw=None, names=None, paths=None, evidence=None, errors=None, role_options=None
):
    """Judge one host's request for ``playbook``; never raises.

    ``given``: variable -> value as Ansible templated it (human fields written as templates are
    left out by the caller, never rendered); ``raw``: variable -> value as written, for the
    template check; ``names``: every variable name set for the host; ``paths``: path as given ->
    ``file``, ``dir``, ``missing`` or ``unreadable`` (the controller looked); ``evidence``:
    ``{problem}`` when the evidence store cannot be written; ``errors``: variable -> why Ansible
    could not template it; ``role_options``: the options of the playbook's role
    (``meta/argument_specs.yml``), which judge the role variables given (``-e``, inventory) before
    the role's own check would print its whole argument spec. Returns ``{passed, problems,
    request}``: ``request`` holds the values as read, a refused human field replaced by a note.
    """
    try:
        return _check(playbook, given, raw, names, paths, evidence, errors, role_options)
    except Exception as exc:  # noqa: BLE001 - a refusal, never a traceback
        found = [
            problem(
                "request",
                "could not be judged (%s)" % type(exc).__name__,
                "report this input to the collection's maintainers",
            )
        ]
        return {"passed": False, "problems": found, "request": {}}


def _check(playbook, given, raw, names, paths, evidence, errors, role_options):
    table = PLAYBOOKS.get(playbook)
    if table is None:
        return {
            "passed": False,
            "problems": [
                problem(
                    "playbook",
                    "unknown playbook %r" % (playbook,),
                    "use one of %s" % ", ".join(PLAYBOOKS),
                )
            ],
            "request": {},
        }
    given = given if isinstance(given, dict) else {}
    found, request = [], {}
    if evidence and evidence.get("problem"):
        found.append(problem("evidence store", evidence["problem"], EVIDENCE_FIX))
    if table["names"]:
        found.extend(_unknown(names, table))
    templated = set()
    for name, field in templated_fields(raw):
        templated.add(name)
        label = "%s.%s" % (name, field) if field else name
        found.append(problem(label, "comes out of a template or lookup", TEMPLATED_FIX))
    for name, spec in table["vars"].items():
        if name in templated:
            request[name] = "(refused: written as a template)"
            continue
        if name in (errors or {}):
            found.append(problem(name, "cannot be read: %s" % errors[name], spec["fix"]))
            continue
        if name not in given:
            if spec.get("required"):
                found.append(problem(name, "is missing", spec["fix"]))
            continue
        spec = dict(spec, paths=paths or {})
        value, why = KINDS[spec["kind"]](given[name], spec)
        request[name] = value
        if why:
            found.append(problem(name, why, spec["fix"]))
    found.extend(_role_variables(table, given, templated, role_options))
    return {"passed": not found, "problems": found, "request": finite(request)}


def _role_variables(table, given, templated, options):
    """The role's own variables given for the host, judged by the role's argument spec, one
    problem each; an unknown one named with the nearest."""
    role = table.get("role")
    if not role or not isinstance(options, dict):
        return []
    out = []
    for name in sorted(n for n in given if isinstance(n, str) and n.startswith(role + "_")):
        if name in table["vars"] or name in templated or name.endswith("__output"):
            continue
        fix = "see roles/%s/meta/argument_specs.yml" % role
        if name not in options:
            near = difflib.get_close_matches(name, list(options), 1, 0.6)
            text = "unknown variable %s%s" % (name, " (did you mean %s?)" % near[0] if near else "")
            out.append({"field": name, "message": text, "fix": fix})
            continue
        spec = {k: v for k, v in options[name].items() if k in SPEC_KEYS}
        try:
            checked = ArgumentSpecValidator({name: spec}).validate({name: given[name]})
        except Exception as exc:  # noqa: BLE001 - a spec the validator cannot use
            out.append(problem(name, "cannot be judged (%s)" % type(exc).__name__, fix))
            continue
        errors = [str(e) for e in checked.errors]
        value = checked.validated_parameters.get(name)
        if not errors and isinstance(value, float) and not math.isfinite(value):
            errors = ["must be a finite number, got %s" % value]
        if errors:
            out.append(problem(name, "; ".join(errors), fix))
    return out


def as_problems(items, playbook):
    """Problems out of what a playbook's own check returned: a problem as is, a text as the
    problem of the option it starts with (``kai_reproduce_cases: unknown case ...``)."""
    out = []
    for item in items if isinstance(items, list) else [items]:
        if isinstance(item, dict) and item.get("field") and item.get("message"):
            out.append({k: str(item.get(k) or "") for k in ("field", "message", "fix")})
            continue
        text = str(item)
        field = re.split(r"[\s:]", text.strip(), maxsplit=1)[0] or playbook
        out.append(
            {"field": field, "message": text, "fix": "fix %s (docs/%s.md)" % (field, playbook)}
        )
    return out


def message(cluster, problems):
    """One line naming every problem and its fix."""
    return "Request refused for %s: %s" % (
        cluster,
        "; ".join("%s (fix: %s)" % (p["message"], p["fix"]) for p in problems),
    )
