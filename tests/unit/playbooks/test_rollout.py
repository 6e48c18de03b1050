"""rollout.yml end to end against fake API servers: no cluster needed.

- Each missing or invalid input (owner, thresholds, rollback target, malformed version, a
  waiver that is not a mapping, an unknown kaiops_* variable, extra vars that are a plain
  string) refuses with the validation message before any request: the fake API server logs
  every request it gets, and it gets none; the output has no connection error.
- Missing regression evidence refuses too; the request being otherwise well-formed, the
  read-only cluster checks still run so the one refusal names every reason (here: no KAI).
- With a waiver and KAI installed, under --check, every gate passes, KAI's state is snapshotted
  (Secret data and secret-looking Helm values left out), and the run still fails: nothing was
  upgraded, probed or rolled back, and each change step is reported as not run.
Every run leaves report.json, report.md and junit.xml in a bundle that sha256sum -c verifies.
"""

import json
import os
import stat
import sys
import xml.etree.ElementTree as ET

import fakeapi
import playbook_run
import pytest
import yaml
from conftest import PATCHED, PRE, THRESHOLDS

from playbooks.test_inventory import events, sha256sum_ok

BIN = os.path.dirname(sys.executable)
REQUEST = {
    "kaiops_change_owner": "sre-oncall@example.com",
    "kaiops_kai_version": PATCHED,
    "kaiops_rollout_rollback_target": PRE,
    "kaiops_thresholds": THRESHOLDS,
    "kaiops_rollout_regression_waiver": {"reason": "unit test", "approved_by": "pytest"},
}
HISTORY = json.dumps(
    [
        {"revision": 1, "chart": "kai-scheduler-v0.16.12", "status": "superseded"},
        {
            "revision": 2,
            "chart": "kai-scheduler-v0.16.13",
            "app_version": "v0.16.13",
            "status": "deployed",
        },
    ]
)
VALUES = json.dumps({"global": {"gpuSharing": True}, "registry": {"password": "hunter2"}})
FAKE_HELM = (
    "#!/bin/sh\n"
    'case "$*" in\n'
    "  *history*) echo '%s' ;;\n"
    "  *\"get values\"*) echo '%s' ;;\n"
    '  *) echo "fake helm: unsupported: $*" >&2; exit 1 ;;\n'
    "esac\n" % (HISTORY, VALUES)
)


def rollout(tmp_path, hosts, *args, path_first=None):
    inventory = tmp_path / "hosts.yml"
    playbook_run.write_inventory(inventory, hosts)
    return playbook_run.run_playbook(
        tmp_path, "rollout.yml", inventory, *args, path_first=path_first
    )


def report_of(bundle):
    with open(os.path.join(bundle, "report.json")) as handle:
        return json.load(handle)


def junit_failures(bundle):
    root = ET.parse(os.path.join(bundle, "junit.xml")).getroot()
    return sorted(c.get("name") for c in root.iter("testcase") if c.find("failure") is not None)


