#!/usr/bin/env python3
"""Print issue 20's size figures: lines per package, the longest functions, those over bounds.

Issue 20 asks for before and after figures in its closing note; this prints them the same way on
any checkout (standard library only, so it runs without the venv):

- lines per package under plugins/module_utils: files, lines, the largest file;
- the longest functions in plugins/ with their cyclomatic complexity;
- how many functions are over 60 lines or over a complexity of 20 (make lint's bounds).

With --check it is make lint's bound instead: it names each function in plugins/ over 60 lines
(a function a maintainer reads in one screen) or over a complexity of 20, and fails on any.

Cyclomatic complexity is 1 plus a decision point for each if and elif, for and while, except
handler, with, assert, ternary (x if c else y), extra operand of a boolean operator (a and b or c
is 2), if of a comprehension, and match case (the last one not when it matches anything: it is
an else). mccabe and ruff's C901 (make lint) count no boolean operator, comprehension if,
ternary, with or assert, so this figure is never below ruff's, and on plain branching code the
two agree (tests/unit/tools/test_code_figures.py checks both at make lint's threshold). A nested
function or class is measured on its own, not in the enclosing function's count.

    tools/code_figures.py [--root DIR] [--top N] [--check]
"""

import argparse
import ast
import pathlib
import sys

MAX_LINES = 60
MAX_COMPLEXITY = 20

# One decision point each.
BRANCHES = (
    ast.If,
    ast.IfExp,
    ast.For,
    ast.AsyncFor,
    ast.While,
    ast.ExceptHandler,
    ast.With,
    ast.AsyncWith,
    ast.Assert,
)
# Measured on their own, not as part of the function around them.
OWN_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)


def _own_nodes(function):
    """Every node of ``function``'s body, nested functions and classes left out."""
    stack = list(ast.iter_child_nodes(function))
    while stack:
        node = stack.pop()
        if isinstance(node, OWN_SCOPES):
            continue
        yield node
        stack.extend(ast.iter_child_nodes(node))


def _match_points(match):
    """One per case; a last case that matches anything is the else and adds none."""
    last = match.cases[-1]
    catch_all = isinstance(last.pattern, ast.MatchAs) and last.pattern.pattern is None
    return len(match.cases) - (1 if catch_all and last.guard is None else 0)


def complexity(function):
    """Cyclomatic complexity of a function node (see the module's docstring)."""
    points = 0
    for node in _own_nodes(function):
        if isinstance(node, BRANCHES):
            points += 1
        elif isinstance(node, ast.BoolOp):
            points += len(node.values) - 1
        elif isinstance(node, ast.comprehension):
            points += len(node.ifs)
        elif isinstance(node, ast.Match):
            points += _match_points(node)
    return points + 1


def functions(source, name="<source>"):
    """(name, line, length, function, complexity) of each function of ``source``."""
    found = []
    for node in ast.walk(ast.parse(source, filename=name)):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            length = node.end_lineno - node.lineno + 1
            found.append((name, node.lineno, length, node.name, complexity(node)))
    return found


def packages(module_utils):
    """{package: (files, lines, (largest file, its lines))} under module_utils; its own files
    count as "(top level)"."""
    sizes = {}
    for path in sorted(module_utils.rglob("*.py")):
        relative = path.relative_to(module_utils)
        package = relative.parts[0] if len(relative.parts) > 1 else "(top level)"
        lines = len(path.read_text().splitlines())
        files, total, largest = sizes.get(package, (0, 0, ("", -1)))
        if lines > largest[1]:
            largest = (str(relative), lines)
        sizes[package] = (files + 1, total + lines, largest)
    return sizes


def print_packages(module_utils):
    sizes = packages(module_utils)
    files = sum(s[0] for s in sizes.values())
    lines = sum(s[1] for s in sizes.values())
    print("plugins/module_utils: %d lines in %d files" % (lines, files))
    print("%-24s %5s %6s  %s" % ("package", "files", "lines", "largest file"))
    for package, (count, total, (largest, largest_lines)) in sorted(
        sizes.items(), key=lambda item: -item[1][1]
    ):
        print("%-24s %5d %6d  %s (%d)" % (package, count, total, largest, largest_lines))


def print_functions(found, top):
    print()
    print("the %d longest functions in plugins/" % top)
    print("%5s %4s  %s" % ("lines", "CC", "function"))
    for name, line, length, function, cc in sorted(found, key=lambda f: (-f[2], f[0], f[1]))[:top]:
        print("%5d %4d  %s:%d %s" % (length, cc, name, line, function))
    long = sum(1 for f in found if f[2] > MAX_LINES)
    complex_ = sum(1 for f in found if f[4] > MAX_COMPLEXITY)
    over = sum(1 for f in found if f[2] > MAX_LINES or f[4] > MAX_COMPLEXITY)
    print()
    print(
        "functions over %d lines or CC over %d: %d of %d (%d over %d lines, %d over CC %d)"
        % (MAX_LINES, MAX_COMPLEXITY, over, len(found), long, MAX_LINES, complex_, MAX_COMPLEXITY)
    )


def over_bounds(found):
    """The functions of ``found`` over make lint's bounds, one line each; [] when none is."""
    lines = []
    for name, line, length, function, cc in sorted(found):
        why = [
            "%d lines (at most %d)" % (length, MAX_LINES) if length > MAX_LINES else "",
            "complexity %d (at most %d)" % (cc, MAX_COMPLEXITY) if cc > MAX_COMPLEXITY else "",
        ]
        if any(why):
            lines.append("%s:%d: %s is %s" % (name, line, function, ", ".join(w for w in why if w)))
    return lines


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", default=".", help="the collection's checkout (default: .)")
    parser.add_argument("--top", type=int, default=10, help="how many long functions to list")
    parser.add_argument(
        "--check", action="store_true", help="fail on functions over the bounds (make lint)"
    )
    args = parser.parse_args(argv)
    root = pathlib.Path(args.root)
    plugins = root / "plugins"
    if not (plugins / "module_utils").is_dir():
        print("code_figures: no plugins/module_utils under --root %s: give the checkout" % root)
        return 2
    found = []
    for path in sorted(plugins.rglob("*.py")):
        found += functions(path.read_text(), str(path.relative_to(root)))
    if args.check:
        over = over_bounds(found)
        for line in over:
            print(line)
        if over:
            print("split them: a function is read in one screen, its branches at a glance")
        return 1 if over else 0
    print_packages(plugins / "module_utils")
    print_functions(found, args.top)
    return 0


if __name__ == "__main__":
    sys.exit(main())
