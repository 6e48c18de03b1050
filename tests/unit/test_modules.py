"""plugins/modules: argument specs match DOCUMENTATION; main() turns KaiopsError into fail_json."""

import importlib
import json

import pytest
import yaml
from ansible.module_utils.testing import patch_module_args

from ansible_collections.kaiops.runbooks.plugins.doc_fragments import evidence as evidence_doc
from ansible_collections.kaiops.runbooks.plugins.doc_fragments import k8s_auth as k8s_auth_doc
from ansible_collections.kaiops.runbooks.plugins.module_utils.errors import KaiopsError

MODULES = ["kai_snapshot", "kai_inventory_facts", "kai_inventory_report"]
FRAGMENTS = {
    "kaiops.runbooks.k8s_auth": k8s_auth_doc.ModuleDocFragment.DOCUMENTATION,
    "kaiops.runbooks.evidence": evidence_doc.ModuleDocFragment.DOCUMENTATION,
}


def load(name):
    return importlib.import_module("ansible_collections.kaiops.runbooks.plugins.modules." + name)


def documented_options(module):
    doc = yaml.safe_load(module.DOCUMENTATION)
    options = dict(doc.get("options") or {})
    for fragment in doc.get("extends_documentation_fragment") or []:
        options.update(yaml.safe_load(FRAGMENTS[fragment])["options"])
    return options


def compare(spec, docs, where):
    assert set(spec) == set(docs), where
    for name, entry in spec.items():
        doc = docs[name]
        assert entry.get("type", "str") == doc.get("type", "str"), (where, name)
        assert entry.get("default") == doc.get("default"), (where, name)
        assert bool(entry.get("required")) == bool(doc.get("required")), (where, name)
        assert entry.get("elements") == doc.get("elements"), (where, name)
        if "options" in entry:
            compare(entry["options"], doc["suboptions"], where + "." + name)


@pytest.mark.parametrize("name", MODULES)
def test_argspec_matches_documentation(name):
    module = load(name)
    compare(module.argspec(), documented_options(module), name)


@pytest.mark.parametrize("name", MODULES)
def test_examples_and_return_are_yaml(name):
    module = load(name)
    assert yaml.safe_load(module.EXAMPLES)
    assert yaml.safe_load(module.RETURN)


def run_main(module, args, capsys):
    with patch_module_args(args), pytest.raises(SystemExit) as done:
        module.main()
    return done.value.code, json.loads(capsys.readouterr().out)


@pytest.mark.parametrize(
    ("name", "runner", "args"),
    [
        ("kai_snapshot", "run_snapshot", {"name": "s", "selections": [{"kind": "Pod"}]}),
        ("kai_inventory_facts", "run_inventory_facts", {"cluster": "lab"}),
        ("kai_inventory_report", "run_inventory_report", {"clusters": {}}),
    ],
)
def test_main_turns_kaiops_error_into_failure_with_status(name, runner, args, monkeypatch, capsys):
    module = load(name)

    def fail(_module):
        raise KaiopsError("Failed to reach the API server at x: refused", status="unreachable")

    monkeypatch.setattr(module, runner, fail)
    code, result = run_main(module, args, capsys)
    assert code == 1
    assert result["failed"] is True
    assert result["msg"] == "Failed to reach the API server at x: refused"
    assert result["status"] == "unreachable"


def test_main_rejects_wrong_types_before_runner(monkeypatch, capsys):
    module = load("kai_snapshot")
    monkeypatch.setattr(module, "run_snapshot", lambda _m: pytest.fail("runner must not run"))
    args = {"name": "s", "selections": [{"kind": "Pod"}], "return_objects": "maybe"}
    code, result = run_main(module, args, capsys)
    assert code == 1 and "return_objects" in result["msg"]


def test_main_passes_validated_params_to_runner(monkeypatch, capsys):
    module = load("kai_inventory_facts")
    seen = {}

    def runner(ansible_module):
        seen.update(ansible_module.params)
        ansible_module.exit_json(changed=False)

    monkeypatch.setattr(module, "run_inventory_facts", runner)
    code, result = run_main(module, {"cluster": "lab", "restart_threshold": "3"}, capsys)
    assert code == 0 and result["changed"] is False
    assert seen["restart_threshold"] == 3
    # Run without its action plugin, the module gets no release facts: the range is not restated.
    assert seen["affected_range"] is None
    assert seen["request_timeout"] == 30
