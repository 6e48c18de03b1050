"""make test's stages and the one-screen summary that ends it.

test_summary.py stage --results DIR NAME -- COMMAND...
    Runs one stage. Its output goes straight through (a terminal stays a terminal); the
    stage's time, exit status and counts are saved in DIR/<NAME>/result.json. The stage
    finds that folder in $KAIOPS_TEST_STAGE_DIR and may leave its counts there:
      junit.xml     pytest's (the runner adds --junitxml to PYTEST_ADDOPTS)
      go.json       written by `go-text`
      molecule.tsv  written by `make molecule`: "<scenario>\\t<passed|failed>\\t<seconds>"
test_summary.py report --results DIR [--goal-s S] NAME...
    Prints the summary of those stages in that order (one without a result: not run) and
    exits 1 unless every one passed. With --goal-s, says whether the run's time (from the first
    stage's start to the last one's end, setup included: stages run beside others overlap)
    stayed under that goal; a run over it still passes (a slow machine is not a failed test)
    but says so.
test_summary.py go-text
    Reads `go test -json` on stdin and prints what `go test` prints without -json: the
    output of failed tests and one line per package, then the counts (also written to
    $KAIOPS_TEST_STAGE_DIR/go.json when that is set). Go counts are leaf tests: each t.Run
    case once, its parent not; a package that fails outside any test counts as one failure.
test_summary.py counts FILE...
    Prints the counts read from saved junit.xml, go test -json, go.json or molecule.tsv files.
test_summary.py why LOG
    Prints, in one line, why an Ansible run (a Molecule scenario's log) failed: the last failed
    task, its assertion or message, and the failure inside a playbook it ran. `make molecule`
    keeps it as the scenario's fourth column, so the summary - the part of a CI log anyone
    sees - says what broke, not only which scenario.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import re
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from dataclasses import asdict, dataclass, field
from pathlib import Path

STAGE_DIR_ENV = "KAIOPS_TEST_STAGE_DIR"
SHOWN_FAILURES = 5  # failed test names shown per stage; the rest are counted


@dataclass
class Counts:
    passed: int = 0
    failed: int = 0
    skipped: int = 0
    failures: list[str] = field(default_factory=list)

    def add(self, other: Counts) -> Counts:
        return Counts(
            self.passed + other.passed,
            self.failed + other.failed,
            self.skipped + other.skipped,
            self.failures + other.failures,
        )


# --- counts from each tool's own record ---


def junit_counts(path: Path) -> Counts:
    """pytest's junit xml: a testcase per test, with a failure, error or skipped child if so."""
    counts = Counts()
    for case in ET.parse(path).iter("testcase"):
        name = f"{case.get('classname', '')}::{case.get('name', '')}".lstrip(":")
        if case.find("failure") is not None or case.find("error") is not None:
            counts.failed += 1
            counts.failures.append(name)
        elif case.find("skipped") is not None:
            counts.skipped += 1
        else:
            counts.passed += 1
    return counts


def molecule_counts(path: Path) -> Counts:
    counts = Counts()
    for line in path.read_text().splitlines():
        scenario, result, _seconds, why = (line.split("\t") + ["", "", "", ""])[:4]
        if result == "passed":
            counts.passed += 1
        elif scenario:
            counts.failed += 1
            counts.failures.append(f"{scenario}: {why}" if why else scenario)
    return counts


# --- why an Ansible run failed, in one line ---

WHY_LIMIT = 600  # characters: the summary is read on one screen
_TASK = re.compile(r"^TASK \[(?P<name>.*)\] \*+")
_ANSI = re.compile(r"\x1b\[[0-9;]*m")  # molecule forces Ansible's colours even into a pipe
# "fatal: [h]: FAILED! => {", or for one item of a loop "failed: [h] (item=x) => {"
_FATAL = re.compile(
    r"^(?:fatal|failed): \[[^\]]+\](?: \(item=(?P<item>.*)\))?:? (?:FAILED! )?=> (?P<result>\{.*)$"
)
RESULT_LINES = 5000  # a result printed over more lines than this is not read whole


