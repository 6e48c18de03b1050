"""tools/test_summary.py, make test's summary: whether the run stayed within its goal, and why a
Molecule scenario failed, in one line read from its log."""

import io
import json
import os
import sys

from conftest import REPO

sys.path.insert(0, os.path.join(REPO, "tools"))
import test_summary  # noqa: E402


def _stage(results, name, seconds, rc=0, began=None):
    folder = results / name
    folder.mkdir(parents=True)
    record = {"name": name, "rc": rc, "seconds": seconds, "command": [], "counts": None}
    if began is not None:
        record.update(began=began, ended=began + seconds)
    (folder / "result.json").write_text(json.dumps(record))


def test_summary_says_whether_the_run_stayed_within_its_goal(tmp_path):
    _stage(tmp_path, "setup", 300)
    _stage(tmp_path, "unit", 3400)
    over, within = io.StringIO(), io.StringIO()
    assert test_summary.report(tmp_path, ["setup", "unit"], out=over, goal_s=3600) == 0
    assert "time: 1h01m, OVER the goal of 1h00m" in over.getvalue()
    assert test_summary.report(tmp_path, ["setup"], out=within, goal_s=3600) == 0
    assert "time: 5m00s, within the goal of 1h00m" in within.getvalue()


def test_stages_run_beside_others_count_once_in_the_runs_time(tmp_path):
    # setup, then unit (50 min) beside the lab (55 min): the run took 1 h 00 min, not 1 h 50
    _stage(tmp_path, "setup", 300, began=1000)
    _stage(tmp_path, "unit", 3000, began=1300)
    _stage(tmp_path, "lab", 3300, began=1300)
    out = io.StringIO()
    assert test_summary.report(tmp_path, ["setup", "unit", "lab"], out=out, goal_s=3600) == 0
    assert "time: 1h00m, within the goal of 1h00m" in out.getvalue()


# A Molecule log as the molecule stage keeps it, colours included: a command task that ran a
# playbook which failed inside (its own fatal line in the command's stdout).
_INNER = {"changed": False, "msg": "gate auth_errors failed: 3 lines"}


_OUTER = {
    "changed": True,
    "msg": "non-zero return code",
    "rc": 2,
    "stdout_lines": ["TASK [x] ***", "fatal: [lab]: FAILED! => " + json.dumps(_INNER)],
}


_MOLECULE_LOG = [
    "\x1b[1mPLAY [Converge] ***\x1b[0m",
    "TASK [Put the pre-patch build on the lab] *****",
    "changed: [lab]",
    "TASK [Roll back with rollback.yml] *****",
    "\x1b[0;31mfatal: [lab]: FAILED! => " + json.dumps(_OUTER) + "\x1b[0m",
    "PLAY RECAP ***",
]


def test_why_names_the_failed_task_its_exit_and_the_failure_inside_it():
    why = test_summary.why_failed(_MOLECULE_LOG)
    assert why == (
        "TASK [Roll back with rollback.yml]; non-zero return code; rc 2; "
        "inside: TASK [x]; gate auth_errors failed: 3 lines"
    )


def test_why_reads_a_result_printed_over_several_lines():
    result = {"assertion": "_back.method == 'upgrade'", "evaluated_to": False, "msg": "{x}"}
    pretty = json.dumps(result, indent=4).splitlines()
    log = ["TASK [Rehearsed] ***", "fatal: [lab]: FAILED! => " + pretty[0], *pretty[1:], "", "PLAY"]
    why = test_summary.why_failed(log)
    assert why == "TASK [Rehearsed]; assertion false: _back.method == 'upgrade'"


def test_why_names_a_false_assertion_and_falls_back_to_the_log_tail():
    result = {"assertion": "_back.decision == 'ok'", "evaluated_to": False, "msg": "[{...}]"}
    log = ["TASK [Forward and back] ***", "fatal: [lab]: FAILED! => " + json.dumps(result)]
    why = test_summary.why_failed(log)
    assert why == "TASK [Forward and back]; assertion false: _back.decision == 'ok'"
    tail = test_summary.why_failed(["", "CRITICAL Ansible return code was 4", "  "])
    assert tail == "CRITICAL Ansible return code was 4"
    assert len(test_summary.why_failed(["x" * 5000])) == test_summary.WHY_LIMIT


def test_summary_shows_why_a_scenario_failed(tmp_path):
    folder = tmp_path / "molecule"
    folder.mkdir()
    rows = "inventory\tpassed\t24\t\ndrill_rollback\tfailed\t205\tTASK [Roll back]; rc 2\n"
    (folder / "molecule.tsv").write_text(rows)
    counts = test_summary.stage_counts(folder)
    record = {"name": "molecule", "rc": 2, "seconds": 229, "command": []}
    record["counts"] = {"passed": counts.passed, "failed": counts.failed, "skipped": 0}
    record["counts"]["failures"] = counts.failures
    (folder / "result.json").write_text(json.dumps(record))
    out = io.StringIO()
    assert test_summary.report(tmp_path, ["molecule"], out=out) == 1
    assert "failed: drill_rollback: TASK [Roll back]; rc 2" in out.getvalue()
    assert (counts.passed, counts.failed) == (1, 1)


def test_why_names_the_loop_item_whose_assertion_failed_and_its_message():
    # ansible-core 2.19 prints a failed item as "failed: [h] (item=x) => {", over several lines
    result = {
        "ansible_loop_var": "item",
        "assertion": "verify_catches[item.fault] in _failed",
        "evaluated_to": False,
        "item": {"fault": "burst-overpack"},
        "msg": "burst-overpack: failed []",
    }
    pretty = json.dumps(result, indent=4).splitlines()
    log = [
        "TASK [Each fault was caught] ***",
        "ok: [lab] => (item=gang-broken) => {",
        '    "msg": "All assertions passed"',
        "}",
        "failed: [lab] (item=burst-overpack) => " + pretty[0],
        *pretty[1:],
        "PLAY RECAP ***",
    ]
    assert test_summary.why_failed(log) == (
        "TASK [Each fault was caught] (item burst-overpack); "
        "assertion false: verify_catches[item.fault] in _failed; burst-overpack: failed []"
    )