@pytest.mark.parametrize(
    ("override", "extra", "message", "gates"),
    [
        ({"kaiops_change_owner": ""}, [], "change owner is missing", ["change_owner"]),
        (
            {"kaiops_thresholds": {}},
            [],
            "acceptance thresholds are missing (fix: set kaiops_thresholds",
            ["thresholds"],
        ),
        (
            {"kaiops_thresholds": dict(THRESHOLDS, completion_rate_min=95)},
            [],
            "threshold completion_rate_min (probe completion rate (failures count)): 95 must be "
            "a fraction in (0, 1]",
            ["threshold:completion_rate_min"],
        ),
        (
            {"kaiops_rollout_rollback_target": ""},
            [],
            "rollback target is missing",
            ["rollback_target"],
        ),
        (
            {"kaiops_kai_version": "0.16.14"},
            [],
            "KAI version '0.16.14' is not an exact release tag vMAJOR.MINOR.PATCH",
            ["kai_version", "regression_evidence"],
        ),
        (
            {},
            ["-e", "kaiops_rollout_regression_waiver='yes please'"],
            "regression waiver must be a mapping {reason, approved_by}, got a string "
            "('yes please')",
            ["regression_evidence"],
        ),
        (
            {"kaiops_rollout_regression_waiver": {"reason": "unit test"}},
            [],
            "regression waiver has no approved_by",
            ["regression_evidence"],
        ),
        (
            {"kaiops_rollout_rehearsal_waiver": "yes please"},
            [],
            "rehearsal waiver must be a mapping {reason, approved_by}, got a string ('yes please')",
            ["rehearsal_waiver"],
        ),
        (
            {"kaiops_rollout_rehearsal_waiver": {"reason": "rolled back in staging"}},
            [],
            "rehearsal waiver has no approved_by",
            ["rehearsal_waiver"],
        ),
        (
            {},
            ["-e", "kaiops_rollout_owner=bob"],
            "unknown variable kaiops_rollout_owner (did you mean kaiops_change_owner?)",
            ["variables"],
        ),
        (
            {},
            ["-e", '"just a string"'],
            "extra vars",
            ["variables"],
        ),
        (
            {},
            ["-e", "kaiops_thresholds=fast"],
            "kaiops_thresholds must be a mapping of threshold names to numbers, got a string "
            "('fast')",
            ["thresholds"],
        ),
        (
            {"kaiops_thresholds": dict(THRESHOLDS, bind_latency_p50_s=[1, 2])},
            [],
            "threshold bind_latency_p50_s (submission-to-bound latency, p50): must be a number "
            "of seconds, got a list",
            ["threshold:bind_latency_p50_s"],
        ),
    ],
    ids=[
        "owner",
        "thresholds",
        "threshold-range",
        "rollback-target",
        "malformed-version",
        "waiver-string",
        "waiver-no-approver",
        "rehearsal-waiver-string",
        "rehearsal-waiver-no-approver",
        "unknown-variable",
        "extra-vars-string",
        "thresholds-string",
        "threshold-list",
    ],
)
def test_rollout_bad_input_refuses_before_any_request(
    tmp_path, fake_api, override, extra, message, gates
):
    api = fake_api("kai-sharing")
    host = dict(REQUEST, kaiops_kubeconfig=api.kubeconfig(tmp_path / "kubeconfig"), **override)
    done, bundle = rollout(tmp_path, {"c1": host}, *extra)
    out = done.stdout + done.stderr
    assert done.returncode == 2, out
    assert "Rollout refused for c1: " in out and message in out
    assert api.requests == []  # no connection reached the API server
    assert "Failed to reach" not in out and "Connection refused" not in out
    report = report_of(bundle)
    assert report["decision"] == "refused"
    steps = {s["step"]: s for s in report["clusters"]["c1"]["steps"]}
    assert steps["inventory"] == {
        "step": "inventory",
        "status": "not_run",
        "reason": "change request refused before any cluster call",
    }
    assert steps["upgrade"]["status"] == "not_run"
    assert junit_failures(bundle) == gates
    assert os.path.isfile(os.path.join(bundle, "report.md"))
    assert sha256sum_ok(bundle)


def test_rollout_without_evidence_or_kai_refuses_with_both_reasons(tmp_path, fake_api):
    api = fake_api("no-kai")
    host = dict(REQUEST, kaiops_kubeconfig=api.kubeconfig(tmp_path / "kubeconfig"))
    host.pop("kaiops_rollout_regression_waiver")
    done, bundle = rollout(tmp_path, {"c1": host}, "--check")
    out = done.stdout + done.stderr
    assert done.returncode == 2, out
    assert "no passing reproduce report for %s" % PATCHED in out
    assert "no KAI release on cluster c1" in out
    assert junit_failures(bundle) == ["kai_release", "regression_evidence"]
    assert not [e for e in events(bundle) if e["changed"]]
    # The change request (and the evidence store) was judged before the first cluster read.
    actions = [e["action"] for e in events(bundle) if e["event"] in ("ok", "failed")]
    assert actions.index("kaiops.runbooks.kai_rollout_request") < actions.index(
        "kaiops.runbooks.kai_inventory_info"
    )
    assert os.path.isfile(os.path.join(bundle, "inventory.md"))
    assert sha256sum_ok(bundle)


def kai_cluster(tmp_path, fake_api, monkeypatch):
    """A fake cluster running KAI (SchedulingShards and Queues served) and a fake helm on a
    folder of its own: (api, that folder), for rollout.yml runs that get past preflight."""
    monkeypatch.setitem(
        fakeapi.KINDS, ("kai.scheduler/v1", "SchedulingShard"), ("schedulingshards", False)
    )
    monkeypatch.setitem(fakeapi.KINDS, ("scheduling.run.ai/v2", "Queue"), ("queues", False))
    api = fake_api("kai-sharing")
    api.served |= {"kai.scheduler/v1", "scheduling.run.ai/v2"}
    helm_dir = tmp_path / "helm-bin"
    helm_dir.mkdir()
    (helm_dir / "helm").write_text(FAKE_HELM)
    (helm_dir / "helm").chmod(stat.S_IRWXU)
    return api, helm_dir


