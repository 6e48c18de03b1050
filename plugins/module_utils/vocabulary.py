# Copyright: kaiops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""One vocabulary: the inventory variables every playbook reads, and one table of thresholds.

A host of this collection is a Kubernetes cluster. What an inventory says about it goes by
these names, whatever playbook reads it (``inventories/example/`` sets each of them):

- ``VARIABLES``: the ``kaiops_*`` variables, with what each means. A ``kaiops_*`` name that is
  not here is a typo or a name of old; the rollout refuses it, naming the nearest known name
  (``unknown_variables``), before any cluster is read. Names under another feature's prefix
  (``kaiops_gpu_access_*``, ``kaiops_reproduce_*``: ``FEATURES``) are that feature's to judge;
  a feature lists its names here all the same.
- ``THRESHOLDS``: the one table of ``kaiops_thresholds`` names, each with its kind (the rule
  its value follows) and whether the rollout needs it. Values are numbers; numeric text
  (``"300"``, ``" 300 "``, as ``-e`` gives it) is read as the number it says.
- ``read_waves``: the waves of a change (``kaiops_rollout_waves``) as Ansible's ``serial``, the
  one rule the rollout, the request check of every playbook and the ``serial`` filter read by;
  ``serial_list`` the play's serial from them and ``wave_batches`` / ``wave_numbers`` the waves
  Ansible makes of the play's hosts with it (the ``serial`` filter and the rollout's failure
  budget share them). A named canary group (``kaiops_rollout_canary``) is the first wave:
  ``canary_first`` puts its clusters first in the play (a host pattern) and ``serial_list``
  gives it its own wave, the request's waves following over the rest.
