"""The one request check of every playbook, end to end (issue 23 items 1-8): malformed input
is refused before any cluster is read, with the playbook's report (decision refused, each item
with its fix) in a bundle whose status says so, no traceback, and nothing a template produced in
the record. The kubeconfigs point nowhere: a task that read a cluster would fail on it.

Few runs on purpose (each spawns ansible-playbook): one per playbook, several findings each.
"""

import json
import os

import playbook_run
from conftest import PATCHED, PRE, REPO, THRESHOLDS
from playbooks.test_inventory import events, sha256sum_ok

TEMPLATE = "{{ lookup('ansible.builtin.pipe', 'id') }}"
CLUSTER_READERS = ("kai_inventory_info", "kai_identify", "k8s_info", "kai_recovery_info")
REQUEST = {
    "kaiops_kubeconfig": "/nonexistent/kubeconfig",
    "kaiops_change_owner": "sre-oncall@example.com",
    "kaiops_kai_version": PATCHED,
    "kaiops_rollout_rollback_target": PRE,
    "kaiops_thresholds": THRESHOLDS,
    "kaiops_rollout_regression_waiver": {"reason": "unit test", "approved_by": "pytest"},
}


def kubeconfig(tmp_path):
    """A kubeconfig file whose server nobody answers: the request is judged, nothing is read."""
    path = tmp_path / "kubeconfig"
    path.write_text("apiVersion: v1\nkind: Config\nclusters: []\ncontexts: []\nusers: []\n")
    return str(path)


def run(tmp_path, playbook, hosts, *args, env_extra=None):
    inventory = tmp_path / "hosts.yml"
    playbook_run.write_inventory(inventory, hosts)
    return playbook_run.run_playbook(tmp_path, playbook, inventory, *args, env_extra=env_extra)


def no_constant(name):
    raise ValueError("not JSON: %s" % name)


def strict_json(path):
    with open(path) as handle:
        return json.load(handle, parse_constant=no_constant)


def assert_refused_before_any_cluster(done, bundle):
    out = done.stdout + done.stderr
    assert done.returncode == 2, out
    assert "Traceback" not in out, out
    read = [
        e
        for e in events(bundle)
        if e["action"].split(".")[-1] in CLUSTER_READERS and e["event"] != "skipped"
    ]
    assert not read, read
    for name in os.listdir(bundle):
        with open(os.path.join(bundle, name), errors="replace") as handle:
            assert "uid=" not in handle.read(), name  # no template's output anywhere
    assert sha256sum_ok(bundle)
    return out


def test_rollback_refuses_a_bundle_given_as_a_list_before_it_reads_the_cluster(tmp_path):
    hosts = {
        "c1": {"kaiops_kubeconfig": "/nonexistent/kubeconfig", "kaiops_change_owner": TEMPLATE}
    }
    done, bundle = run(
        tmp_path,
        "playbooks/rollback.yml",
        hosts,
        "-e",
        '{"kaiops_rollout_rollback_bundle": ["a", "b"]}',
    )
    out = assert_refused_before_any_cluster(done, bundle)
    assert (
        "kaiops_rollout_rollback_bundle: must be the path of one rollout bundle, got a list" in out
    )
    assert "kaiops_change_owner: comes out of a template or lookup" in out
    report = strict_json(os.path.join(bundle, "report.json"))
    assert report["clusters"]["c1"]["decision"] == "refused"
    assert [g["fix"] for g in report["clusters"]["c1"]["gates"] if not g["passed"]]
    assert report["refused_by"] == "request"
    with open(os.path.join(bundle, "status")) as handle:
        assert handle.read().strip() == "refused"


