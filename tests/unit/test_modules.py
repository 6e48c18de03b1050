"""plugins/modules (every module, found by glob): main() is one run_module call with the module's
argspec, a KaiopsError from the runner is a failure with its status, wrong types are refused before
the runner, and version_added is the collection's version. That each argspec matches its
DOCUMENTATION and that EXAMPLES and RETURN are YAML is ansible-test sanity's validate-modules
(make lint), not restated here."""

import glob
import importlib
import json
import os

import pytest
import yaml
from ansible.module_utils.testing import patch_module_args
from conftest import REPO

from ansible_collections.kaiops.runbooks.plugins.module_utils.errors import KaiopsError

PLUGINS = "ansible_collections.kaiops.runbooks.plugins"
MODULES = sorted(
    os.path.splitext(os.path.basename(p))[0]
    for p in glob.glob(os.path.join(REPO, "plugins", "modules", "*.py"))
)


def load(name):
    return importlib.import_module("%s.modules.%s" % (PLUGINS, name))


@pytest.mark.parametrize("name", MODULES)
def test_main_is_one_run_module_call_with_the_argspec(name, monkeypatch):
    module = load(name)
    seen = {}
    monkeypatch.setattr(
        module, "run_module", lambda spec, runner, **kw: seen.update(spec=spec, runner=runner)
    )
    module.main()
    assert seen["spec"] == module.argspec() and callable(seen["runner"])


def run_main(module, args, capsys):
    with patch_module_args(args), pytest.raises(SystemExit) as done:
        module.main()
    return done.value.code, json.loads(capsys.readouterr().out)


@pytest.mark.parametrize(
    ("name", "runner", "args"),
    [
        ("kai_snapshot", "run_snapshot", {"name": "s", "selections": [{"kind": "Pod"}]}),
        ("kai_inventory_info", "run_inventory_info", {"cluster": "lab"}),
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
    module = load("kai_inventory_info")
    seen = {}

    def runner(ansible_module):
        seen.update(ansible_module.params)
        ansible_module.exit_json(changed=False)

    monkeypatch.setattr(module, "run_inventory_info", runner)
    code, result = run_main(module, {"cluster": "lab", "restart_threshold": "3"}, capsys)
    assert code == 0 and result["changed"] is False
    assert seen["restart_threshold"] == 3
    # Run without its action plugin, the module gets no release facts: the range is not restated.
    assert seen["affected_range"] is None
    assert seen["request_timeout"] == 30


@pytest.mark.parametrize("name", MODULES)
def test_version_added_is_the_collection_version(name):
    with open(os.path.join(REPO, "galaxy.yml")) as handle:
        version = str(yaml.safe_load(handle)["version"])
    doc = yaml.safe_load(load(name).DOCUMENTATION)
    assert str(doc["version_added"]) == version, "%s: version_added %s, galaxy.yml %s" % (
        name,
        doc["version_added"],
        version,
    )
