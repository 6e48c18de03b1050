#!/usr/bin/env python3
"""Fail on functions longer than a limit (def line to last line, docstring included).

make lint runs it over plugins/ with 60 lines (issue 20: a function a maintainer reads in one
screen); ruff's C901 (pyproject.toml) bounds the complexity. Lines, not statements: a long
literal or a long docstring is as hard to read as long code.

    tools/function_size.py [--max-lines N] PATH...
"""

import argparse
import ast
import pathlib
import sys


def long_functions(source, max_lines, name="<source>"):
    """(name, line, length, function) of each function of ``source`` over ``max_lines``."""
    found = []
    for node in ast.walk(ast.parse(source, filename=name)):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            length = node.end_lineno - node.lineno + 1
            if length > max_lines:
                found.append((name, node.lineno, length, node.name))
    return found


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--max-lines", type=int, default=60)
    parser.add_argument("paths", nargs="+")
    args = parser.parse_args(argv)
    found = []
    for root in args.paths:
        files = [pathlib.Path(root)] if root.endswith(".py") else pathlib.Path(root).rglob("*.py")
        for path in sorted(files):
            found += long_functions(path.read_text(), args.max_lines, str(path))
    for name, line, length, function in sorted(found):
        print("%s:%d: %s is %d lines (at most %d)" % (name, line, function, length, args.max_lines))
    if found:
        print("split them: a function is read in one screen (tools/function_size.py)")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