def _result(first: str, rest: list[str]) -> dict:
    """A failed task's result: JSON on its line, or pretty-printed over the lines after it up
    to a closing brace at the line's start (Ansible's default callback under Molecule); what
    never parses is kept as the message."""
    ends = [0] + [j + 1 for j, line in enumerate(rest[:RESULT_LINES]) if line == "}"]
    for end in ends:
        try:
            return json.loads("\n".join([first, *rest[:end]]))
        except ValueError:
            continue
    return {"msg": first}


def _failed_result(lines: list[str]) -> tuple[str, dict] | None:
    """The last failed task in an Ansible log, named with the loop item that failed if any, and
    its result (None when no task failed)."""
    clean = [_ANSI.sub("", line).rstrip() for line in lines]
    task, found = "", None
    for i, line in enumerate(clean):
        if m := _TASK.match(line):
            task = m["name"]
        elif m := _FATAL.match(line):
            result = _result(m["result"], clean[i + 1 :])
            heading = f"TASK [{task}]" + (f" (item {m['item']})" if m["item"] else "")
            found = (heading, result)
    return found


def why_failed(lines: list[str]) -> str:
    found = _failed_result(lines)
    if not found:
        tail = [_ANSI.sub("", line).strip() for line in lines if line.strip()][-2:]
        return " | ".join(tail)[:WHY_LIMIT]
    heading, result = found
    parts = [heading]
    if "assertion" in result:
        parts.append(f"assertion false: {result['assertion']}")
        if "ansible_loop_var" in result and result.get("msg"):
            parts.append(str(result["msg"]))  # a loop's fail_msg says which item and why
    elif result.get("msg"):
        parts.append(str(result["msg"]))
    if "rc" in result:
        parts.append(f"rc {result['rc']}")
    inner = result.get("stdout_lines") or str(result.get("stdout", "")).splitlines()
    if inner:
        parts.append(f"inside: {why_failed(inner)}")
    return "; ".join(parts)[:WHY_LIMIT]


def counts_json(path: Path) -> Counts:
    return Counts(**json.loads(path.read_text()))


class GoTests:
    """Follows one `go test -json` stream: prints go test's plain output and counts leaf tests."""

    def __init__(self, out=sys.stdout) -> None:
        self.out = out
        self.results: dict[tuple[str, str], str] = {}  # (package, test) -> pass/fail/skip
        self.started: set[tuple[str, str]] = set()
        self.lines: dict[tuple[str, str], list[tuple[str, str]]] = {}  # (pkg, root) -> lines
        self.failed_packages: list[str] = []

    def feed(self, raw: str) -> None:
        try:
            event = json.loads(raw)
        except json.JSONDecodeError:
            self.out.write(raw)  # go's own messages, if any reach stdout
            return
        action, pkg, test = event.get("Action"), event.get("Package", ""), event.get("Test")
        text = event.get("Output", "")
        if action == "build-output":
            self.out.write(text)
        elif test is None:
            self._package_event(action, pkg, text, event)
        elif action == "run":
            self.started.add((pkg, test))
        elif action == "output":
            self.lines.setdefault((pkg, test.split("/")[0]), []).append((test, text))
        elif action in ("pass", "fail", "skip"):
            self.results[(pkg, test)] = action
            if "/" not in test:
                self._root_done(pkg, test, action)

    def _root_done(self, pkg: str, root: str, action: str) -> None:
        lines = self.lines.pop((pkg, root), [])
        if action != "fail":
            return
        for test, text in lines:
            if self.results.get((pkg, test)) in ("fail", None) and not text.startswith("=== "):
                self.out.write(text)

    def _package_event(self, action: str, pkg: str, text: str, event: dict) -> None:
        if action == "output" and text != "PASS\n":
            self.out.write(text)
        elif action == "fail":
            # tests that never ended (a panic, a timeout): their output is the story
            for (p, _root), lines in list(self.lines.items()):
                if p == pkg:
                    self.out.writelines(text for _, text in lines)
                    del self.lines[(p, _root)]
            if event.get("FailedBuild"):
                self.failed_packages.append(f"{pkg} [build failed]")
            elif not any(r == "fail" for (p, _), r in self.results.items() if p == pkg):
                self.failed_packages.append(f"{pkg} [failed outside a test]")
            for p, test in self.started:
                if p == pkg and (p, test) not in self.results:
                    self.results[(p, test)] = "fail"  # started, never finished
        self.out.flush()

    def counts(self) -> Counts:
        counts = Counts()
        tests = {key for key in self.results}
        parents = {(pkg, test.rsplit("/", 1)[0]) for pkg, test in tests if "/" in test}
        failed_below = {
            (pkg, test.rsplit("/", i)[0])
            for pkg, test in tests
            if self.results[(pkg, test)] == "fail"
            for i in range(1, test.count("/") + 1)
        }
        for key in sorted(tests):
            result = self.results[key]
            if key in parents and (result != "fail" or key in failed_below):
                continue  # its cases are counted; a parent failing on its own counts once
            if result == "pass":
                counts.passed += 1
            elif result == "skip":
                counts.skipped += 1
            else:
                counts.failed += 1
                counts.failures.append(f"{key[0]}.{key[1]}")
        counts.failed += len(self.failed_packages)
        counts.failures += self.failed_packages
        return counts


