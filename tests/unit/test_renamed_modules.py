"""The modules renamed to _info (they return no ansible_facts) still answer to their old names,
through meta/runtime.yml's plugin_routing, with a deprecation warning that names the new one."""

import pytest
import yaml
from playbook_run import run_playbook, write_inventory

RENAMED = {
    "kai_diagnose_facts": "kai_diagnose_info",
    "kai_inventory_facts": "kai_inventory_info",
    "kai_recovery_facts": "kai_recovery_info",
}


def run_one(tmp_path, module):
    """One task that names `module` with no `cluster` (required by all three): the module's own
    argument check answers, so the name resolved to the module and its action plugin ran it on
    the controller (the host has no connection; the fallback action plugin would try SSH)."""
    write_inventory(tmp_path / "inventory.yml", {"lab": {}})
    play = [
        {
            "hosts": "lab",
            "gather_facts": False,
            "tasks": [{"name": "named %s" % module, "kaiops.runbooks.%s" % module: {}}],
        }
    ]
    (tmp_path / "play.yml").write_text(yaml.safe_dump(play))
    done, _bundle = run_playbook(tmp_path, str(tmp_path / "play.yml"), tmp_path / "inventory.yml")
    return done.stdout + done.stderr


@pytest.mark.parametrize("old", sorted(RENAMED))
def test_old_name_resolves_to_info_module_and_warns(tmp_path, old):
    out = run_one(tmp_path, old)
    assert "missing required arguments: cluster" in out, out
    assert "unreachable=0" in out, out
    assert "[DEPRECATION WARNING]: kaiops.runbooks.%s has been deprecated" % old in out, out
    assert "is now kaiops.runbooks.%s" % RENAMED[old] in out, out
    assert "version 1.0.0" in out, out


def test_new_name_does_not_warn(tmp_path):
    out = run_one(tmp_path, "kai_inventory_info")
    assert "missing required arguments: cluster" in out, out
    assert "DEPRECATION" not in out, out