def test_rollout_check_with_waiver_and_kai_snapshots_then_stops_before_upgrade(
    tmp_path, fake_api, monkeypatch
):
    api, helm_dir = kai_cluster(tmp_path, fake_api, monkeypatch)
    host = dict(
        REQUEST,
        kaiops_kubeconfig=api.kubeconfig(tmp_path / "kubeconfig"),
        kaiops_rollout_rehearsal_waiver={"reason": "unit test", "approved_by": "cab"},
        kaiops_rollout_rehearsal_group="eu",
    )
    # c2 declares the same rehearsal group and is not in this run (--limit): a peer all the same
    hosts = {"c1": host, "c2": {"kaiops_rollout_rehearsal_group": "eu"}}
    done, bundle = rollout(tmp_path, hosts, "--check", "--limit", "c1", path_first=str(helm_dir))
    out = done.stdout + done.stderr
    assert done.returncode == 2, out
    assert "Rollout stopped after preflight on c1: every preflight gate passed" in out
    report = report_of(bundle)
    cluster = report["clusters"]["c1"]
    assert report["decision"] == "proceed" and cluster["decision"] == "proceed"
    assert cluster["current_version"] == PRE
    assert report["request"]["regression_waiver"] == {
        "reason": "unit test",
        "approved_by": "pytest",
    }
    assert report["kai_version"] == PATCHED
    assert report["request"]["rehearsal_waiver"] == {"reason": "unit test", "approved_by": "cab"}
    assert cluster["change"]["rehearsal_pair"] == {
        "cluster": "c1",
        "from": PATCHED,
        "to": PRE,
        "group": "eu",
        "peers": ["c2"],
        "implementation": "KAI",
    }
    markdown = open(os.path.join(bundle, "report.md")).read()
    assert "| Regression waiver | unit test (approved by pytest) |" in markdown
    assert "| Rehearsal waiver | unit test (approved by cab) |" in markdown
    # nothing changed: no approval to judge, the rehearsal line names the pair it looked for
    assert "Rollback rehearsal for c1: none on record for c1 %s -> %s." % (PATCHED, PRE) in markdown
    steps = {s["step"]: s for s in cluster["steps"]}
    assert steps["snapshot"]["status"] == "done"
    for step in ("baseline", "upgrade", "verify", "decision", "rollback"):
        assert steps[step]["status"] == "not_run"
        assert steps[step]["reason"].startswith("check mode (--check): nothing is upgraded")
    assert not [e for e in events(bundle) if e["changed"]]
    assert junit_failures(bundle) == []
    snapshot = os.path.join(bundle, "snapshots", "before-change-c1")
    index = json.load(open(os.path.join(snapshot, "index.json")))
    counts = {s["selection"]["kind"]: s["count"] for s in index["selections"]}
    assert counts["Deployment"] == 4 and counts["Config"] == 1 and counts["Secret"] == 2
    assert counts["ConfigMap"] == 1
    values = open(os.path.join(bundle, "snapshots", "before-change-c1-helm", "values.json")).read()
    assert "hunter2" not in values and "<redacted len~" in values
    assert "snapshots/before-change-c1/index.json" in cluster["evidence"]
    for name in os.listdir(os.path.join(snapshot, "05-secret", "kai-scheduler")):
        assert "data" not in json.load(
            open(os.path.join(snapshot, "05-secret", "kai-scheduler", name))
        )
    assert sha256sum_ok(bundle)


