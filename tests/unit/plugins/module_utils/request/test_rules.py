"""plugins/module_utils/request/rules.py, the one request check of every playbook, and the
shared rules it stands on (vocabulary, rollout gates, waves, JSON), issue 23 items 1-8: each
malformed input a careless or hostile user gives is refused with a message naming its field and
its fix, never passed, never an exception.
"""

import json
import math
import re

import pytest
from conftest import PATCHED, PRE, THRESHOLDS
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ansible_collections.kaiops.runbooks.plugins.callback import evidence as callback
from ansible_collections.kaiops.runbooks.plugins.filter.serial import serial
from ansible_collections.kaiops.runbooks.plugins.module_utils.evidence.writer import canonical_json
from ansible_collections.kaiops.runbooks.plugins.module_utils.request import report, rules
from ansible_collections.kaiops.runbooks.plugins.module_utils.rollout import (
    gates,
    pipeline,
    request,
)
from ansible_collections.kaiops.runbooks.plugins.module_utils.vocabulary import (
    THRESHOLDS as VOCABULARY_THRESHOLDS,
)
from ansible_collections.kaiops.runbooks.plugins.module_utils.vocabulary import (
    VARIABLES,
    as_number,
    is_release_tag,
    read_waves,
)

NAN, INF = float("nan"), float("inf")


def fields(result):
    return sorted(p["field"] for p in result["problems"])


def test_every_playbook_variable_is_in_the_vocabulary():
    for table in rules.PLAYBOOKS.values():
        for name in table["vars"]:
            assert name in VARIABLES or name.startswith("kai_"), name


# ---------------------------------------------------------------- numbers (item 2)


@pytest.mark.parametrize("value", [NAN, INF, -INF, "nan", "inf", "Infinity", " NaN "])
def test_as_number_refuses_what_is_not_finite(value):
    assert as_number(value)[1] is False


@pytest.mark.parametrize("value", [NAN, INF])
@pytest.mark.parametrize(
    "name",
    [
        "bind_latency_p50_s",
        "binder_restarts_max",
        "observation_window_s",
        "latency_baseline_factor",
    ],
)
def test_rollout_threshold_gate_refuses_nan_and_infinity(name, value):
    thresholds = dict(THRESHOLDS, **{name: value})
    judged = {
        g["gate"]: g
        for g in gates.threshold_gates(
            request.normalize_request({"thresholds": thresholds})["thresholds"]
        )
    }
    assert not judged["threshold:" + name]["passed"]
    assert "not a finite number" in judged["threshold:" + name]["message"]
    json.loads(canonical_json(judged), parse_constant=pytest.fail)


@pytest.mark.parametrize("value", [NAN, INF, "nan"])
def test_rollback_and_inventory_thresholds_refuse_nan(value):
    for playbook, name in (
        ("rollback", "bind_latency_p50_s"),
        ("inventory", "component_restarts_max"),
    ):
        given = {"kaiops_thresholds": {name: value}, "kaiops_rollout_rollback_bundle": "/b"}
        result = rules.check(playbook, given, paths={"/b": "dir"})
        assert fields(result) == ["kaiops_thresholds"], playbook
        json.loads(canonical_json(result), parse_constant=pytest.fail)


@pytest.mark.parametrize("value", [0.5, 101, "x2"])
def test_request_refuses_a_latency_baseline_factor_out_of_bounds(value):
    given = {"kaiops_thresholds": dict(THRESHOLDS, latency_baseline_factor=value)}
    result = rules.check(
        "rollback", dict(given, kaiops_rollout_rollback_bundle="/b"), paths={"/b": "dir"}
    )
    assert fields(result) == ["kaiops_thresholds"]
    assert "latency_baseline_factor" in result["problems"][0]["message"]


@pytest.mark.parametrize(
    ("value", "says"),
    [
        (-1, "must be 0 or more, got -1"),
        (1.5, "must be a whole number, got 1.5"),
        ("two", "must be a number, got a string ('two')"),
        (True, "must be a number, got a boolean (true)"),
        (NAN, "must be a finite number"),
        ([1], "must be a number, got a list"),
    ],
)
def test_rollout_refuses_a_failure_budget_that_is_not_a_whole_number_of_clusters(value, says):
    result = rules.check("rollout", {"kaiops_rollout_failure_budget": value})
    assert fields(result) == ["kaiops_rollout_failure_budget"]
    problem = result["problems"][0]
    assert says in problem["message"]
    assert "whole number of clusters, 0 or more" in problem["fix"]