def test_rollback_resolves_the_documented_bundle_path_from_where_the_command_runs(tmp_path):
    folder = tmp_path / "evidence" / "20260101T000000Z-rollout-feedbeef"
    folder.mkdir(parents=True)
    (folder / "report.json").write_text(json.dumps({"kind": "rollout", "clusters": {}}))
    given = os.path.relpath(str(folder), REPO)  # the command runs in the repository
    done, bundle = run(
        tmp_path,
        "playbooks/rollback.yml",
        {"c1": dict(REQUEST)},
        "-e",
        "kaiops_rollout_rollback_bundle=%s" % given,
    )
    out = assert_refused_before_any_cluster(done, bundle)
    assert "has no record of cluster c1" in out, out
    assert "no readable report.json" not in out


def test_rollout_refuses_waves_serial_cannot_take_and_nan_thresholds_with_its_report(tmp_path):
    hosts = {name: dict(REQUEST) for name in ("c1", "c2", "c3")}
    hosts["c2"]["kaiops_thresholds"] = dict(THRESHOLDS, bind_latency_p50_s=float("nan"))
    hosts["c3"]["kaiops_thresholds"] = dict(THRESHOLDS, observation_window_s=float("inf"))
    done, bundle = run(tmp_path, "rollout.yml", hosts, "-e", '{"kaiops_rollout_waves": [1, "abc"]}')
    out = assert_refused_before_any_cluster(done, bundle)
    report = strict_json(os.path.join(bundle, "report.json"))
    assert {c["decision"] for c in report["clusters"].values()} == {"refused"}
    assert "wave 'abc' is neither a number of clusters" in out
    assert "bind_latency_p50_s" in out and "not a finite number" in out
    assert report["refused_by"] == "request"
    with open(os.path.join(bundle, "status")) as handle:
        assert handle.read().strip() == "refused"


def test_reproduce_refuses_a_typo_and_a_templated_override_reason_with_its_report(tmp_path):
    done, bundle = run(
        tmp_path,
        "playbooks/reproduce.yml",
        {"c1": {"kaiops_kubeconfig": kubeconfig(tmp_path)}},
        "-e",
        "kaiops_reproduce_windw_s=30",
        "-e",
        "kaiops_reproduce_override_reason=%s" % TEMPLATE,
    )
    out = assert_refused_before_any_cluster(done, bundle)
    assert "did you mean kaiops_reproduce_window_s?" in out
    report = strict_json(os.path.join(bundle, "report.json"))
    assert report["kind"] == "reproduce" and report["decision"] == "refused"
    fields = [i["field"] for i in report["clusters"]["c1"]["items"]]
    assert fields == ["kaiops_reproduce_windw_s", "kaiops_reproduce_override_reason"]
    assert all(i["fix"] for i in report["clusters"]["c1"]["items"])
    with open(os.path.join(bundle, "status")) as handle:
        assert handle.read().strip() == "refused"


def test_inventory_refuses_list_thresholds_and_a_directory_kubeconfig(tmp_path):
    hosts = {
        "c1": {
            "kaiops_kubeconfig": kubeconfig(tmp_path),
            "kaiops_thresholds": [{"component_restarts_max": 3}],
        },
        "c2": {"kaiops_kubeconfig": str(tmp_path)},
    }
    done, bundle = run(tmp_path, "playbooks/inventory.yml", hosts)
    assert_refused_before_any_cluster(done, bundle)
    report = strict_json(os.path.join(bundle, "inventory.json"))
    assert report["clusters"]["c1"]["items"][0]["message"].startswith(
        "kaiops_thresholds: must be a mapping, got a list"
    )
    assert report["clusters"]["c2"]["items"][0]["message"].endswith(
        "is a directory, not a kubeconfig file"
    )


def test_recovery_refuses_steps_given_as_one_string_and_a_typo(tmp_path):
    done, bundle = run(
        tmp_path,
        "playbooks/recovery.yml",
        {"c1": {"kaiops_kubeconfig": kubeconfig(tmp_path), "kaiops_recovery_step": []}},
        "-e",
        "kaiops_recovery_steps=delete_orphan_configmaps",
    )
    out = assert_refused_before_any_cluster(done, bundle)
    assert "kaiops_recovery_steps: must be a list, got a string" in out
    assert "did you mean kaiops_recovery_steps?" in out
    assert os.path.isfile(os.path.join(bundle, "recovery.md"))