def go_counts(path: Path) -> Counts:
    go = GoTests(out=io.StringIO())
    for line in path.read_text().splitlines(keepends=True):
        go.feed(line)
    return go.counts()


def read_counts(path: Path) -> Counts:
    if path.suffix == ".xml":
        return junit_counts(path)
    if path.suffix == ".tsv":
        return molecule_counts(path)
    if path.name == "go.json":
        return counts_json(path)
    return go_counts(path)  # a saved `go test -json` stream


STAGE_FILES = ("junit.xml", "go.json", "molecule.tsv")


def stage_counts(folder: Path) -> Counts | None:
    found = [folder / name for name in STAGE_FILES if (folder / name).exists()]
    if not found:
        return None
    total = Counts()
    for path in found:
        try:
            total = total.add(read_counts(path))
        except (ET.ParseError, ValueError, TypeError) as exc:
            total.failures.append(f"unreadable {path.name}: {exc}")
    return total


# --- subcommands ---


def stage_folder(results: Path, name: str) -> Path:
    return results / name.replace("/", "_")


def run_stage(results: Path, name: str, command: list[str]) -> int:
    folder = stage_folder(results, name)
    folder.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ)
    env[STAGE_DIR_ENV] = str(folder)
    env["PYTEST_ADDOPTS"] = f"{env.get('PYTEST_ADDOPTS', '')} --junitxml={folder / 'junit.xml'}"
    print(f"== stage {name}", flush=True)
    started, began = time.monotonic(), time.time()
    proc = subprocess.Popen(command, env=env, close_fds=False)  # keeps make's jobserver
    try:
        rc = proc.wait()
    except KeyboardInterrupt:
        rc = proc.wait()  # the stage got the same signal; let it finish its own cleanup
        rc = rc if rc else 130
    seconds = time.monotonic() - started
    counts = stage_counts(folder)
    record = {"name": name, "rc": rc, "seconds": round(seconds, 1), "command": command}
    # wall-clock bounds: stages that run beside others overlap, so the run's time is not their sum
    record["began"], record["ended"] = round(began, 1), round(time.time(), 1)
    record["counts"] = asdict(counts) if counts else None
    (folder / "result.json").write_text(json.dumps(record, indent=2) + "\n")
    verdict = "passed" if rc == 0 else f"failed (exit {rc})"
    print(f"== stage {name}: {verdict} in {duration(seconds)}")
    return rc


def duration(seconds: float) -> str:
    s = round(seconds)
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m{s % 60:02d}s"
    return f"{s // 3600}h{s % 3600 // 60:02d}m"


def run_seconds(records: list[dict]) -> float:
    """The run's time: first start to last end, since the stages that need no lab run beside the
    lab's and overlap; the sum of the stages' times where a record has no clock times."""
    if records and all("began" in rec for rec in records):
        return max(rec["ended"] for rec in records) - min(rec["began"] for rec in records)
    return sum(rec["seconds"] for rec in records)