@pytest.mark.parametrize("value", [0, 2, "3"])
def test_rollout_takes_a_failure_budget_of_whole_clusters(value):
    result = rules.check("rollout", {"kaiops_rollout_failure_budget": value})
    assert "kaiops_rollout_failure_budget" not in fields(result)


SOAK_AND_DEADLINE = ("kaiops_rollout_soak_s", "kaiops_rollout_progress_deadline_s")


@pytest.mark.parametrize("name", SOAK_AND_DEADLINE)
@pytest.mark.parametrize(
    ("value", "says"),
    [
        (-1, "must be between 0 and 86400, got -1"),
        (1e9, "must be between 0 and 86400, got 1000000000.0"),
        (86401, "must be between 0 and 86400, got 86401"),
        (2.5, "must be a whole number, got 2.5"),
        ("abc", "must be a number, got a string ('abc')"),
        (True, "must be a number, got a boolean (true)"),
        (NAN, "must be a finite number"),
        ({"s": 1}, "must be a number, got a mapping"),
    ],
)
def test_rollout_refuses_a_soak_or_deadline_that_is_not_whole_seconds(name, value, says):
    result = rules.check("rollout", {name: value})
    assert fields(result) == [name]
    problem = result["problems"][0]
    assert says in problem["message"]
    assert problem["fix"].startswith("give %s as a whole number of seconds, 0 to 86400" % name)


@pytest.mark.parametrize("name", SOAK_AND_DEADLINE)
@pytest.mark.parametrize("value", [0, 1, 600, "300", 86400])
def test_rollout_takes_a_soak_or_deadline_of_whole_seconds(name, value):
    assert name not in fields(rules.check("rollout", {name: value}))


def test_canonical_json_is_always_json():
    text = canonical_json({"a": NAN, "b": [INF, -INF], "c": 1.5})
    assert json.loads(text, parse_constant=pytest.fail) == {
        "a": "nan",
        "b": ["inf", "-inf"],
        "c": 1.5,
    }


# ---------------------------------------------------------------- tags (item 5)


@pytest.mark.parametrize(
    "tag", ["v0.16.14\n", "v1\u0661.16.14", " v0.16.14", "v0.16.14 ", "v０.1.2"]
)
def test_release_tags_are_matched_whole_and_ascii_only(tag):
    assert not is_release_tag(tag)
    assert gates._version_problem({"kai_version": tag})
    assert gates._rollback_problem({"rollback_target": tag, "kai_version": PATCHED})


def test_rollback_target_equal_to_the_target_after_normalisation_is_refused():
    for same in (PATCHED + "\n", " " + PATCHED, PATCHED.upper()):
        assert "the KAI version under test itself" in gates._rollback_problem(
            {"rollback_target": same, "kai_version": PATCHED}
        )
    assert gates._rollback_problem({"rollback_target": PRE, "kai_version": PATCHED}) is None


def test_reproduce_builds_refuse_a_tag_with_a_newline():
    from ansible_collections.kaiops.runbooks.plugins.module_utils.reproduce.plan import TAG

    assert TAG.match("v0.16.14") and not TAG.match("v0.16.14\n") and not TAG.match("v1\u0661.2.3")


# ---------------------------------------------------------------- waves (item 3)


@pytest.mark.parametrize(
    "waves", ["all", [1, "abc"], [0], [True], {"a": 1}, ["1\u0661"], [1.5], [None]]
)
def test_waves_ansible_would_crash_on_are_refused_and_serial_is_safe(waves):
    assert read_waves(waves)[1]
    assert serial(waves) == [1]


def test_serial_keeps_valid_waves():
    assert serial([1, "25%", "100%"]) == [1, "25%", "100%"]
    assert serial(None) == [1] and serial(2) == [2]


# ---------------------------------------------------------------- names (item 7)