"""

import difflib
import math
import re

VARIABLES = {
    # Reaching the cluster (every playbook).
    "kaiops_kubeconfig": "path of the cluster's kubeconfig on the controller",
    "kaiops_context": "context in the kubeconfig (default: its current context)",
    "kaiops_kai_namespace": "namespace of the KAI release (default kai-scheduler)",
    # Who answers, and the limits (inventory.yml, rollout.yml).
    "kaiops_change_owner": "who answers for changes on this cluster (recorded in reports)",
    "kaiops_thresholds": "limits the runbooks check against, names from the one table",
    # The change request (rollout.yml).
    "kaiops_kai_version": "the KAI release under test, the rollout's target (default: "
    "pair.patched of meta/kai_releases.yml)",
    "kaiops_rollout_rollback_target": "the Helm revision or release tag to return to (default: "
    "pair.pre of meta/kai_releases.yml)",
    "kaiops_rollout_regression_waiver": "{reason, approved_by} when no passing reproduce report "
    "is in the evidence store",
    "kaiops_rollout_rehearsal_waiver": "{reason, approved_by} to approve without a rollback "
    "rehearsal of the version pair on record",
    "kaiops_rollout_rehearsal_group": "a name shared by clusters whose rollback rehearsals count "
    "for each other (a rehearsal on one approves the others' rollouts of the same pair)",
    # The change window (rollout.yml, rollback.yml).
    "kaiops_rollout_waves": "Ansible serial of the change: clusters per wave, e.g. [1, '25%', "
    "'100%'] (default 1: one cluster at a time); play-level, give it with -e",
    "kaiops_rollout_canary": "an inventory group whose clusters are the canary: changed first, "
    "as wave 1, and allowed no failure; kaiops_rollout_waves are the waves after it; "
    "play-level, give it with -e",
    "kaiops_rollout_failure_budget": "clusters per wave after the canary that may fail (and be "
    "rolled back) before the waves after it do not start (default 0; the canary allows none)",
    "kaiops_rollout_soak_s": "seconds each cluster soaks after its verification passed, then is "
    "verified again (phase soak; a regressed gate fails it); 0 to 86400, default 0: no soak",
    "kaiops_rollout_progress_deadline_s": "seconds a cluster's change may take from the start of "
    "its upgrade to its decision (gate progress_deadline); 0 to 86400, default 0: none",
    "kaiops_rollout_on_failed_gate": "rollback (default), pause, or {policy: continue, decision, "
    "approved_by}",
    "kaiops_rollout_probe_placement": "placement (spec) of the probes that run the GPU probe "
    "on a real node",
    "kaiops_rollout_probes": "number of probes on the real node (default 1)",
    "kaiops_rollout_kwok_probes": "number of probes on KWOK nodes (default 0)",
    "kaiops_rollout_kwok_placement": "placement (spec) of the KWOK probes",
    "kaiops_rollout_gang_probes": "number of gang probes, PodGroups of 2 fraction pods with "
    "minMember 2, where the other probes run (default 1; 0 turns gang_bound off)",
    "kaiops_rollout_burst_probes": "number of burst pods, 0.5 GPU each created at once on the "
    "KWOK node with the most GPUs, as KAI-Scheduler #2153 (default 0: off)",
    "kaiops_rollout_governance": "{refuse_broad_grants: true} to refuse a cluster where a "
    "broad grant is flagged (default: report only)",
    "kaiops_rollout_rollback_bundle": "rollback.yml: the rollout bundle to restore from",
    "kaiops_rollout_downgrade_method": "auto (default: helm upgrade to the recorded chart "
    "version, uninstall and install when the release is failed or pending), upgrade or reinstall",
    "kaiops_gpu_hour_rate": "cost per available GPU-hour for the cost section",
    # Installing a KAI build (reproduce.yml).
    "kaiops_kai_chart_ref": "where the KAI chart of a release is, a reference with {version}",
    "kaiops_kai_helm_values": "Helm values for installing a KAI build",
    # gpu_access.yml.
    "kaiops_gpu_access_allow_non_disposable": "run the GPU probes on a cluster not marked "
    "disposable",
    "kaiops_gpu_access_require_sharing": "fail unless fractional sharing passed",
    "kaiops_gpu_access_expected_isolation": "the isolation the deployment must enforce",
    # reproduce.yml.
    "kaiops_reproduce_placement": "placement (spec) of the reproduction's fixture pods",
    "kaiops_reproduce_probe_placement": "placement (spec) of the probe that must run to completion",
    "kaiops_reproduce_window_s": "seconds each case is watched",
    "kaiops_reproduce_concurrency": "cases run at once",
    "kaiops_reproduce_gpus": "GPUs the cases may use",
    "kaiops_reproduce_cases": "the cases to run (default: every case)",
    "kaiops_reproduce_builds": "the builds to exercise, in order (default [pre, patched])",
    "kaiops_reproduce_install": "install each build (default true)",
    "kaiops_reproduce_restore": "put back the build that ran before (default true)",
    "kaiops_reproduce_keep_namespaces": "keep the run's namespaces for inspection",
    "kaiops_reproduce_allow_non_disposable": "plant fixtures on a cluster not marked disposable "
    "(needs kaiops_reproduce_override_reason)",
    "kaiops_reproduce_override_reason": "why fixtures may be planted on a cluster not marked "
    "disposable (recorded; written by a person, never a template)",
    # recovery.yml.
    "kaiops_recovery_steps": "the recovery steps to apply, each off unless listed (default []: "
    "read-only)",
}
# Features whose own kaiops_<feature>_* names they judge themselves.
FEATURES = ("gpu_access", "recovery", "reproduce", "rollout")

# recovery.yml's steps, in the order they apply (recovery/service.py STEPS says what each acts
# on); here so that the request check names them before the recovery role runs.
RECOVERY_STEPS = (
    "delete_failed_bindrequests",
    "delete_stale_reservation_pods",
    "delete_duplicate_reservation_pods",
    "delete_dataless_configmaps",
    "delete_orphan_configmaps",
    "restart_binder",
)

# Names of old, and what replaced them (a name or, for None, the message).
RENAMED = {
    "kaiops_rollout_change_owner": "kaiops_change_owner",
    "kaiops_rollout_thresholds": "kaiops_thresholds",
    "kaiops_rollout_target_version": "kaiops_kai_version",
    "kaiops_rollout_evidence_root": None,
}
RENAMED_NOTE = {
    "kaiops_rollout_evidence_root": "the evidence store is the evidence callback's root "
    "([kaiops_evidence] root in ansible.cfg, KAIOPS_EVIDENCE_ROOT for one run)",
}


# kind: seconds (a number > 0), fraction (0 < x <= 1), count (a whole number >= 0), window
# (a whole number of seconds, 60-86400). rollout: the rollout needs it. Percentile pairs are
# also checked p50 <= p95.
def _threshold(kind, rollout, what):
    return {"kind": kind, "rollout": rollout, "what": what}


THRESHOLDS = {
    "bind_latency_p50_s": _threshold("seconds", True, "submission-to-bound latency, p50"),
    "bind_latency_p95_s": _threshold("seconds", True, "submission-to-bound latency, p95"),
    "ready_latency_p50_s": _threshold("seconds", True, "submission-to-Ready latency, p50"),
    "ready_latency_p95_s": _threshold("seconds", True, "submission-to-Ready latency, p95"),
    "completion_rate_min": _threshold("fraction", True, "probe completion rate (failures count)"),
    "binder_restarts_max": _threshold("count", True, "binder container restarts"),
    "stale_objects_max": _threshold("count", True, "stale reservation pods and ConfigMaps"),
    "observation_window_s": _threshold("window", True, "observation window"),
    "component_restarts_max": _threshold(
        "count", False, "container restarts per KAI component above which the inventory flags it"
    ),
    # Optional: the verification's latency limits follow this run's own baseline (rollout/
    # acceptance.baseline_thresholds), for a site whose latency is noisy, like the lab.
    "latency_baseline_factor": _threshold(
        "factor", False, "each latency limit is at least this run's baseline figure times this"
    ),
    "latency_baseline_plus_s": _threshold(
        "seconds", False, "seconds added to the baseline figure with latency_baseline_factor"
    ),
}
PERCENTILE_PAIRS = (
    ("bind_latency_p50_s", "bind_latency_p95_s"),
    ("ready_latency_p50_s", "ready_latency_p95_s"),
)
ROLLOUT_THRESHOLDS = tuple(n for n, rule in THRESHOLDS.items() if rule["rollout"])
# How a kind's value reads in a message: "must be <this>".
KIND_TEXT = {
    "seconds": "a number of seconds",
    "fraction": "a fraction in (0, 1]",
    "count": "a whole number, 0 or more",
    "window": "a whole number of seconds, 60 to 86400",
    "factor": "a number from 1 to 100",
}
# A waiver's fields (the regression and the rehearsal waiver), both written by a person.
WAIVER_FIELDS = ("reason", "approved_by")
# Each kind's bounds, the one table both checks read: every playbook's request check
# (request/rules.py, before any cluster is read) and the rollout's request gates
# (rollout/request.py).
KIND_BOUNDS = {
    "seconds": {"min": 0.001, "max": 86400},
    "fraction": {"min": 0.001, "max": 1},
    "count": {"min": 0, "max": 1000000, "whole": True},
    "window": {"min": 60, "max": 86400, "whole": True},
    "factor": {"min": 1, "max": 100},
}
# How a kind's rule reads in a report's threshold column.
RULE_TEXT = {
    "seconds": "> 0 s",
    "fraction": "> 0 and <= 1",
    "count": "a whole number >= 0",
    "window": "a whole number of seconds, 60 to 86400",
    "factor": ">= 1 and <= 100",
}


# A release tag: v<major>.<minor>.<patch>, optionally -<pre-release>; matched whole (no newline
# after it) and ASCII only (no other script's digits).
RELEASE_TAG = re.compile(
    r"\Av(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)(-[0-9A-Za-z.-]+)?\Z", re.ASCII
)


def is_release_tag(value):
    """True when ``value`` is exactly a release tag, nothing around it."""
    return isinstance(value, str) and RELEASE_TAG.fullmatch(value) is not None


# A wave as a percentage of the clusters: 1% to 100%.
PERCENT = re.compile(r"^\s*(100|[1-9][0-9]?)\s*%\s*$")


def read_waves(value):
    """(serial list, problem or None): one cluster at a time by default."""
    if value in (None, "", []):
        return [1], None
    items = value if isinstance(value, list) else [value]
    out = []
    for item in items:
        if isinstance(item, bool):
            return None, "wave %r is neither a number of clusters nor a percentage" % (item,)
        if isinstance(item, int) and item >= 1:
            out.append(item)
        elif (
            isinstance(item, str)
            and item.strip().isascii()
            and item.strip().isdigit()
            and int(item) >= 1
        ):
            out.append(int(item))
        elif isinstance(item, str) and PERCENT.match(item):
            out.append(item.replace(" ", ""))
        else:
            return None, "wave %r is neither a number of clusters (1 or more) nor a percentage" % (
                item,
            )
    return out, None


def serial_list(value, canary=0):
    """The play's serial for ``value``: the waves as read, or [1] (one cluster at a time) when the
    rule refuses them - the request has refused every cluster then, so nothing changes. With a
    canary group of ``canary`` clusters, a first wave of that many before them."""
    try:
        waves, problem = read_waves(value)
    except Exception:  # noqa: BLE001 - a serial must never crash the play
        waves, problem = [1], None
    waves = [1] if problem or not waves else waves
    return [canary] + waves if isinstance(canary, int) and canary >= 1 else waves


# An inventory group's name as a host pattern can hold it whole (Ansible's valid group names:
# no ':', '!', '&', ',' or '*' that would make it a pattern of its own).
GROUP_NAME = re.compile(r"\A[A-Za-z_][A-Za-z0-9_]*\Z", re.ASCII)


def canary_hosts(name, groups):
    """The clusters of the canary group ``name`` in ``groups`` (Ansible's ``groups``), in
    inventory order; [] when no canary is named or the name is not a group's."""
    if not isinstance(name, str) or not GROUP_NAME.match(name) or not isinstance(groups, dict):
        return []
    hosts = groups.get(name)
    return list(hosts) if isinstance(hosts, (list, tuple)) else []


def canary_first(name):
    """The play's host pattern: the canary group's clusters first, then every other, when ``name``
    can be a group's; ``all`` otherwise (the request check refuses a bad name)."""
    return "%s:all" % name if isinstance(name, str) and GROUP_NAME.match(name) else "all"


def _batch_size(item, hosts):
    """Ansible's ``pct_to_int``: a percentage of every host of the play, at least 1."""
    if isinstance(item, str) and item.endswith("%"):
        return int(int(item[:-1]) / 100.0 * hosts) or 1
    return int(item)


def wave_batches(value, hosts):
    """The hosts of each wave, as Ansible's serial splits the play's hosts (in their order) for
    ``serial_list(value)``: the last wave size repeats until every host is in a wave
    (``PlaybookExecutor._get_serialized_batches``)."""
    sizes, left, batches = serial_list(value), list(hosts), []
    while left:
        size = _batch_size(sizes[min(len(batches), len(sizes) - 1)], len(hosts))
        batches.append(left[:size])
        left = left[size:]
    return batches


def wave_numbers(value, hosts):
    """{host: its wave, 1 for the first (the canary)} by ``wave_batches``."""
    return {host: n for n, batch in enumerate(wave_batches(value, hosts), 1) for host in batch}


def threshold_rule(name):
    """The rule a threshold's value follows, as the report's threshold column gives it: its
    kind's rule, and for a percentile its order against the other of the pair."""
    text = RULE_TEXT[THRESHOLDS[name]["kind"]]
    for low, high in PERCENTILE_PAIRS:
        if name == low:
            text += " and p50 <= p95 (%s)" % high
        elif name == high:
            text += " and p95 >= p50 (%s)" % low
    return text


def type_name(value):
    """How a value's type reads in a message: 'a list', 'a string ('fast')', 'nothing'..."""
    if value is None:
        return "nothing"
    if isinstance(value, bool):
        return "a boolean (%s)" % str(value).lower()
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, (list, tuple)):
        return "a list"
    if isinstance(value, str):
        return "a string (%r)" % (value if len(value) <= 40 else value[:37] + "...")
    if isinstance(value, (int, float)):
        return "a number (%s)" % value
    return "a %s" % type(value).__name__