def test_rollout_check_over_three_clusters_reports_the_fleet_in_wave_order(
    tmp_path, fake_api, monkeypatch
):
    """Three clusters in the play's order c3, c1, c2 and waves [1, 2]: c3 is the canary (wave 1),
    c1 and c2 wave 2. Under --check nothing changes, so the fleet view lists the three in wave
    order, none approved (no cluster that did not run is reported as passed), the fleet's
    decision says which, and the run fails."""
    api, helm_dir = kai_cluster(tmp_path, fake_api, monkeypatch)
    host = dict(
        REQUEST,
        kaiops_kubeconfig=api.kubeconfig(tmp_path / "kubeconfig"),
        kaiops_rollout_rehearsal_waiver={"reason": "unit test", "approved_by": "cab"},
    )
    inventory = tmp_path / "hosts.yml"
    # the play's host order is the inventory's: written unsorted
    hosts = {name: dict(host) for name in ("c3", "c1", "c2")}
    inventory.write_text(yaml.safe_dump({"all": {"hosts": hosts}}, sort_keys=False))
    done, bundle = playbook_run.run_playbook(
        tmp_path,
        "rollout.yml",
        inventory,
        "--check",
        "-e",
        '{"kaiops_rollout_waves": [1, 2], "kaiops_rollout_failure_budget": 1}',
        path_first=str(helm_dir),
    )
    out = done.stdout + done.stderr
    assert done.returncode == 2, out
    report = report_of(bundle)
    fleet = report["fleet"]
    assert [(r["wave"], r["cluster"]) for r in fleet["rows"]] == [(1, "c3"), (2, "c1"), (2, "c2")]
    assert [r["decision"] for r in fleet["rows"]] == ["proceed"] * 3
    assert fleet["decision"] == "not_approved" and report["decision"] == "proceed"
    assert [c["cluster"] for c in fleet["not_approved"]] == ["c3", "c1", "c2"]
    assert [(w["wave"], w["allowed"], w["spent"]) for w in fleet["waves"]] == [
        (1, 0, False),
        (2, 1, False),
    ]
    assert fleet["not_started"] == []
    for name in ("c1", "c2", "c3"):
        assert report["clusters"][name]["change"]["wave"] == (1 if name == "c3" else 2)
    markdown = open(os.path.join(bundle, "report.md")).read()
    fleet_md = markdown.split("## Fleet", 1)[1].split("\n## ", 1)[0]
    assert (
        "Fleet decision: **NOT_APPROVED** - not approved: c3 PROCEED, c1 PROCEED, c2 PROCEED"
        in (fleet_md)
    )
    lines = [line for line in fleet_md.splitlines() if line.startswith("| ") and "**" in line]
    assert [line.split(" | ")[:2] for line in lines] == [
        ["| 1", "c3"],
        ["| 2", "c1"],
        ["| 2", "c2"],
    ]
    assert "APPROVED**" not in "".join(lines).replace("NOT_APPROVED", "")
    assert "wave 1 (canary) 0/0; wave 2 0/1" in fleet_md and "Not started: none." in fleet_md
    # the per-cluster sections stay, after the fleet's (a bare "c3" can occur in the run's
    # id or the collection's commit above both, as it did: the headings are compared)
    assert "## Cluster" in markdown and markdown.index("## Fleet") < markdown.index("## Cluster")
    assert sha256sum_ok(bundle)


