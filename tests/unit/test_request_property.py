"""Property tests (Hypothesis) over each playbook's request check, the pure functions only: any
input either validates or is refused with problems that each name a field, never an exception,
and what comes back is always JSON (issue 23). No ansible-playbook is spawned here.

- ``request/rules.check`` for every playbook (inventory, reproduce, recovery, gpu_access,
  rollout, rollback), over arbitrary values, names, paths and values as written;
- rollout.yml's own request gates (``rollout/request.normalize_request`` then
  ``rollout/gates.request_gates``) and policy (failed-gate policy, waves);
- the play's serial (``filter/serial``): always a list Ansible's serial takes.
"""

import json
import re

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ansible_collections.kaiops.runbooks.plugins.filter.serial import serial
from ansible_collections.kaiops.runbooks.plugins.module_utils.evidence.writer import canonical_json
from ansible_collections.kaiops.runbooks.plugins.module_utils.request import rules
from ansible_collections.kaiops.runbooks.plugins.module_utils.rollout import (
    gates,
    pipeline,
    request,
)
from ansible_collections.kaiops.runbooks.plugins.module_utils.vocabulary import VARIABLES

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


def role_options(playbook):
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
        role_options=role_options(playbook),
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
