# Copyright: kaiops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The rollout's gates, declared as data: name, stage, figure, threshold, rule. Pure.

A gate record is ``{stage, gate, figure, threshold, passed, message, fix}``: ``passed`` is True
or False, ``message`` says why a gate failed and ``fix`` how to fix it. Every gate record of a
run is made here, by ``judge(declaration, subject)`` or by one of the stage functions below;
the role and the playbooks never build one.

- ``REQUEST_GATES``: the change request itself (stage ``request``), judged on the controller
  before any cluster is read: the variables, the change owner, the KAI version under test, the
  thresholds (one gate each, from the vocabulary's table), the rollback target, the regression
  evidence or its waiver, the rehearsal waiver when one is given, over the request as
  ``rollout/request.py`` read it (numbers from numeric text, each waiver as a mapping); what
  cannot be read is a problem of its gate.
- ``CLUSTER_GATES``: what the read-only inventory of one cluster says (stage ``cluster``):
  reachable, a KAI Helm release, the current version, the rollback target recorded.
- ``snapshot_gate`` and ``failure_gate``: the snapshot taken, and a task that failed.

A declaration's ``rule(subject) -> problem or None`` is pure; ``figure(subject)`` is what the
report shows; ``fix`` is a text or a function of the subject.
"""

from ansible_collections.kaiops.runbooks.plugins.module_utils.kai.identify import all_findings
from ansible_collections.kaiops.runbooks.plugins.module_utils.rollout.request import (
    read_rollback,
    read_threshold,
    read_waiver,
)
from ansible_collections.kaiops.runbooks.plugins.module_utils.vocabulary import (
    PERCENTILE_PAIRS,
    RELEASE_TAG,
    ROLLOUT_THRESHOLDS,
    THRESHOLDS,
    as_number,
    is_release_tag,
    nearest_threshold,
    threshold_rule,
    type_name,
    unknown_variables,
)

# An exact release tag (vocabulary.RELEASE_TAG): matched whole, ASCII only.
TAG = RELEASE_TAG
TAG_TEXT = "an exact release tag vMAJOR.MINOR.PATCH (e.g. v1.4.2)"

# Inventory statuses that mean the cluster could not be read.
UNREADABLE = ("unreachable", "unauthorized", "forbidden", "invalid_input", "error", "missing")

THRESHOLDS_EXAMPLE = "{%s}" % ", ".join(
    "%s: %s" % (name, {"seconds": 5, "fraction": 1.0, "count": 0, "window": 300}[rule["kind"]])
    for name, rule in THRESHOLDS.items()
    if rule["rollout"]
)
# The figure of a regression gate whose waiver is malformed: a malformed request, not missing
# evidence (no cluster is read then).
INVALID_WAIVER = "invalid waiver"
WAIVER_FIX = (
    "give kaiops_rollout_regression_waiver: {reason: <why>, approved_by: <who>} or remove it"
)


def gate(stage, name, figure, threshold, passed, message="", fix=""):
    return {
        "stage": stage,
        "gate": name,
        "figure": figure,
        "threshold": threshold,
        "passed": bool(passed),
        "message": message,
        "fix": fix,
    }


def checked(stage, name, figure, threshold, problem, fix=""):
    """The gate of a check: passed when ``problem`` is None, else failed with the problem as its
    message and ``fix``."""
    return gate(
        stage, name, figure, threshold, problem is None, problem or "", fix if problem else ""
    )


def judge(declaration, subject):
    """The gate record of one declaration for one subject."""
    problem = declaration["rule"](subject)
    fix = declaration.get("fix") or ""
    if callable(fix):
        fix = fix(subject)
    return checked(
        declaration["stage"],
        declaration["name"],
        declaration["figure"](subject),
        declaration["threshold"],
        problem,
        fix,
    )


def failed(gates):
    return [g for g in gates if not g["passed"]]


def refusal_message(cluster, gates):
    """One message naming every failed gate and its fix."""
    bad = failed(gates)
    if not bad:
        return ""
    parts = ["%s (fix: %s)" % (g["message"], g["fix"]) if g["fix"] else g["message"] for g in bad]
    return "Rollout refused for %s: %s" % (cluster, "; ".join(parts))


# ---------------------------------------------------------------- request rules


def _variables_problem(req):
    problems = [message for _name, message in unknown_variables(req["variables"])]
    for stray in req["stray_extra_vars"]:
        problems.append(
            "extra vars %r are neither name=value pairs nor a mapping: nothing was set from them"
            % (stray,)
        )
    return "; ".join(problems) or None


def _owner_problem(req):
    owner = req["change_owner"]
    if owner is None or owner == "":
        return "change owner is missing"
    if not isinstance(owner, str):
        return "change owner must be a name or an address (text), got %s" % type_name(owner)
    return None


def _version_problem(req):
    version = req["kai_version"]
    if version is None or version == "":
        return "KAI version under test is missing"
    if not isinstance(version, str):
        return "KAI version must be %s, got %s" % (TAG_TEXT, type_name(version))
    if not is_release_tag(version):
        return "KAI version %r is not %s" % (version, TAG_TEXT)
    return None


def _rollback_problem(req):
    rollback, target = req["rollback_target"], req["kai_version"]
    if rollback is None or rollback == "":
        return "rollback target is missing"
    if isinstance(rollback, bool):
        return "rollback target %r is neither a Helm revision nor a release tag" % rollback
    if isinstance(rollback, int):
        return None if rollback >= 1 else "rollback target revision %s must be 1 or more" % rollback
    if isinstance(rollback, str) and _same_tag(rollback, target):
        return "rollback target %r is the KAI version under test itself" % rollback
    if is_release_tag(rollback):
        return None
    if not isinstance(rollback, str):
        return "rollback target must be a Helm revision or a release tag, got %s" % type_name(
            rollback
        )
    return "rollback target %r is neither a Helm revision number nor %s" % (rollback, TAG_TEXT)


def _same_tag(a, b):
    """True when two tags are one release once read as a person means them (case, spaces)."""
    return isinstance(b, str) and a.strip().lower() == b.strip().lower()


def _missing_or(value, text):
    return "missing" if value is None or value == "" else text


REQUEST_GATES = (
    {
        "name": "variables",
        "stage": "request",
        "threshold": "only the kaiops_* names of the vocabulary; -e as name=value or a mapping",
        "figure": lambda req: (
            [n for n, _m in unknown_variables(req["variables"])] + req["stray_extra_vars"]
            or "all known"
        ),
        "rule": _variables_problem,
        "fix": "rename or remove the variables named (inventories/example/ sets each known one)",
    },
    {
        "name": "change_owner",
        "stage": "request",
        "threshold": "non-empty",
        "figure": lambda req: _missing_or(req["change_owner"], req["change_owner"]),
        "rule": _owner_problem,
        "fix": "set kaiops_change_owner (who answers for this change) for the cluster",
    },
    {
        "name": "kai_version",
        "stage": "request",
        "threshold": TAG_TEXT,
        "figure": lambda req: _missing_or(req["kai_version"], req["kai_version"]),
        "rule": _version_problem,
        "fix": "set kaiops_kai_version to a release tag (or leave it out for the version pair's "
        "patched release, meta/kai_releases.yml)",
    },
    {
        "name": "rollback_target",
        "stage": "request",
        "threshold": "Helm revision >= 1 or a release tag other than the KAI version under test",
        "figure": lambda req: _missing_or(req["rollback_target"], req["rollback_target"]),
        "rule": _rollback_problem,
        "fix": "set kaiops_rollout_rollback_target to the Helm revision to return to (e.g. 3) "
        "or the release tag to reinstall",
    },
)


def _thresholds_shape_gate(thresholds, stage, fix_var):
    """The one gate when the thresholds are missing or not a mapping."""
    empty = thresholds in (None, "", {})
    return checked(
        stage,
        "thresholds",
        "missing" if empty else type_name(thresholds),
        "a mapping of %d acceptance thresholds" % len(ROLLOUT_THRESHOLDS),
        "acceptance thresholds are missing"
        if empty
        else "kaiops_thresholds must be a mapping of threshold names to numbers, got %s"
        % type_name(thresholds),
        "set %s, e.g. %s" % (fix_var, THRESHOLDS_EXAMPLE),
    )


def _rollout_threshold_gates(thresholds, stage, fix_var):
    """One gate per threshold the rollout needs, passed or not."""
    gates = []
    for name in ROLLOUT_THRESHOLDS:
        rule = THRESHOLDS[name]
        value, problem = read_threshold(name, thresholds.get(name))
        gates.append(
            checked(
                stage,
                "threshold:" + name,
                value,
                threshold_rule(name),
                "threshold %s (%s): %s" % (name, rule["what"], problem) if problem else problem,
                "set %s.%s" % (fix_var, name),
            )
        )
    return gates


def _percentile_pair_gates(thresholds, stage, fix_var):
    """A failed gate for each p50 set above its p95."""
    gates = []
    for low, high in PERCENTILE_PAIRS:
        (a, a_ok), (b, b_ok) = as_number(thresholds.get(low)), as_number(thresholds.get(high))
        if a_ok and b_ok and a > b:
            gates.append(
                checked(
                    stage,
                    "threshold:%s<=%s" % (low, high),
                    "%s > %s" % (a, b),
                    "p50 <= p95",
                    "threshold %s (%s) is above %s (%s)" % (low, a, high, b),
                    "a p50 cannot exceed its p95: fix %s" % fix_var,
                )
            )
    return gates


def _optional_threshold_gates(thresholds, stage, fix_var):
    """A failed gate for each known threshold the rollout does not need, set to a bad value."""
    gates = []
    for name in sorted(set(thresholds) & set(THRESHOLDS) - set(ROLLOUT_THRESHOLDS)):
        _value, problem = read_threshold(name, thresholds[name])
        if problem:
            gates.append(
                checked(
                    stage,
                    "threshold:" + name,
                    thresholds[name],
                    threshold_rule(name),
                    "threshold %s (%s): %s" % (name, THRESHOLDS[name]["what"], problem),
                    "set %s.%s" % (fix_var, name),
                )
            )
    return gates


def _unknown_thresholds_gates(thresholds, stage):
    unknown = sorted(set(thresholds) - set(THRESHOLDS))
    if not unknown:
        return []
    named = [
        "%s (did you mean %s?)" % (n, nearest_threshold(n)) if nearest_threshold(n) else n
        for n in unknown
    ]
    return [
        checked(
            stage,
            "thresholds:unknown",
            unknown,
            "known names",
            "unknown threshold name(s) %s" % ", ".join(named),
            "use only %s" % ", ".join(THRESHOLDS),
        )
    ]


def threshold_gates(thresholds):
    """One gate per rollout threshold, one per percentile pair, one for unknown names."""
    stage, fix_var = "request", "kaiops_thresholds"
    if not isinstance(thresholds, dict) or not thresholds:
        return [_thresholds_shape_gate(thresholds, stage, fix_var)]
    return (
        _rollout_threshold_gates(thresholds, stage, fix_var)
        + _percentile_pair_gates(thresholds, stage, fix_var)
        + _optional_threshold_gates(thresholds, stage, fix_var)
        + _unknown_thresholds_gates(thresholds, stage)
    )


def regression_gate(req, passing, considered, evidence_root):
    """Pass on a passing reproduce report of the version under test, or on a valid waiver.

    ``passing``/``considered``: ``rollout/client.find_regression_reports`` of that version
    (None when the version is not a valid tag: nothing was looked up).
    """
    threshold = "a passing reproduce report for the KAI version, or a waiver {reason, approved_by}"
    waiver, problem = read_waiver(req["regression_waiver"])
    version = req["kai_version"]
    stage = "request"
    if problem:
        return checked(
            stage, "regression_evidence", INVALID_WAIVER, threshold, problem, WAIVER_FIX
        ), None
    if passing is None:
        return checked(
            stage,
            "regression_evidence",
            "not checked",
            threshold,
            "regression evidence cannot be matched without a valid KAI version",
            "fix kaiops_kai_version first",
        ), None
    if passing:
        return gate(
            stage,
            "regression_evidence",
            "reproduce report %s/report.json" % passing[-1],
            threshold,
            True,
        ), {"bundle": passing[-1], "considered": considered, "root": evidence_root}
    if waiver:
        return gate(
            stage,
            "regression_evidence",
            "waived: %s (approved by %s)" % (waiver["reason"], waiver["approved_by"]),
            threshold,
            True,
        ), {"waiver": waiver, "considered": considered, "root": evidence_root}
    seen = (
        " (rejected: %s)" % "; ".join("%s: %s" % (c["bundle"], c["rejected"]) for c in considered)
        if considered
        else ""
    )
    return checked(
        stage,
        "regression_evidence",
        "none",
        threshold,
        "no passing reproduce report for %s in %s%s" % (version, evidence_root or "-", seen),
        "run the reproduce playbook against %s first, or set kaiops_rollout_regression_waiver: "
        "{reason: <why>, approved_by: <who>}" % version,
    ), {"considered": considered, "root": evidence_root}


REHEARSAL_WAIVER_FIX = (
    "give kaiops_rollout_rehearsal_waiver: {reason: <why>, approved_by: <who>} or remove it"
)


def rehearsal_waiver_gate(req):
    """The rehearsal waiver, judged like the regression waiver, when one is given (None when not):
    a valid one lets the change be approved without a rollback rehearsal on record
    (``rollout/change.py``); a malformed one is a malformed request (no cluster is read)."""
    given = req.get("rehearsal_waiver")
    if given in (None, "", {}):
        return None
    waiver, problem = read_waiver(given, "rehearsal waiver")
    return checked(
        "request",
        "rehearsal_waiver",
        "%s (approved by %s)" % (waiver["reason"], waiver["approved_by"])
        if waiver
        else INVALID_WAIVER,
        "{reason, approved_by}: approves without a rollback rehearsal on record",
        problem,
        REHEARSAL_WAIVER_FIX,
    )


def request_gates(req, find_reports, evidence_root):
    """Every gate of the change request in a fixed order, and the regression details.

    ``find_reports(root, version)`` is the evidence store's reader (``rollout/client.py``).
    """
    gates = [judge(d, req) for d in REQUEST_GATES[:3]]
    gates += threshold_gates(req["thresholds"])
    gates += [judge(d, req) for d in REQUEST_GATES[3:]]
    passing = considered = None
    if isinstance(req["kai_version"], str) and is_release_tag(req["kai_version"]):
        if read_waiver(req["regression_waiver"])[1] is None:
            passing, considered = find_reports(evidence_root, req["kai_version"])
    regression, detail = regression_gate(req, passing, considered, evidence_root)
    gates.append(regression)
    waiver = rehearsal_waiver_gate(req)
    if waiver:
        gates.append(waiver)
    return gates, detail


# ---------------------------------------------------------------- cluster gates


def _kai(subject):
    return (subject["inventory"] or {}).get("kai") or {}


def _release(subject):
    helm = _kai(subject).get("helm") or {}
    return helm.get("release")


def _installed(subject):
    return bool(_kai(subject).get("installed")) and bool(_release(subject))


def _release_figure(subject):
    kai = _kai(subject)
    helm = kai.get("helm") or {}
    if helm.get("release"):
        return "%s revision %s" % (helm.get("release"), helm.get("revision"))
    return "Deployments without a Helm release" if kai.get("installed") else "none"


def _version_ok(version):
    return isinstance(version, str) and bool(
        is_release_tag(version if version[:1] == "v" else "v" + version)
    )


def _current(version):
    return version if (version or "")[:1] == "v" else "v%s" % version


def _version_before(subject):
    """The version the rollback target is judged against: what an interrupted earlier run of this
    change recorded before its change (``version_before``), else what runs now."""
    return subject.get("version_before") or _kai(subject).get("version")


def _rollback_recorded_problem(subject):
    target, version = subject["rollback_target"], _version_before(subject)
    revision = (_kai(subject).get("helm") or {}).get("revision")
    if isinstance(target, int):
        if isinstance(revision, int) and 1 <= target <= revision:
            return None
        return (
            "rollback revision %s is not a recorded revision of the release on %s (current %s)"
            % (
                target,
                subject["cluster"],
                revision,
            )
        )
    if target == _current(version):
        return None
    return "rollback target %s is not the version running on %s (%s)" % (
        target,
        subject["cluster"],
        _current(version),
    )


def _rollback_recorded_figure(subject):
    target, kai = subject["rollback_target"], _kai(subject)
    if isinstance(target, int):
        return "revision %s (current %s)" % (target, (kai.get("helm") or {}).get("revision"))
    return "%s (running %s)" % (target, _current(_version_before(subject)))


def _rollback_fix(subject):
    kai = _kai(subject)
    return "set kaiops_rollout_rollback_target to what runs now (version %s, Helm revision %s)" % (
        _version_before(subject),
        (kai.get("helm") or {}).get("revision"),
    )


def _applies_when_installed(subject):
    return _installed(subject)


def _applies_with_rollback(subject):
    target = subject["rollback_target"]
    return _installed(subject) and target not in (None, "") and not isinstance(target, bool)


CLUSTER_GATES = (
    {
        "name": "kai_release",
        "stage": "cluster",
        "threshold": "a KAI Helm release in the KAI namespace",
        "figure": _release_figure,
        "rule": lambda s: (
            None
            if _installed(s)
            else "no KAI release on cluster %s (namespace %s)"
            % (s["cluster"], _kai(s).get("namespace"))
        ),
        "fix": "install KAI with Helm first, or set kaiops_kai_namespace to its namespace",
        "applies": lambda s: True,
    },
    {
        "name": "current_version",
        "stage": "cluster",
        "threshold": "a release tag",
        "figure": lambda s: _kai(s).get("version") or "unreadable",
        "rule": lambda s: (
            None
            if _version_ok(_kai(s).get("version"))
            else "current KAI version on %s is unreadable (%s)"
            % (s["cluster"], _kai(s).get("version"))
        ),
        "fix": "pin the KAI images to release tags",
        "applies": _applies_when_installed,
    },
    {
        # One reading of what runs (kai/identify): helm, the operator, kai-config and the
        # components name one version, and helm can upgrade the release.
        "name": "agreement",
        "stage": "cluster",
        "threshold": "helm's release (deployed), the operator, kai-config and every component "
        "name one version",
        "figure": lambda s: "; ".join(all_findings(_kai(s))) or "agree",
        "rule": lambda s: "; ".join(all_findings(_kai(s))) or None,
        "fix": "bring KAI to one version first: playbooks/rollback.yml from the last rollout "
        "bundle, or helm upgrade (uninstall and install when the release is failed or pending) to "
        "the version helm should run; never helm rollback KAI's chart",
        "applies": _applies_when_installed,
    },
    {
        "name": "rollback_target_recorded",
        "stage": "cluster",
        "threshold": "the version running now, or a Helm revision that exists",
        "figure": _rollback_recorded_figure,
        "rule": _rollback_recorded_problem,
        "fix": _rollback_fix,
        "applies": _applies_with_rollback,
    },
)


def cluster_gates(cluster, inventory, rollback_target=None, version_before=None):
    """Gates from one cluster's kai_inventory output: reachable, then the declarations.
    ``version_before``: what an interrupted earlier run recorded before its change; only the
    rollback target is judged against it, every other gate against what runs now."""
    inventory = inventory or {}
    status = inventory.get("status") or "missing"
    if status in UNREADABLE:
        return [
            checked(
                "cluster",
                "reachable",
                status,
                "inventoried",
                "cluster %s could not be inventoried: %s - %s"
                % (cluster, status, inventory.get("error") or "no inventory recorded"),
                "fix access to the cluster (kubeconfig, context, RBAC), then run again",
            )
        ]
    subject = {
        "cluster": cluster,
        "inventory": inventory,
        "rollback_target": read_rollback(rollback_target),
        "version_before": version_before,
    }
    gates = [gate("cluster", "reachable", status, "inventoried", True)]
    for declaration in CLUSTER_GATES:
        if declaration["applies"](subject):
            gates.append(judge(declaration, subject))
    return gates


# ---------------------------------------------------------------- snapshot and failures


def snapshot_gate(count, helm_revision, use_helm, note):
    return gate(
        "snapshot",
        "snapshot",
        "%s objects%s"
        % (
            count,
            ", helm revision %s" % helm_revision
            if use_helm
            else ", helm values not read (kai_rollout_use_helm=false)",
        ),
        "captured before the change",
        True,
        note or "",
    )


def failure_gate(cluster, stage, task, msg):
    return checked(
        stage,
        "preflight_error",
        task,
        "no error",
        'preflight of %s failed in "%s": %s' % (cluster, task, msg or "no message"),
        "see the task output and tasks.jsonl in the evidence folder",
    )