@pytest.mark.parametrize(
    ("playbook", "typo", "nearest"),
    [
        ("reproduce", "kaiops_reproduce_windw_s", "kaiops_reproduce_window_s"),
        ("recovery", "kaiops_recovery_step", "kaiops_recovery_steps"),
        (
            "gpu_access",
            "kaiops_gpu_access_expected_isolaton",
            "kaiops_gpu_access_expected_isolation",
        ),
        ("inventory", "kaiops_thresholdz", "kaiops_thresholds"),
        ("diagnose", "kaiops_kai_namespce", "kaiops_kai_namespace"),
        ("rollback", "kaiops_rollout_rollback_bundel", "kaiops_rollout_rollback_bundle"),
    ],
)
def test_every_playbook_refuses_unknown_names_with_the_nearest(playbook, typo, nearest):
    given = {"kaiops_rollout_rollback_bundle": "/b"}
    result = rules.check(playbook, given, names=[typo, "kaiops_kubeconfig"], paths={"/b": "dir"})
    assert fields(result) == [typo]
    assert "did you mean %s?" % nearest in result["problems"][0]["message"]


def test_inventory_refuses_thresholds_given_as_a_list():
    result = rules.check("inventory", {"kaiops_thresholds": [{"component_restarts_max": 3}]})
    assert fields(result) == ["kaiops_thresholds"]
    assert "must be a mapping" in result["problems"][0]["message"]


# ---------------------------------------------------------------- templates (item 4)


@pytest.mark.parametrize(
    ("playbook", "name", "value", "field"),
    [
        ("inventory", "kaiops_change_owner", "{{ lookup('pipe','id') }}", "kaiops_change_owner"),
        ("rollback", "kaiops_change_owner", "{% if 1 %}x{% endif %}", "kaiops_change_owner"),
        (
            "rollout",
            "kaiops_rollout_regression_waiver",
            {"reason": "{{ lookup('pipe','id') }}", "approved_by": "me"},
            "kaiops_rollout_regression_waiver.reason",
        ),
        (
            "rollout",
            "kaiops_rollout_on_failed_gate",
            {"policy": "continue", "decision": "ok", "approved_by": "{{ x }}"},
            "kaiops_rollout_on_failed_gate.approved_by",
        ),
        (
            "reproduce",
            "kaiops_reproduce_override_reason",
            "{{ lookup('pipe','id') }}",
            "kaiops_reproduce_override_reason",
        ),
    ],
)
def test_a_field_a_person_writes_that_holds_a_template_is_refused_and_not_recorded(
    playbook, name, value, field
):
    given = {"kaiops_rollout_rollback_bundle": "/b"}
    result = rules.check(playbook, given, raw={name: value}, paths={"/b": "dir"})
    assert fields(result) == [field]
    assert "{{" not in json.dumps(result["request"]) and "uid=" not in json.dumps(result)


def test_a_template_elsewhere_is_not_a_persons_field():
    assert rules.check("inventory", {"kaiops_kubeconfig": "/k"}, raw={}, paths={"/k": "file"})[
        "passed"
    ]


# ---------------------------------------------------------------- paths and types (items 1, 6, 8)


def test_a_kubeconfig_that_is_a_directory_is_named_so():
    result = rules.check("recovery", {"kaiops_kubeconfig": "/etc"}, paths={"/etc": "dir"})
    assert (
        result["problems"][0]["message"]
        == "kaiops_kubeconfig: /etc is a directory, not a kubeconfig file"
    )


@pytest.mark.parametrize(
    ("bundle", "kind", "says"),
    [
        (["a", "b"], None, "got a list"),
        ("", None, "is missing"),
        ("/gone", "missing", "is not a bundle"),
        ("/f", "file", "is a file"),
    ],
)
def test_rollback_refuses_a_bad_bundle(bundle, kind, says):
    result = rules.check(
        "rollback", {"kaiops_rollout_rollback_bundle": bundle}, paths={bundle: kind} if kind else {}
    )
    assert fields(result) == ["kaiops_rollout_rollback_bundle"]
    assert says in result["problems"][0]["message"]


def test_recovery_steps_given_as_one_string_are_not_read_letter_by_letter():
    result = rules.check("recovery", {"kai_recovery_steps": "delete_orphan_configmaps"})
    assert result["problems"][0]["message"].startswith("kai_recovery_steps: must be a list")
    assert "'d'" not in result["problems"][0]["message"]


def test_diagnose_namespaces_given_as_one_string_are_not_read_letter_by_letter():
    result = rules.check("diagnose", {"kai_diagnose_namespaces": "team-a"})
    assert fields(result) == ["kai_diagnose_namespaces"]
    assert "must be a list, got a string" in result["problems"][0]["message"]
    assert "kai_diagnose_namespaces" in result["problems"][0]["fix"]


