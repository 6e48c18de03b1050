"""playbooks/diagnose.yml end to end against a fake API server: no cluster needed.

The planted mixed set (tests/unit/fixtures/diagnose) read under --check: nothing changed, every
pod given its planted cause in report.json (confusion table printed, 100 % expected), report.md
and junit.xml written; a typo'd kaiops_* name refused before any request reaches the cluster.
"""

import datetime
import json
import os
import re

import playbook_run
from plugins.module_utils.scan.test_pending import BASE, LOCAL, NOW, confusion, print_confusion

from playbooks.test_inventory import events, sha256sum_ok

STAMP = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$")


def shifted(value, delta):
    """The fixture with every timestamp moved by ``delta``: the playbook reads the real clock,
    and the ages (and what counts as a recent event) must stay as planted."""
    if isinstance(value, dict):
        return {k: shifted(v, delta) for k, v in value.items()}
    if isinstance(value, list):
        return [shifted(v, delta) for v in value]
    if isinstance(value, str) and STAMP.match(value):
        when = datetime.datetime.strptime(value, "%Y-%m-%dT%H:%M:%SZ") + delta
        return when.strftime("%Y-%m-%dT%H:%M:%SZ")
    return value


def planted(fake_api):
    objects = list(BASE["cluster"]) + list(BASE["components"])
    for case in LOCAL:
        objects += case["objects"]
    now = datetime.datetime.now(datetime.timezone.utc).replace(microsecond=0)
    objects = shifted(objects, now - NOW)
    # served: the objects' own apiVersions (the fixture would replace the core ones)
    return fake_api(objects=objects, logs=dict(BASE["logs"]))


def play(tmp_path, api, *args, hostvars=None):
    inventory = tmp_path / "hosts.yml"
    hosts = {
        "lab": dict(
            {"kaiops_kubeconfig": api.kubeconfig(tmp_path / "kubeconfig")}, **(hostvars or {})
        )
    }
    playbook_run.write_inventory(inventory, hosts)
    return playbook_run.run_playbook(tmp_path, "playbooks/diagnose.yml", inventory, *args)


def test_diagnose_reads_under_check_and_reports_every_planted_cause(tmp_path, fake_api, capsys):
    api = planted(fake_api)
    done, bundle = play(tmp_path, api, "--check")
    out = done.stdout + done.stderr
    assert done.returncode == 0, out
    recorded = events(bundle)
    assert recorded and not [e for e in recorded if e["changed"]]
    assert api.requests  # it did read under --check
    assert any(r["path"].endswith("/log") for r in api.requests)
    report = json.load(open(os.path.join(bundle, "report.json")))
    assert report["kind"] == "diagnose" and report["decision"] == "diagnosed"
    got = {
        "%s/%s" % (p["pod"]["namespace"], p["pod"]["name"]): p["cause"]
        for p in report["clusters"]["lab"]["pods"]
    }
    expected = {pod: cause for case in LOCAL for pod, cause in case["expected"].items()}
    table, share = confusion(expected, got)
    with capsys.disabled():
        print_confusion(table, share)
    assert share == 1.0, table
    markdown = open(os.path.join(bundle, "report.md")).read()
    row = "| `queue_over_limit`: its queue is over its GPU limit | 2 | 1h00m"
    assert row in markdown and "| case-limit/limited-0 |" in markdown
    assert "recovery.yml step `delete_dataless_configmaps`" in markdown
    junit = open(os.path.join(bundle, "junit.xml")).read()
    assert 'failures="1"' in junit and "case-unknown/quiet-0: unknown" in junit
    run = json.load(open(os.path.join(bundle, "run.json")))
    assert run["check_mode"] is True and run["outcome"] == "succeeded"
    assert open(os.path.join(bundle, "status")).read() == "complete\n"
    assert sha256sum_ok(bundle)


def test_diagnose_refuses_a_typo_before_it_reads_the_cluster(tmp_path, fake_api):
    api = planted(fake_api)
    done, bundle = play(tmp_path, api, hostvars={"kaiops_kai_namespce": "kai-scheduler"})
    out = done.stdout + done.stderr
    assert done.returncode == 2, out
    assert "unknown variable kaiops_kai_namespce (did you mean kaiops_kai_namespace?)" in out
    assert api.requests == []
    report = json.load(open(os.path.join(bundle, "report.json")))
    assert report["kind"] == "diagnose" and report["decision"] == "refused"
    assert report["refused_by"] == "request"
    assert open(os.path.join(bundle, "status")).read() == "refused\n"
    assert sha256sum_ok(bundle)


def test_diagnose_fails_a_cluster_it_cannot_read_and_reports_it(tmp_path, fake_api):
    api = planted(fake_api)
    api.forbidden = ["/api/v1/pods"]
    done, bundle = play(tmp_path, api)
    out = done.stdout + done.stderr
    assert done.returncode == 2, out
    assert "Failed to diagnose lab: forbidden - Failed to list pods" in out
    report = json.load(open(os.path.join(bundle, "report.json")))
    assert report["decision"] == "incomplete" and report["summary"]["failed"] == ["lab"]
    assert 'errors="1"' in open(os.path.join(bundle, "junit.xml")).read()
