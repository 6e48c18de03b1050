"""tools/careless_input.py, the careless-input table re-run: how a run is sorted, from its exit
status, output and bundle; and that the table expands every playbook's cases."""

import json
import os
import sys

import yaml
from conftest import REPO

sys.path.insert(0, os.path.join(REPO, "tools"))
import careless_input as CI  # noqa: E402


def bundle(tmp_path, status="refused", events=(), report=True, text=""):
    folder = tmp_path / "b"
    folder.mkdir(parents=True)
    (folder / "status").write_text(status + "\n")
    (folder / "tasks.jsonl").write_text("".join(json.dumps(e) + "\n" for e in events))
    if report:
        (folder / "report.md").write_text("# refused\n" + text)
    return folder


def test_a_clean_refusal_is_refused(tmp_path):
    skipped = {"action": "kaiops.runbooks.kai_identify", "event": "skipped"}
    assert CI.classify(2, "refused: kaiops_x", bundle(tmp_path, events=[skipped]))[0] == "refused"


def test_a_cluster_read_is_accepted_whatever_the_exit(tmp_path):
    read = {"action": "kaiops.runbooks.kai_inventory_info", "event": "failed"}
    got = CI.classify(2, "", bundle(tmp_path, events=[read]))
    assert got == ("accepted", "read a cluster (kai_inventory_info)")


def test_a_traceback_or_exit_250_is_a_crash(tmp_path):
    assert CI.classify(2, "Traceback (most recent call last):\n", None)[0] == "crashed"
    assert CI.classify(250, "", bundle(tmp_path))[0] == "crashed"


def test_a_templates_output_in_the_bundle_is_a_leak(tmp_path):
    got = CI.classify(2, "", bundle(tmp_path, text="owner: uid=0(root) gid=0(root)"))
    assert got == ("leaked", "report.md")


def test_a_refusal_without_report_or_status_is_no_report(tmp_path):
    assert CI.classify(2, "", bundle(tmp_path, report=False))[0] == "no_report"
    assert CI.classify(2, "", bundle(tmp_path / "x", status="complete"))[0] == "no_report"
    assert CI.classify(2, "stopped: the evidence store", None) == ("stopped", "no bundle")
    assert CI.classify(0, "", None)[0] == "no_report"


def test_the_table_gives_every_playbook_the_shared_cases():
    with open(os.path.join(REPO, "tools", "careless_input.yml")) as handle:
        data = yaml.safe_load(handle)
    runs = CI.expand(data)
    shared = [c["name"] for c in data["cases"] if c["playbooks"] == "all"]
    for book in data["all_playbooks"]:
        assert os.path.exists(os.path.join(REPO, book)), book
        names = {r["name"] for r in runs if r["playbook"] == book}
        assert set(shared) <= names, book
    assert len(runs) >= 94  # at least the 94
    assert CI._fill({"a": ["TEMPLATE"]}, "{{ x }}") == {"a": ["{{ x }}"]}
