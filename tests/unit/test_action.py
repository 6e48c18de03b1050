"""plugins/plugin_utils/action.py: what the action plugins add on the controller before a module
runs (release facts, the run's context, module_defaults' connection options), pure over the
module's declarations; and plugin_utils/releases.py over the collection's data file."""

import glob
import os

import pytest
from conftest import AFFECTED_RANGE, PATCHED, RELEASES, REPO

from ansible_collections.kaiops.runbooks.plugins.plugin_utils import action, releases

MODULES = sorted(
    os.path.splitext(os.path.basename(p))[0]
    for p in glob.glob(os.path.join(REPO, "plugins", "modules", "*.py"))
)
CONTEXT = {"root": "/e", "dir": "/e/20261130T000000Z-rollout-1", "id": "1"}


def code(name):
    return action.module_code("kaiops.runbooks." + name)


@pytest.mark.parametrize("name", MODULES)
def test_every_module_has_its_action_plugin(name):
    path = os.path.join(REPO, "plugins", "action", name + ".py")
    assert os.path.isfile(path), "plugins/action/%s.py is missing" % name
    text = open(path).read()
    # ClusterModuleAction is the KaiopsModuleAction of the modules that keep a cluster's record
    assert "KaiopsModuleAction" in text or "ClusterModuleAction" in text


@pytest.mark.parametrize("name", MODULES)
def test_release_defaults_point_at_facts_and_are_not_restated(name):
    module = code(name)
    spec = module.argspec()
    for option, dotted in getattr(module, "RELEASE_DEFAULTS", {}).items():
        assert option in spec, (name, option)
        assert spec[option].get("default") is None, "%s.%s restates a release fact" % (name, option)
        assert releases.value(dotted) not in (None, "", {}), (name, dotted)


def test_release_facts_fill_only_what_the_task_leaves_out():
    module = code("kai_inventory_report")
    args = action.controller_args(module, {"clusters": {}}, None)
    assert args["affected_range"] == AFFECTED_RANGE and args["fixed_version"] == PATCHED
    given = action.controller_args(module, {"clusters": {}, "affected_range": ">=1.0.0"}, None)
    assert given["affected_range"] == ">=1.0.0"


def test_release_facts_are_read_from_the_collections_data_file():
    assert os.path.realpath(releases.RELEASES_FILE) == os.path.join(
        REPO, "meta", "kai_releases.yml"
    )
    assert releases.load() == RELEASES
    assert releases.value("pair.patched") == PATCHED
    with pytest.raises(Exception, match="no such key"):
        releases.value("pair.nope")


def test_run_context_gives_evidence_dir_and_root_unless_given():
    args = action.controller_args(code("kai_rollout_report"), {"request": {}}, CONTEXT)
    assert args["evidence_dir"] == CONTEXT["dir"]
    own = action.controller_args(code("kai_rollout_report"), {"evidence_dir": "/mine"}, CONTEXT)
    assert own["evidence_dir"] == "/mine"
    assert "evidence_dir" not in action.controller_args(code("kai_rollout_report"), {}, None)


def test_connection_options_are_dropped_for_modules_that_reach_no_cluster():
    defaults = {"kubeconfig": "/k", "context": "c", "request_timeout": 5}
    report = action.controller_args(code("kai_inventory_report"), dict(defaults), None)
    assert not set(defaults) & set(report)
    facts = action.controller_args(code("kai_inventory_info"), dict(defaults), None)
    assert {k: facts[k] for k in defaults} == defaults


def test_report_modules_get_the_collections_templates_folder_unless_given():
    args = action.controller_args(code("kai_request"), {"playbook": "rollout.yml"}, None)
    assert os.path.realpath(args["template_dir"]) == os.path.join(REPO, "templates", "reports")
    assert os.path.isfile(os.path.join(args["template_dir"], "request.md.j2"))
    own = action.controller_args(code("kai_request"), {"template_dir": "/mine"}, None)
    assert own["template_dir"] == "/mine"
    # a module that renders nothing does not get the option (its argspec would refuse it)
    assert "template_dir" not in action.controller_args(code("kai_snapshot"), {}, None)


@pytest.mark.parametrize(
    "name,template",
    [
        ("kai_inventory_report", "inventory.md.j2"),
        ("kai_recovery_report", "recovery.md.j2"),
        ("kai_gpu_access_report", "gpu_access.md.j2"),
    ],
)
def test_each_report_module_gets_the_folder_that_holds_its_template(name, template):
    args = action.controller_args(code(name), {}, None)
    assert os.path.isfile(os.path.join(args["template_dir"], template))


class _Task:
    def __init__(self, args):
        self.args = args


@pytest.mark.parametrize(
    ("args", "cluster"), [({}, "lab-a"), ({"cluster": "lab-b"}, None), ({"cluster": ""}, "lab-a")]
)
def test_a_record_module_gets_the_cluster_the_host_is_unless_the_task_names_one(args, cluster):
    plugin = action.ClusterModuleAction.__new__(action.ClusterModuleAction)
    plugin._task = _Task(args)
    extra = plugin.extra_args({"inventory_hostname": "lab-a"})
    assert extra == ({"cluster": cluster} if cluster else {})


def test_every_module_that_keeps_a_record_is_given_its_cluster():
    """The modules with the journal's options run through ClusterModuleAction."""
    for name in MODULES:
        if "cluster" in code(name).argspec() and "evidence_dir" in code(name).argspec():
            path = os.path.join(REPO, "plugins", "action", name + ".py")
            if "kai_rollout_" in name:
                assert "ClusterModuleAction" in open(path).read(), name