def test_gpu_access_names_the_choices_without_an_argument_spec_dump(tmp_path):
    done, bundle = run(
        tmp_path,
        "playbooks/gpu_access.yml",
        {"c1": {"kaiops_kubeconfig": kubeconfig(tmp_path)}},
        "-e",
        "kaiops_gpu_access_expected_isolation=timeslicing",
        "-e",
        "kaiops_gpu_access_expected_isolaton=mig",
    )
    out = assert_refused_before_any_cluster(done, bundle)
    assert "argument_spec_data" not in out and "kai_gpu_access : Validating" not in out
    assert "must be one of none, time-slicing, mig, mps, hami-core" in out
    assert "did you mean kaiops_gpu_access_expected_isolation?" in out
    assert strict_json(os.path.join(bundle, "gpu_access.json"))["decision"] == "refused"


def test_an_evidence_root_that_is_a_file_stops_the_run_before_the_cluster(tmp_path):
    root = tmp_path / "evidence-file"
    root.write_text("not a folder\n")
    done, _bundle = run(
        tmp_path,
        "playbooks/inventory.yml",
        {"c1": {"kaiops_kubeconfig": "/nonexistent/kubeconfig"}},
        env_extra={"KAIOPS_EVIDENCE_ROOT": str(root)},
    )
    out = done.stdout + done.stderr
    assert done.returncode == 2 and "Traceback" not in out, out
    assert "is a file, not a folder" in out and "KAIOPS_EVIDENCE_ROOT=<dir>" in out
    assert "enable the kaiops.runbooks.evidence callback" not in out
    assert "kai_inventory : Read" not in out and "TASK [kaiops.runbooks.kai_inventory" not in out


def test_reproduce_writes_its_report_when_its_own_plan_refuses_the_cluster(tmp_path):
    done, bundle = run(
        tmp_path,
        "playbooks/reproduce.yml",
        {"c1": {"kaiops_kubeconfig": kubeconfig(tmp_path)}},
        "-e",
        "kaiops_reproduce_allow_non_disposable=true",  # no override reason: the plan refuses
    )
    assert_refused_before_any_cluster(done, bundle)
    report = strict_json(os.path.join(bundle, "report.json"))
    (item,) = report["clusters"]["c1"]["items"]
    assert item["field"] == "kai_reproduce_allow_non_disposable" and item["fix"]
    with open(os.path.join(bundle, "status")) as handle:
        assert handle.read().strip() == "refused"


def rollout_bundle(folder, clusters):
    """A rollout bundle that recorded, before its change, a Helm revision and a snapshot of each
    of ``clusters``: what rollback.yml restores from."""
    folder.mkdir(parents=True)
    entries = {
        name: {
            "request": {"kai_version": PATCHED, "rollback_target": PRE, "thresholds": THRESHOLDS},
            "change": {"before": {"revision": 3, "version": PRE, "snapshot": "snapshots/" + name}},
        }
        for name in clusters
    }
    (folder / "report.json").write_text(json.dumps({"kind": "rollout", "clusters": entries}))
    for name in clusters:
        (folder / "snapshots" / name).mkdir(parents=True)


