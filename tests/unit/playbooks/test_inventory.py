"""playbooks/inventory.yml end to end against fake API servers: no cluster needed.

Covers the acceptance cases that do not need the lab: an exposed cluster, a cluster without
KAI, an unreachable one and one that forbids reading KAI, each reported, with exit status 2;
a --check run that changes nothing; bad inputs that fail before any request.
"""

import json
import os
import socket
import subprocess
import sys

import playbook_run
import pytest

BIN = os.path.dirname(sys.executable)


def closed_port():
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()
    return port


@pytest.fixture
def clusters(fake_api, tmp_path):
    """Four fake clusters and an inventory of them; returns (inventory path, apis)."""
    apis = {
        "exposed": fake_api("kai-sharing"),
        "bare": fake_api("no-kai"),
        "denied": fake_api("kai-sharing"),
    }
    apis["denied"].forbidden = ["/apis/apps/v1/namespaces/kai-scheduler/deployments"]
    hosts = {}
    for name, api in apis.items():
        hosts[name] = {"kaiops_kubeconfig": api.kubeconfig(tmp_path / ("%s.kubeconfig" % name))}
    dead = tmp_path / "dead.kubeconfig"
    apis["exposed"].kubeconfig(dead)
    dead.write_text(
        dead.read_text().replace(apis["exposed"].url, "http://127.0.0.1:%d" % closed_port())
    )
    hosts["dead"] = {"kaiops_kubeconfig": str(dead)}
    inventory = tmp_path / "hosts.yml"
    write_inventory(inventory, hosts)
    return inventory, apis


def write_inventory(path, hosts):
    playbook_run.write_inventory(path, hosts, {"kaiops_thresholds": {"component_restarts_max": 5}})


def play(tmp_path, inventory, *args):
    return playbook_run.run_playbook(
        tmp_path, "playbooks/inventory.yml", inventory, "-e", "kai_inventory_use_helm=false", *args
    )


def sha256sum_ok(bundle):
    done = subprocess.run(
        ["sha256sum", "-c", "--strict", "manifest.sha256"],
        cwd=bundle,
        capture_output=True,
        text=True,
        check=False,
    )
    return done.returncode == 0


def events(bundle):
    with open(os.path.join(bundle, "tasks.jsonl")) as handle:
        return [json.loads(line) for line in handle]


def test_inventory_reports_each_cluster_and_exits_2(tmp_path, clusters):
    inventory, _apis = clusters
    done, bundle = play(tmp_path, inventory)
    out = done.stdout + done.stderr
    assert done.returncode == 2, out
    assert "Failed to inventory dead: unreachable - Failed to reach the API server" in out
    assert "Failed to inventory denied: forbidden - Failed to read Deployments" in out
    report = json.load(open(os.path.join(bundle, "inventory.json")))
    got = {
        name: (c["status"], (c.get("exposure") or {}).get("verdict"))
        for name, c in report["clusters"].items()
    }
    assert got == {
        "exposed": ("ok", "exposed"),
        "bare": ("not_installed", "not_installed"),
        "dead": ("unreachable", None),
        "denied": ("forbidden", None),
    }
    assert report["clusters"]["exposed"]["kai"]["version"] == "v0.16.13"
    assert "Failed to reach the API server" in report["clusters"]["dead"]["error"]
    markdown = open(os.path.join(bundle, "inventory.md")).read()
    assert "| exposed | ok | v1.35.4 | v0.16.13 | True | 1 | 1 | 1 | EXPOSED" in markdown
    assert open(os.path.join(bundle, "status")).read() == "complete\n"
    run = json.load(open(os.path.join(bundle, "run.json")))
    assert run["outcome"] == "failed" and run["hosts_failed"] == ["dead", "denied"]
    assert sha256sum_ok(bundle)
    rescued = [
        e
        for e in events(bundle)
        if e["event"] == "failed" and e["action"] == "kaiops.runbooks.kai_inventory_info"
    ]
    assert sorted(e["host"] for e in rescued) == ["dead", "denied"]


def test_inventory_check_mode_changes_nothing(tmp_path, clusters):
    inventory, apis = clusters
    done, bundle = play(tmp_path, inventory, "--check", "--limit", "exposed,bare")
    assert done.returncode == 0, done.stdout + done.stderr
    recorded = events(bundle)
    assert recorded and not [e for e in recorded if e["changed"]]
    run = json.load(open(os.path.join(bundle, "run.json")))
    assert run["check_mode"] is True and run["outcome"] == "succeeded"
    assert os.path.isfile(os.path.join(bundle, "inventory.json"))
    assert apis["exposed"].requests  # it did read under --check
    assert sha256sum_ok(bundle)


@pytest.mark.parametrize(
    ("hostvars", "extra", "message"),
    [
        (
            {"kaiops_kubeconfig": "/nonexistent/kubeconfig"},
            [],
            "kaiops_kubeconfig: /nonexistent/kubeconfig does not exist on the controller",
        ),
        (
            {"kaiops_context": "prod-typo"},
            [],
            "kai_inventory_context 'prod-typo' is not a context in",
        ),
        (
            {},
            ["-e", "kai_inventory_affected_range=0.16.9"],
            "kai_inventory_affected_range '0.16.9' is malformed",
        ),
        (
            {"kaiops_thresholds": {"component_restarts_max": "lots"}},
            [],
            "kaiops_thresholds: component_restarts_max must be a number, got a string ('lots')",
        ),
        (
            {"kaiops_kubeconfig": "", "kaiops_context": "prod"},
            [],
            "no kubeconfig found at /nonexistent/kubeconfig (KUBECONFIG or ~/.kube/config) for "
            "kai_inventory_context prod: set kaiops_kubeconfig",
        ),
        (
            {"kaiops_kai_namespace": "KAI_Scheduler"},
            [],
            "kaiops_kai_namespace: 'KAI_Scheduler' is not a namespace name",
        ),
    ],
)
def test_inventory_bad_input_fails_before_any_request(tmp_path, fake_api, hostvars, extra, message):
    api = fake_api("kai-sharing")
    base = {"kaiops_kubeconfig": api.kubeconfig(tmp_path / "kubeconfig")}
    inventory = tmp_path / "hosts.yml"
    write_inventory(inventory, {"c1": dict(base, **hostvars)})
    done, bundle = play(tmp_path, inventory, *extra)
    out = done.stdout + done.stderr
    assert done.returncode == 2, out
    assert message in out
    assert api.requests == []
    assert sha256sum_ok(bundle)