def whole(value, default=None):
    """A whole number from a number or its text (the API server gives counts as text), or
    ``default`` when it is none."""
    try:
        return int(str(value).strip())
    except (TypeError, ValueError):
        return default


def as_number(value):
    """(number, True) for a number or numeric text (int when whole); (value, False) otherwise."""
    if isinstance(value, bool):
        return value, False
    if isinstance(value, int):
        return value, True
    if isinstance(value, float):
        # NaN passes every comparison's "not above" and infinity every "at most": neither is a
        # number a gate can hold a figure to (nor valid JSON in a report).
        return value, math.isfinite(value)
    if isinstance(value, str):
        text = value.strip()
        if not text.isascii():
            return value, False
        for cast in (int, float):
            try:
                number = cast(text)
            except ValueError:
                continue
            if math.isnan(number) or math.isinf(number):
                return value, False
            return (int(number) if cast is float and number == int(number) else number), True
    return value, False


def _key(name):
    for prefix in ("kaiops_rollout_", "kaiops_"):
        if name.startswith(prefix):
            return name[len(prefix) :]
    return name


def nearest_variable(name):
    """The known name a stray kaiops_* name most likely meant, or None."""
    if RENAMED.get(name):
        return RENAMED[name]
    key = _key(name)
    keys = {_key(known): known for known in VARIABLES}
    for known_key, known in sorted(keys.items()):
        if known_key.endswith("_" + key) or key.endswith("_" + known_key):
            return known
    found = difflib.get_close_matches(key, list(keys), 1, 0.6)
    return keys[found[0]] if found else None


def _other_feature(name, feature):
    return any(name.startswith("kaiops_%s_" % other) for other in FEATURES if other != feature)


def unknown_variables(names, feature="rollout"):
    """[(name, message)] for each kaiops_* name that is not in the vocabulary, sorted; names
    under another feature's prefix are left to that feature."""
    out = []
    for name in sorted(set(names)):
        if not name.startswith("kaiops_") or name in VARIABLES or _other_feature(name, feature):
            continue
        if name in RENAMED_NOTE:
            out.append((name, "%s is no longer read: %s" % (name, RENAMED_NOTE[name])))
            continue
        nearest = nearest_variable(name)
        if name in RENAMED:
            out.append((name, "%s is now %s" % (name, nearest)))
        elif nearest:
            out.append((name, "unknown variable %s (did you mean %s?)" % (name, nearest)))
        else:
            out.append((name, "unknown variable %s (known: %s)" % (name, ", ".join(VARIABLES))))
    return out


def nearest_threshold(name):
    found = difflib.get_close_matches(name, list(THRESHOLDS), 1, 0.6)
    return found[0] if found else None
