"""tools/code_figures.py, issue 20's figures: its complexity count on code of known complexity."""

import ast
import importlib.util
import os
import subprocess
import sys
import textwrap

import pytest
from conftest import REPO

spec = importlib.util.spec_from_file_location(
    "code_figures", os.path.join(REPO, "tools", "code_figures.py")
)
code_figures = importlib.util.module_from_spec(spec)
spec.loader.exec_module(code_figures)

# ruff from the venv the tests run in (make lint's C901 is ruff's).
RUFF = os.path.join(os.path.dirname(sys.executable), "ruff")


def cc(source):
    """The complexity of the first function of ``source``."""
    tree = ast.parse(textwrap.dedent(source))
    return code_figures.complexity(tree.body[0])


@pytest.mark.parametrize(
    "source, expected",
    [
        ("def f():\n    return 1\n", 1),
        (
            "def f(a):\n    if a:\n        return 1\n    elif a > 2:\n        return 2\n"
            "    else:\n        return 3\n",
            3,
        ),
        ("def f(a, b, c):\n    return a and b or c\n", 3),
        ("def f(a, b, c):\n    return a and b and c\n", 3),
        ("def f(xs):\n    return [x for x in xs if x if x > 1]\n", 3),
        ("def f(xs):\n    for x in xs:\n        while x:\n            x -= 1\n", 3),
        (
            "def f():\n    try:\n        g()\n    except KeyError:\n        pass\n"
            "    except ValueError:\n        pass\n    finally:\n        h()\n",
            3,
        ),
        ("def f(p):\n    with open(p) as out:\n        assert out\n", 3),
        ("def f(a):\n    return 1 if a else 2\n", 2),
        (
            "def f(a):\n    match a:\n        case 1:\n            pass\n        case 2:\n"
            "            pass\n        case _:\n            pass\n",
            3,
        ),
        (
            "def f(a):\n    match a:\n        case 1:\n            pass\n        case x if x:\n"
            "            pass\n",
            3,
        ),
        # the nested function is its own: only the outer if counts here
        (
            "def f(a):\n    if a:\n        pass\n    def g(b):\n        if b:\n            pass\n"
            "        return b and a\n    return g\n",
            2,
        ),
    ],
)
def test_complexity_counts_each_decision_point(source, expected):
    assert cc(source) == expected


def branches(count):
    """A function of cyclomatic complexity ``count`` + 1 by every count: ``count`` plain ifs."""
    body = "".join("    if a == %d:\n        return %d\n" % (i, i) for i in range(count))
    return "def f(a):\n" + body + "    return -1\n"


@pytest.mark.parametrize("ifs, over", [(19, False), (20, True)])
def test_the_threshold_agrees_with_ruffs_c901(tmp_path, ifs, over):
    source = branches(ifs)
    complexity = code_figures.functions(source, "m.py")[0][4]
    assert complexity == ifs + 1
    (tmp_path / "m.py").write_text(source)
    ruff = subprocess.run(
        [
            RUFF,
            "check",
            "--isolated",
            "--select",
            "C901",
            "--config",
            "lint.mccabe.max-complexity = %d" % code_figures.MAX_COMPLEXITY,
            str(tmp_path / "m.py"),
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert ("`f` is too complex (%d > 20)" % (ifs + 1) in ruff.stdout) is over, ruff.stdout
    assert (complexity > code_figures.MAX_COMPLEXITY) is over


def test_the_figures_name_packages_long_functions_and_the_count_over_bounds(tmp_path, capsys):
    utils = tmp_path / "plugins" / "module_utils"
    (utils / "big").mkdir(parents=True)
    (utils / "big" / "a.py").write_text(branches(21))
    (utils / "big" / "b.py").write_text("x = 1\n")
    (utils / "top.py").write_text("def g():\n" + "    y = 1\n" * 70)
    assert code_figures.main(["--root", str(tmp_path), "--top", "1"]) == 0
    out = capsys.readouterr().out
    assert "plugins/module_utils: %d lines in 3 files" % (44 + 1 + 71) in out
    assert "big                          2     45  big/a.py (44)" in out
    assert "   71    1  plugins/module_utils/top.py:1 g\n" in out
    assert out.split("the 1 longest functions in plugins/\n")[1].split("\n\n")[0] == (
        "lines   CC  function\n   71    1  plugins/module_utils/top.py:1 g"
    )
    assert "functions over 60 lines or CC over 20: 2 of 2 (1 over 60 lines, 1 over CC 20)" in out


def test_a_folder_without_module_utils_is_named(tmp_path, capsys):
    assert code_figures.main(["--root", str(tmp_path)]) == 2
    assert "no plugins/module_utils under --root" in capsys.readouterr().out


def test_the_check_names_each_function_over_a_bound_and_fails(tmp_path, capsys):
    utils = tmp_path / "plugins" / "module_utils"
    utils.mkdir(parents=True)
    (utils / "a.py").write_text(branches(21))
    (utils / "b.py").write_text("def g():\n" + "    y = 1\n" * 60)
    assert code_figures.main(["--root", str(tmp_path), "--check"]) == 1
    out = capsys.readouterr().out
    assert "plugins/module_utils/a.py:1: f is complexity 22 (at most 20)" in out
    assert "plugins/module_utils/b.py:1: g is 61 lines (at most 60)" in out


def test_the_check_passes_at_the_bounds_and_sees_methods(tmp_path, capsys):
    utils = tmp_path / "plugins" / "module_utils"
    utils.mkdir(parents=True)
    (utils / "a.py").write_text(branches(19))
    (utils / "b.py").write_text("def g():\n" + "    y = 1\n" * 59)
    assert code_figures.main(["--root", str(tmp_path), "--check"]) == 0
    (utils / "c.py").write_text("class C:\n    def h(self):\n" + "        y = 2\n" * 70)
    assert code_figures.main(["--root", str(tmp_path), "--check"]) == 1
    assert "c.py:2: h is 71 lines (at most 60)" in capsys.readouterr().out
