"""Flakes across repeated runs of the same tests: which tests passed in one run and failed in
another, which failed every time, and the flake rate.

flake_report.py FILE...
    Each FILE is one `go test -json` stream (any -count: every run of a test counts) or one
    pytest junit xml (one run). A test is keyed by its package and name (Go) or class and name
    (pytest). Prints the runs read, every flaky test with its fail/run counts, every test that
    failed each time it ran, and the rates; exits 1 if any test is flaky or broken, or if no
    file held a test ("no data" is not a pass).
"""

from __future__ import annotations

import json
import sys
import xml.etree.ElementTree as ET
from collections import defaultdict
from pathlib import Path

# (source, test) -> [passes, failures]; skips are not runs
Tally = dict[tuple[str, str], list[int]]


def tally_go(path: Path, tally: Tally) -> None:
    """Every pass/fail event of a test, so -count=10 gives ten runs of each test."""
    for raw in path.read_text(errors="replace").splitlines():
        try:
            event = json.loads(raw)
        except json.JSONDecodeError:
            continue  # go's own messages between events
        test, action = event.get("Test"), event.get("Action")
        if test and action in ("pass", "fail"):
            slot = tally[("go " + event.get("Package", ""), test)]
            slot[0 if action == "pass" else 1] += 1


def tally_junit(path: Path, tally: Tally) -> None:
    for case in ET.parse(path).iter("testcase"):
        if case.find("skipped") is not None:
            continue
        failed = case.find("failure") is not None or case.find("error") is not None
        slot = tally[("pytest " + case.get("classname", ""), case.get("name", ""))]
        slot[1 if failed else 0] += 1


def read(paths: list[Path]) -> Tally:
    tally: Tally = defaultdict(lambda: [0, 0])
    for path in paths:
        (tally_junit if path.suffix == ".xml" else tally_go)(path, tally)
    return tally


def judge(tally: Tally) -> tuple[list, list]:
    flaky = [(key, p, f) for key, (p, f) in sorted(tally.items()) if p and f]
    broken = [(key, p, f) for key, (p, f) in sorted(tally.items()) if f and not p]
    return flaky, broken


def report(paths: list[Path], out=None) -> int:
    out = out or sys.stdout
    tally = read(paths)
    runs = sum(p + f for p, f in tally.values())
    print(f"flake check: {len(paths)} files, {len(tally)} tests, {runs} runs", file=out)
    if not tally:
        print("flake check: FAILED - no test was read (no data is not a pass)", file=out)
        return 1
    flaky, broken = judge(tally)
    for title, rows in (("flaky (passed and failed)", flaky), ("failed every run", broken)):
        for (source, name), passes, fails in rows:
            print(f"  {title}: {source} {name}: {fails} of {passes + fails} runs failed", file=out)
    failed_runs = sum(f for _p, f in tally.values())
    rate = 100 * len(flaky) / len(tally)
    print(
        f"flake rate: {len(flaky)} of {len(tally)} tests flaky ({rate:.2f} %);"
        f" {failed_runs} of {runs} runs failed; {len(broken)} tests failed every run",
        file=out,
    )
    return 1 if flaky or broken else 0


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if not args or args[0] in ("-h", "--help"):
        print(__doc__)
        return 0 if args else 2
    return report([Path(a) for a in args])


if __name__ == "__main__":
    sys.exit(main())
