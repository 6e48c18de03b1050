"""tools/function_size.py, make lint's bound on function length: it sees what it must."""

import importlib.util
import os

from conftest import REPO

spec = importlib.util.spec_from_file_location(
    "function_size", os.path.join(REPO, "tools", "function_size.py")
)
function_size = importlib.util.module_from_spec(spec)
spec.loader.exec_module(function_size)


def source(lines):
    return "def f():\n" + "    x = 1\n" * (lines - 1)


def test_a_function_over_the_limit_is_named_with_its_length():
    found = function_size.long_functions(source(61), 60, "m.py")
    assert found == [("m.py", 1, 61, "f")]


def test_one_at_the_limit_passes_and_nested_ones_are_seen():
    assert function_size.long_functions(source(60), 60) == []
    nested = "class C:\n    def g(self):\n" + "        y = 2\n" * 70
    assert [f[3] for f in function_size.long_functions(nested, 60)] == ["g"]


def test_the_command_fails_on_a_long_function(tmp_path, capsys):
    (tmp_path / "a.py").write_text(source(70))
    assert function_size.main(["--max-lines", "60", str(tmp_path)]) == 1
    assert "a.py:1: f is 70 lines (at most 60)" in capsys.readouterr().out
    assert function_size.main(["--max-lines", "80", str(tmp_path)]) == 0