def test_a_named_canary_group_goes_first_as_wave_one_and_a_bad_one_reads_no_cluster(
    tmp_path, fake_api, monkeypatch
):
    """The inventory lists c3, c1, c2; group canary holds c2. With -e kaiops_rollout_canary=canary
    and waves [2] after it, c2 is wave 1 (the canary, allowed no failure) and c3, c1 wave 2 -
    in the play Ansible ran and in the fleet report alike. A group with no cluster is refused
    as the request gate canary_group, naming the fix, before any cluster is read."""
    api, helm_dir = kai_cluster(tmp_path, fake_api, monkeypatch)
    host = dict(
        REQUEST,
        kaiops_kubeconfig=api.kubeconfig(tmp_path / "kubeconfig"),
        kaiops_rollout_rehearsal_waiver={"reason": "unit test", "approved_by": "cab"},
    )
    hosts = {name: dict(host) for name in ("c3", "c1", "c2")}
    groups = {"canary": {"hosts": {"c2": None}}, "empty": {"hosts": {}}}
    inventory = tmp_path / "hosts.yml"
    inventory.write_text(
        yaml.safe_dump({"all": {"hosts": hosts, "children": groups}}, sort_keys=False)
    )
    request = '{"kaiops_rollout_waves": [2], "kaiops_rollout_canary": "canary"}'
    done, bundle = playbook_run.run_playbook(
        tmp_path, "rollout.yml", inventory, "--check", "-e", request, path_first=str(helm_dir)
    )
    out = done.stdout + done.stderr
    assert done.returncode == 2 and "Rollout refused" not in out, out
    fleet = report_of(bundle)["fleet"]
    assert [(r["wave"], r["cluster"]) for r in fleet["rows"]] == [(1, "c2"), (2, "c3"), (2, "c1")]
    assert [(w["wave"], w["canary"], w["allowed"]) for w in fleet["waves"]] == [
        (1, True, 0),
        (2, False, 0),
    ]
    change = report_of(bundle)["clusters"]["c2"]["change"]
    assert change["canary"] == {"group": "canary", "clusters": ["c2"]}
    assert change["waves"] == [1, 2]
    # the first play that changes: Ansible put c2 first, alone (read from that play's header on:
    # the plays before it run the clusters side by side, in whatever order they finish)
    changing = out[out.index("PLAY [Rollout - change each cluster") :]
    assert changing.index("[c2]") < changing.index("[c3]")

    refused_at = len(api.requests)
    request = '{"kaiops_rollout_canary": "empty"}'
    done, bundle = playbook_run.run_playbook(
        tmp_path, "rollout.yml", inventory, "--check", "-e", request, path_first=str(helm_dir)
    )
    out = done.stdout + done.stderr
    assert done.returncode == 2, out
    assert "the inventory has no cluster in group 'empty'" in out, out
    assert "ansible-inventory --graph" in out
    assert api.requests[refused_at:] == []  # no connection reached the API server
    report = report_of(bundle)
    assert report["decision"] == "refused"
    gates = report["clusters"]["c1"]["gates"]
    assert [g["gate"] for g in gates if not g["passed"]] == ["canary_group"]


def test_rollout_check_accepts_a_soak_and_a_progress_deadline_and_records_them(
    tmp_path, fake_api, monkeypatch
):
    """Both asked for: the request passes, and under --check the change does not start, so no
    soak runs and no deadline is judged; the record keeps what the request asked for."""
    api, helm_dir = kai_cluster(tmp_path, fake_api, monkeypatch)
    host = dict(REQUEST, kaiops_kubeconfig=api.kubeconfig(tmp_path / "kubeconfig"))
    done, bundle = rollout(
        tmp_path,
        {"c1": host},
        "--check",
        "-e",
        '{"kaiops_rollout_soak_s": 600, "kaiops_rollout_progress_deadline_s": "1800"}',
        path_first=str(helm_dir),
    )
    out = done.stdout + done.stderr
    assert "Rollout refused" not in out, out
    cluster = report_of(bundle)["clusters"]["c1"]
    assert cluster["decision"] == "proceed", out
    assert (cluster["change"]["soak_s"], cluster["change"]["progress_deadline_s"]) == (600, 1800)
    gates = {g["gate"] for g in cluster["gates"]}
    assert "progress_deadline" not in gates and not [
        g for g in cluster["gates"] if g["stage"] == "soak"
    ]
    assert "Soak after the verification" in out  # the task is in the play, skipped


@pytest.mark.parametrize(
    ("extra", "field", "message"),
    [
        (
            "kaiops_rollout_soak_s=-1",
            "kaiops_rollout_soak_s",
            "must be between 0 and 86400, got -1",
        ),
        (
            "kaiops_rollout_soak_s=abc",
            "kaiops_rollout_soak_s",
            "must be a number, got a string ('abc')",
        ),
        (
            '{"kaiops_rollout_progress_deadline_s": 1e9}',
            "kaiops_rollout_progress_deadline_s",
            "must be between 0 and 86400, got 1000000000.0",
        ),
    ],
    ids=["soak-negative", "soak-text", "deadline-huge"],
)
def test_rollout_refuses_a_soak_or_deadline_that_is_not_seconds_before_any_cluster(
    tmp_path, fake_api, extra, field, message
):
    api = fake_api("kai-sharing")
    host = dict(REQUEST, kaiops_kubeconfig=api.kubeconfig(tmp_path / "kubeconfig"))
    done, bundle = rollout(tmp_path, {"c1": host}, "-e", extra)
    out = done.stdout + done.stderr
    assert done.returncode == 2, out
    assert "Rollout refused for c1: " in out and "%s: %s" % (field, message) in out, out
    assert "give %s as a whole number of seconds, 0 to 86400" % field in out
    assert api.requests == []  # no connection reached the API server
    assert report_of(bundle)["decision"] == "refused"