def test_gpu_access_names_the_choices_instead_of_an_argument_spec_dump():
    result = rules.check("gpu_access", {"kaiops_gpu_access_expected_isolation": "bogus"})
    assert result["problems"][0]["fix"] == "give one of none, time-slicing, mig, mps, hami-core"


def test_an_evidence_store_that_cannot_be_written_refuses_with_the_fix():
    result = rules.check("inventory", {}, evidence={"problem": "the evidence root /x is a file"})
    assert fields(result) == ["evidence store"]
    assert "KAIOPS_EVIDENCE_ROOT" in result["problems"][0]["fix"]


def test_the_refusal_report_lists_each_item_with_its_fix():
    found = rules.check("inventory", {"kaiops_thresholds": []})["problems"]
    document = report.build("inventory", {"c1": found}, "2026-01-01T00:00:00Z")
    assert document["decision"] == "refused" and document["refused_by"] == "request"
    assert document["clusters"]["c1"]["items"][0]["fix"]
    assert "| c1 | kaiops_thresholds |" in report.render_markdown(document)


# ---------------------------------------------------------------- the bundle's status (item 8)


def test_a_run_that_ends_without_its_report_is_never_complete(tmp_path):
    playbook = {"path": "/x/playbooks/recovery.yml"}
    assert callback._end_status(str(tmp_path), playbook)[0] == "incomplete"
    (tmp_path / "recovery.json").write_text(
        json.dumps({"decision": "refused", "refused_by": "request"})
    )
    assert callback._end_status(str(tmp_path), playbook)[0] == "refused"
    (tmp_path / "recovery.json").write_text(json.dumps({"summary": {}}))
    assert callback._end_status(str(tmp_path), playbook)[0] == "complete"
    assert callback._end_status(str(tmp_path), {"path": "/x/converge.yml"})[0] == "complete"


def test_nan_is_never_a_number_a_gate_holds_a_figure_to():
    assert not math.isfinite(NAN)  # the premise: NaN > 2 and NaN <= 2 are both false
    problem = rules.check("reproduce", {"kaiops_reproduce_window_s": NAN})["problems"]
    assert problem and problem[0]["field"] == "kaiops_reproduce_window_s"


def role_options(role):
    import os

    import yaml
    from conftest import REPO

    with open(os.path.join(REPO, "roles", role, "meta", "argument_specs.yml")) as handle:
        return yaml.safe_load(handle)["argument_specs"]["main"]["options"]


def test_role_variables_given_are_judged_by_the_roles_spec_one_line_each():
    given = {
        "kai_gpu_access_expected_isolation": "bogus",
        "kai_gpu_access_expected_isolaton": "mig",
        "kai_gpu_access_require_sharing": True,
    }
    result = rules.check("gpu_access", given, role_options=role_options("kai_gpu_access"))
    by_field = {p["field"]: p["message"] for p in result["problems"]}
    assert sorted(by_field) == [
        "kai_gpu_access_expected_isolation",
        "kai_gpu_access_expected_isolaton",
    ]
    assert (
        "must be one of: none, time-slicing, mig, mps, hami-core"
        in by_field["kai_gpu_access_expected_isolation"]
    )
    assert (
        "did you mean kai_gpu_access_expected_isolation?"
        in by_field["kai_gpu_access_expected_isolaton"]
    )
    assert all(len(m) < 300 for m in by_field.values())  # a line, not an argument-spec dump


# ---------------------------------------------------------------- leftovers of the 134-case re-run


def test_inventory_refuses_an_unknown_threshold_name_with_the_nearest():
    given = {"kaiops_thresholds": {"component_restart_max": 0}}
    result = rules.check("inventory", given)
    assert fields(result) == ["kaiops_thresholds"]
    assert "did you mean component_restarts_max?" in result["problems"][0]["message"]


def test_recovery_refuses_an_unknown_step_naming_the_known_ones():
    result = rules.check("recovery", {"kaiops_recovery_steps": ["delete_everything"]})
    assert fields(result) == ["kaiops_recovery_steps"]
    assert "'delete_everything'" in result["problems"][0]["message"]
    assert "delete_orphan_configmaps" in result["problems"][0]["message"]