def report(results: Path, names: list[str], out=sys.stdout, goal_s: float | None = None) -> int:
    rows, failed, not_run, records = [], [], [], []
    total = Counts()
    for name in names:
        path = stage_folder(results, name) / "result.json"
        if not path.exists():
            rows.append((name, "not run", None, None))
            not_run.append(name)
            continue
        rec = json.loads(path.read_text())
        counts = Counts(**rec["counts"]) if rec.get("counts") else None
        result = "passed" if rec["rc"] == 0 else f"FAILED ({rec['rc']})"
        if rec["rc"] != 0:
            failed.append(name)
        rows.append((name, result, counts, rec["seconds"]))
        total = total.add(counts) if counts else total
        records.append(rec)
    total_s = run_seconds(records)

    width = max(len(n) for n in names + ["total"]) + 2
    head = f"  {'stage':<{width}}{'result':<13}{'passed':>7}{'failed':>8}{'skipped':>9}{'time':>9}"
    print(f"\n== make test: summary (each stage's records: {results})", file=out)
    print(head, file=out)
    for name, result, counts, seconds in rows:
        line = f"  {name:<{width}}{result:<13}"
        if seconds is not None:
            nums = (counts.passed, counts.failed, counts.skipped) if counts else ("-",) * 3
            line += f"{nums[0]:>7}{nums[1]:>8}{nums[2]:>9}{duration(seconds):>9}"
        print(line.rstrip(), file=out)
        for failure in (counts.failures if counts else [])[:SHOWN_FAILURES]:
            print(f"  {'':<{width}}  failed: {failure}", file=out)
        if counts and len(counts.failures) > SHOWN_FAILURES:
            more = len(counts.failures) - SHOWN_FAILURES
            print(f"  {'':<{width}}  ... and {more} more", file=out)
    verdict = "passed" if not failed and not not_run else "FAILED"
    print(
        f"  {'total':<{width}}{verdict:<13}{total.passed:>7}{total.failed:>8}{total.skipped:>9}"
        f"{duration(total_s):>9}",
        file=out,
    )
    print("  counts: pytest tests, Go leaf tests (each t.Run case), Molecule scenarios", file=out)
    if goal_s:
        met = "within" if total_s <= goal_s else "OVER"
        print(f"  time: {duration(total_s)}, {met} the goal of {duration(goal_s)}", file=out)
    if failed or not_run:
        why = f"failed: {', '.join(failed)}" if failed else "stopped"
        if not_run:
            why += f"; not run: {', '.join(not_run)}"
        print(f"make test: FAILED - {why}", file=out)
        return 1
    print(f"make test: passed - {len(names)} stages in {duration(total_s)}", file=out)
    return 0


def go_text(stdin=sys.stdin, out=sys.stdout) -> int:
    go = GoTests(out)
    for line in stdin:
        go.feed(line)
    counts = go.counts()
    c = counts
    print(f"go test: {c.passed} passed, {c.failed} failed, {c.skipped} skipped", file=out)
    folder = os.environ.get(STAGE_DIR_ENV)
    if folder:
        Path(folder, "go.json").write_text(json.dumps(asdict(counts), indent=2) + "\n")
    return 1 if counts.failed else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="test_summary.py",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sub = parser.add_subparsers(dest="cmd", required=True)
    st = sub.add_parser("stage", help="run one stage and record it")
    st.add_argument("--results", type=Path, required=True)
    st.add_argument("name")
    st.add_argument("command", nargs=argparse.REMAINDER)
    rp = sub.add_parser("report", help="the summary of the named stages")
    rp.add_argument("--results", type=Path, required=True)
    rp.add_argument("--goal-s", type=float, default=None)
    rp.add_argument("names", nargs="+")
    sub.add_parser("go-text", help="go test -json on stdin -> go test's plain output and counts")
    wh = sub.add_parser("why", help="why an Ansible run failed, in one line")
    wh.add_argument("log", type=Path)
    ct = sub.add_parser("counts", help="counts read from saved files")
    ct.add_argument("files", nargs="+", type=Path)
    args = parser.parse_args(argv)

    if args.cmd == "stage":
        command = args.command[1:] if args.command[:1] == ["--"] else args.command
        if not command:
            parser.error("stage: no command after --")
        return run_stage(args.results, args.name, command)
    if args.cmd == "report":
        return report(args.results, args.names, goal_s=args.goal_s)
    if args.cmd == "go-text":
        return go_text()
    if args.cmd == "why":
        lines = args.log.read_text(errors="replace").splitlines()
        print(why_failed(lines).replace("\t", " ").replace("\n", " "))
        return 0
    for path in args.files:
        c = read_counts(path)
        print(f"{path}: {c.passed} passed, {c.failed} failed, {c.skipped} skipped")
        for failure in c.failures:
            print(f"  failed: {failure}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