def test_rollback_judges_every_request_before_any_cluster_and_reports_a_cluster_it_cannot_read(
    tmp_path,
):
    # The documented form evidence/<bundle>, with the evidence store somewhere else: the bundle is
    # found in the store. c1's request is good but its kubeconfig is missing; c2's is refused.
    store = tmp_path / "store"
    rollout_bundle(store / "20260101T000000Z-rollout-feedbeef", ["c1", "c2"])
    hosts = {
        "c1": dict(REQUEST),
        "c2": dict(REQUEST, kaiops_context=TEMPLATE, kaiops_rollout_downgrade_method="rollback"),
    }
    done, bundle = run(
        tmp_path,
        "playbooks/rollback.yml",
        hosts,
        "-e",
        "kaiops_rollout_rollback_bundle=evidence/20260101T000000Z-rollout-feedbeef",
        env_extra={"KAIOPS_EVIDENCE_ROOT": str(store)},
    )
    bundle = os.path.realpath(store / "latest")
    out = done.stdout + done.stderr
    assert done.returncode == 2 and "Traceback" not in out, out
    assert "argument_spec_data" not in out, out
    seen = events(bundle)
    order = [(e["host"], e["task"]) for e in seen if e["event"] != "skipped"]
    first_read = next(i for i, (_h, t) in enumerate(order) if t.startswith("Inventory the cluster"))
    judged = [
        h for h, t in order[:first_read] if t.endswith("Judge the request (no cluster is read)")
    ]
    assert sorted(judged) == ["c1", "c2"], order  # c2 is judged before c1's cluster is read
    assert order[first_read][0] == "c1", order
    assert not [
        e for e in seen if e["host"] == "c2" and e["action"].split(".")[-1] in CLUSTER_READERS
    ]
    # c1 could not be read: nothing is rolled back blind (no read of KAI's objects after it).
    assert not [t for h, t in order if "Read KAI's configuration" in t], order
    report = strict_json(os.path.join(bundle, "report.json"))
    c1, c2 = report["clusters"]["c1"], report["clusters"]["c2"]
    assert c2["decision"] == "refused"
    refused = " ".join(g["message"] for g in c2["gates"] if not g["passed"])
    assert "kaiops_context: comes out of a template or lookup" in refused
    assert "kaiops_rollout_downgrade_method: must be one of auto, upgrade, reinstall" in refused
    # c1's bundle was found (evidence/<bundle> in the store); its cluster could not be read.
    assert c1["decision"] != "rolled_back"
    failing = " ".join(g["message"] for g in c1["gates"] if not g["passed"])
    assert "/nonexistent/kubeconfig' does not exist on the controller" in failing, failing
    assert "has no record" not in failing and "not a bundle" not in failing
    for name in os.listdir(bundle):
        path = os.path.join(bundle, name)
        if os.path.isfile(path):
            with open(path, errors="replace") as handle:
                assert "uid=" not in handle.read(), name
    assert sha256sum_ok(bundle)


def test_rollout_and_rollback_name_the_evidence_store_fix_when_it_cannot_hold_a_bundle(tmp_path):
    root = tmp_path / "evidence-file"
    root.write_text("not a folder\n")
    for playbook in ("rollout.yml", "playbooks/rollback.yml"):
        done, _bundle = run(
            tmp_path,
            playbook,
            {"c1": dict(REQUEST)},
            "-e",
            "kaiops_rollout_rollback_bundle=/nonexistent",
            env_extra={"KAIOPS_EVIDENCE_ROOT": str(root)},
        )
        out = done.stdout + done.stderr
        assert done.returncode == 2 and "Traceback" not in out, out
        assert "KAIOPS_EVIDENCE_ROOT=<dir>" in out, (playbook, out)
        assert "TASK [kaiops.runbooks.kai_inventory" not in out, (playbook, out)


def test_rollout_refuses_typed_options_with_its_report_not_an_argument_spec_dump(tmp_path):
    # tools/careless_input.py found these refused by the role's argument spec first: a dump of
    # the whole spec, no report, the bundle left "incomplete"
    done, bundle = run(
        tmp_path,
        "rollout.yml",
        {"c1": dict(REQUEST)},
        "-e",
        "kaiops_rollout_burst_probes=many",
        "-e",
        "kaiops_kai_helm_values=gpuSharing",
        "-e",
        "kaiops_rollout_governance=strict",
    )
    out = assert_refused_before_any_cluster(done, bundle)
    assert "argument_spec_data" not in out
    for name in (
        "kaiops_rollout_burst_probes",
        "kaiops_kai_helm_values",
        "kaiops_rollout_governance",
    ):
        assert name in out, name
    report = strict_json(os.path.join(bundle, "report.json"))
    assert report["clusters"]["c1"]["decision"] == "refused"
