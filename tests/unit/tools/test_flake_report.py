"""tools/flake_report.py: a test that passed and failed across runs is flaky, one that failed
every run is broken, and no test read at all is a failure, never a clean report."""

import json
import os
import sys

from conftest import REPO

sys.path.insert(0, os.path.join(REPO, "tools"))
import flake_report  # noqa: E402


def _go_stream(path, events):
    path.write_text("".join(json.dumps(e) + "\n" for e in events))
    return path


def _junit(path, cases):
    body = "".join(
        '<testcase classname="t" name="%s">%s</testcase>' % (name, "<failure/>" if failed else "")
        for name, failed in cases
    )
    path.write_text("<testsuites><testsuite>%s</testsuite></testsuites>" % body)
    return path


def test_flake_report_names_a_go_test_that_passed_and_failed(tmp_path, capsys):
    run = [{"Action": "pass", "Package": "p", "Test": "TestA"}] * 9
    run += [{"Action": "fail", "Package": "p", "Test": "TestA"}]
    run += [{"Action": "pass", "Package": "p", "Test": "TestB"}] * 10
    run += [{"Action": "output", "Package": "p", "Output": "ok\n"}]
    stream = _go_stream(tmp_path / "go.json", run)
    assert flake_report.main([str(stream)]) == 1
    out = capsys.readouterr().out
    assert "flaky (passed and failed): go p TestA: 1 of 10 runs failed" in out
    assert "1 of 2 tests flaky (50.00 %); 1 of 20 runs failed" in out


def test_flake_report_counts_junit_passes_and_a_test_failing_every_run(tmp_path, capsys):
    first = _junit(tmp_path / "unit-1.xml", [("a", False), ("b", True)])
    second = _junit(tmp_path / "unit-2.xml", [("a", False), ("b", True)])
    assert flake_report.main([str(first), str(second)]) == 1
    out = capsys.readouterr().out
    assert "failed every run: pytest t b: 2 of 2 runs failed" in out
    assert "0 of 2 tests flaky" in out


def test_flake_report_passes_only_on_tests_that_always_passed(tmp_path, capsys):
    clean = _junit(tmp_path / "unit-1.xml", [("a", False), ("b", False)])
    assert flake_report.main([str(clean)]) == 0
    assert "0 of 2 tests flaky (0.00 %); 0 of 2 runs failed" in capsys.readouterr().out


def test_flake_report_fails_when_nothing_was_read(tmp_path, capsys):
    empty = _go_stream(tmp_path / "go.json", [{"Action": "output", "Output": "no tests\n"}])
    assert flake_report.main([str(empty)]) == 1
    assert "no data is not a pass" in capsys.readouterr().out