def test_recovery_steps_of_the_request_check_are_the_service_and_the_role_ones():
    import yaml
    from conftest import REPO

    from ansible_collections.kaiops.runbooks.plugins.module_utils.recovery import service
    from ansible_collections.kaiops.runbooks.plugins.module_utils.vocabulary import RECOVERY_STEPS

    assert tuple(service.STEPS) == RECOVERY_STEPS
    with open("%s/roles/kai_recovery/tasks/run.yml" % REPO) as handle:
        role = yaml.safe_load(handle)[0]["vars"]["kai_recovery_known_steps"]
    assert tuple(role) == RECOVERY_STEPS


@pytest.mark.parametrize("playbook", ["rollout", "rollback"])
def test_an_unknown_downgrade_method_is_refused_by_the_request_check(playbook):
    given = {"kaiops_rollout_downgrade_method": "rollback", "kaiops_rollout_rollback_bundle": "/b"}
    result = rules.check(playbook, given, paths={"/b": "dir"})
    assert fields(result) == ["kaiops_rollout_downgrade_method"]
    assert "helm rollback is never used" in result["problems"][0]["fix"]


TEMPLATE = "{{ lookup('pipe', 'id') }}"


@pytest.mark.parametrize(
    "playbook,name,value",
    [
        ("rollback", "kaiops_rollout_rollback_bundle", TEMPLATE),
        ("rollout", "kaiops_context", TEMPLATE),
        ("recovery", "kaiops_kai_namespace", TEMPLATE),
        ("reproduce", "kaiops_reproduce_cases", ["nil_data", TEMPLATE]),
        ("recovery", "kaiops_recovery_steps", [TEMPLATE]),
        ("rollout", "kaiops_kai_version", TEMPLATE),
    ],
)
def test_any_request_field_written_as_a_template_is_refused_and_not_recorded(playbook, name, value):
    names = [name] if name.startswith("kaiops_") else []
    raw = {n: value for n in rules.judged_names(playbook, names) if n == name}
    assert raw, "the action plugin would not look at %s" % name
    result = rules.check(playbook, {}, raw=raw, names=names, paths={})
    assert name in fields(result)
    assert "comes out of a template or lookup" in json.dumps(result["problems"])
    assert "uid=" not in json.dumps(result)


def test_a_kubeconfig_read_from_the_environment_by_a_lookup_is_allowed():
    raw = {"kaiops_kubeconfig": "{{ lookup('ansible.builtin.env', 'KUBECONFIG') }}"}
    assert rules.templated_fields(raw) == []


def test_the_roles_own_recovery_steps_name_is_judged_and_deprecated():
    given = {"kai_recovery_steps": ["delete_orphan_configmaps"]}
    assert rules.check("recovery", given)["passed"]
    assert rules.deprecations(given) == [
        ("kai_recovery_steps is deprecated: give kaiops_recovery_steps instead", "1.0.0")
    ]
    assert rules.deprecations({"kaiops_recovery_steps": []}) == []


# -------------------------------------------------------------------------------------------------
# Property tests (Hypothesis) over each playbook's request check, the pure functions only: any
# input either validates or is refused with problems that each name a field, never an exception,
# and what comes back is always JSON (issue 23). No ansible-playbook is spawned here.
#
# - ``request/rules.check`` for every playbook (inventory, reproduce, recovery, gpu_access,
#   rollout, rollback), over arbitrary values, names, paths and values as written;
# - rollout.yml's own request gates (``rollout/request.normalize_request`` then
#   ``rollout/gates.request_gates``) and policy (failed-gate policy, waves);
# - the play's serial (``filter/serial``): always a list Ansible's serial takes.


SETTINGS = settings(
    max_examples=200,
    deadline=None,
    database=None,  # no example database in the checkout
    suppress_health_check=[HealthCheck.too_slow],
)
SERIAL_ITEM = re.compile(r"\A([1-9][0-9]*|(100|[1-9][0-9]?)%)\Z")

scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(10**20), max_value=10**20)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=30)
    | st.sampled_from(
        [
            "v0.16.14",
            "v0.16.14\n",
            "v1\u0661.16.14",
            "{{ lookup('pipe','id') }}",
            "nan",
            "Infinity",
            " 300 ",
            "25%",
            "all",
            "/etc",
            "true",
            "0",
        ]
    )
)
values = st.recursive(
    scalars,
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=12), inner, max_size=4)
    ),
    max_leaves=12,
)
ROLE_VARS = [
    "kai_gpu_access_expected_isolation",
    "kai_gpu_access_require_sharing",
    "kai_recovery_window_s",
    "kai_recovery_namespaces",
    "kai_reproduce_cases",
    "kai_reproduce_window_s",
    "kai_inventory_restart_threshold",
    "kai_inventory_operation",
    "kai_recovery_wndow_s",
]
known = sorted(
    set(VARIABLES) | {n for t in rules.PLAYBOOKS.values() for n in t["vars"]} | set(ROLE_VARS)
)
names = st.sampled_from(known) | st.text(max_size=20).map(lambda s: "kaiops_" + s)
requests = st.dictionaries(names, values, max_size=8)
path_kinds = st.dictionaries(
    st.text(max_size=12), st.sampled_from(["file", "dir", "missing", "unreadable"]), max_size=3
)


