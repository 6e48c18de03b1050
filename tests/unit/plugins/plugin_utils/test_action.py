"""plugins/plugin_utils/action.py: what the action plugins add on the controller before a module
runs (release facts, the run's context, module_defaults' connection options), pure over the
module's declarations; and plugin_utils/releases.py over the collection's data file."""

import glob
import os

import pytest
import yaml
from conftest import AFFECTED_RANGE, PATCHED, RELEASES, REPO

from ansible_collections.kaiops.runbooks.plugins.plugin_utils import action, releases

MODULES = sorted(
    os.path.splitext(os.path.basename(p))[0]
    for p in glob.glob(os.path.join(REPO, "plugins", "modules", "*.py"))
)
CONTEXT = {"root": "/e", "dir": "/e/20261130T000000Z-rollout-1", "id": "1"}


def code(name):
    return action.module_code("kaiops.runbooks." + name)


def action_plugin_of(name):
    """The action plugin that runs `name`: its own file, or where meta/runtime.yml routes it."""
    with open(os.path.join(REPO, "meta", "runtime.yml")) as handle:
        routing = yaml.safe_load(handle).get("plugin_routing", {}).get("modules", {})
    own = os.path.join(REPO, "plugins", "action", name + ".py")
    if os.path.isfile(own):
        assert "action_plugin" not in routing.get(name, {}), "%s has two action plugins" % name
        return own
    assert name in routing, "%s has neither an action plugin nor a routing to one" % name
    target = routing[name]["action_plugin"]
    assert target.startswith("kaiops.runbooks."), target
    return os.path.join(REPO, "plugins", "action", target.split(".")[-1] + ".py")


@pytest.mark.parametrize("name", MODULES)
def test_every_module_runs_through_a_kaiops_action_plugin(name):
    path = action_plugin_of(name)
    assert os.path.isfile(path), "%s: %s is missing" % (name, path)
    assert "(KaiopsModuleAction)" in open(path).read(), path


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


@pytest.mark.parametrize(
    ("args", "cluster"), [({}, "lab-a"), ({"cluster": "lab-b"}, None), ({"cluster": ""}, "lab-a")]
)
def test_a_record_module_gets_the_cluster_the_host_is_unless_the_task_names_one(args, cluster):
    extra = action.cluster_from_host(
        code("kai_rollout_start"), args, {"inventory_hostname": "lab-a"}
    )
    assert extra == ({"cluster": cluster} if cluster else {})


def test_a_module_that_keeps_no_record_is_not_given_a_cluster():
    # kai_inventory_info requires its cluster from the task: the host is never slipped in
    assert (
        action.cluster_from_host(code("kai_inventory_info"), {}, {"inventory_hostname": "a"}) == {}
    )


def test_every_module_that_keeps_a_record_is_given_its_cluster():
    """The modules with the journal's options declare that the action plugin fills `cluster`."""
    for name in MODULES:
        if "cluster" in code(name).argspec() and "evidence_dir" in code(name).argspec():
            if "kai_rollout_" in name:
                assert getattr(code(name), "CLUSTER_FROM_HOST", False), name


def test_a_module_runs_in_the_background_under_async_and_its_result_is_collected(tmp_path):
    # reproduce's recovery case watches the stuck work while the next build is installed: the
    # shared action plugin must start the module as Ansible's async does, and async_status must
    # hand back the module's own result.
    from playbook_run import run_playbook, write_inventory

    inventory = tmp_path / "hosts.yml"
    write_inventory(inventory, {"c1": {}})
    play = tmp_path / "async.yml"
    play.write_text(
        yaml.safe_dump(
            [
                {
                    "hosts": "c1",
                    "gather_facts": False,
                    "tasks": [
                        {
                            "kaiops.runbooks.kai_reproduce_plan": {
                                "cases": ["nil_data"],
                                "builds": [PATCHED],
                                "install": False,
                                "window_s": 30,
                                "concurrency": 2,
                            },
                            "async": 60,
                            "poll": 0,
                            "register": "job",
                        },
                        {
                            "ansible.builtin.assert": {
                                "that": ["job.ansible_job_id is defined", "job.plan is undefined"]
                            }
                        },
                        {
                            "ansible.builtin.async_status": {"jid": "{{ job.ansible_job_id }}"},
                            # the job runs on the controller, whatever the host's connection
                            "delegate_to": "localhost",
                            "register": "done",
                            "until": "done is finished",
                            "retries": 60,
                            "delay": 1,
                        },
                        {
                            "ansible.builtin.copy": {
                                "content": "{{ done.plan | to_json }}",
                                "dest": str(tmp_path / "plan.json"),
                            },
                            "delegate_to": "localhost",
                        },
                        {
                            "ansible.builtin.async_status": {
                                "jid": "{{ job.ansible_job_id }}",
                                "mode": "cleanup",
                            },
                            "delegate_to": "localhost",
                        },
                    ],
                }
            ]
        )
    )
    done, _bundle = run_playbook(tmp_path, str(play), inventory)
    assert done.returncode == 0, done.stdout + done.stderr
    plan = yaml.safe_load((tmp_path / "plan.json").read_text())
    assert [b["version"] for b in plan["builds"]] == [PATCHED] and plan["cases"] == ["nil_data"]