def no_constant(name):
    raise ValueError("not JSON: %s" % name)


def strict(data):
    return json.loads(canonical_json(data), parse_constant=no_constant)


ROLE_OPTIONS = {}


def playbook_role_options(playbook):
    """The options of the playbook's role, as the action plugin reads them."""
    from ansible_collections.kaiops.runbooks.plugins.action.kai_request import role_options as read

    role = rules.PLAYBOOKS[playbook].get("role")
    if role and role not in ROLE_OPTIONS:
        ROLE_OPTIONS[role] = read(role)
    return ROLE_OPTIONS.get(role)


@SETTINGS
@given(
    playbook=st.sampled_from(sorted(rules.PLAYBOOKS)),
    given_=requests,
    raw=requests,
    extra=st.lists(names, max_size=4),
    paths=path_kinds,
    evidence=st.none() | st.text(max_size=20).map(lambda t: {"problem": t}),
)
def test_every_request_validates_or_is_refused_naming_a_field(
    playbook, given_, raw, extra, paths, evidence
):
    result = rules.check(
        playbook,
        given_,
        raw=raw,
        names=list(given_) + extra,
        paths=paths,
        evidence=evidence,
        role_options=playbook_role_options(playbook),
    )
    assert set(result) == {"passed", "problems", "request"}
    assert result["passed"] is (not result["problems"])
    for problem in result["problems"]:
        assert problem["field"] != "request", problem  # the check itself never broke
        assert isinstance(problem["field"], str) and problem["field"]
        assert problem["field"] in problem["message"] and problem["fix"]
    strict(result)
    # a person's field written as a template is never recorded
    for name, _field in rules.templated_fields(raw):
        assert name not in result["request"] or "refused" in str(result["request"][name])


@SETTINGS
@given(
    raw=st.fixed_dictionaries(
        {},
        optional={
            "change_owner": values,
            "kai_version": values,
            "thresholds": values,
            "rollback_target": values,
            "regression_waiver": values,
            "rehearsal_waiver": values,
            "variables": st.lists(names, max_size=3),
            "stray_extra_vars": st.lists(st.text(max_size=10), max_size=2),
        },
    )
)
def test_rollouts_request_gates_judge_anything_and_name_each_failed_gate(raw):
    asked = request.normalize_request(raw)
    judged, _detail = gates.request_gates(asked, lambda root, version: ([], []), None)
    for g in gates.failed(judged):
        assert g["gate"] and g["message"], g
    strict({"request": asked, "gates": judged})


@SETTINGS
@given(policy=values, waves=values)
def test_rollouts_policy_and_waves_are_judged_and_serial_never_crashes_the_play(policy, waves):
    record = pipeline.add_policy({"gates": [], "steps": [{"step": "request"}]}, policy, waves)
    for g in gates.failed(record["gates"]):
        assert g["gate"] in ("failed_gate_policy", "waves") and g["message"], g
    strict(record)
    out = serial(waves)
    assert isinstance(out, list) and out
    assert all((isinstance(i, int) and i >= 1) or SERIAL_ITEM.match(str(i)) for i in out)


@pytest.mark.parametrize("name", sorted(VOCABULARY_THRESHOLDS))
@pytest.mark.parametrize("value", [-1, 0, 0.0005, 0.5, 1, 1.5, 2, 59, 60, 100, 86400, 86401, 10**7])
def test_the_request_check_and_the_rollouts_gates_bound_a_threshold_alike(name, value):
    """One table of bounds (vocabulary.KIND_BOUNDS): what the request check of every playbook
    lets through, the rollout's request gate takes, and what one refuses the other refuses."""
    _read, checked = rules._thresholds({name: value}, {})
    _number, gated = request.read_threshold(name, value)
    assert bool(checked) == bool(gated), (checked, gated)
