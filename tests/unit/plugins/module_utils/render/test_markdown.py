"""plugins/module_utils/render: the one table helper, the templates' environment and the one
JUnit writer every report uses."""

import xml.etree.ElementTree as ET

import pytest

from ansible_collections.kaiops.runbooks.plugins.module_utils.render import junit, markdown


@pytest.mark.parametrize(
    "value,cell",
    [
        (None, "-"),
        ("", "-"),
        ("a|b", "a\\|b"),
        ("line\nnext", "line next"),
        (["x", "y|z"], "x, y\\|z"),
        (0, "0"),
        (False, "False"),
    ],
)
def test_cell_keeps_a_row_a_row(value, cell):
    assert markdown.cell(value) == cell


def test_cell_empty_marker_is_the_callers():
    assert markdown.cell(None, "not read") == "not read"


def test_a_template_naming_a_missing_field_fails_instead_of_printing_a_blank(tmp_path):
    (tmp_path / "t.md.j2").write_text("{{ present }} {{ absent }}\n")
    with pytest.raises(Exception, match="absent"):
        markdown.render("t.md.j2", {"present": 1}, str(tmp_path))


def test_block_tags_leave_no_blank_lines_and_the_last_newline_stays(tmp_path):
    (tmp_path / "t.md.j2").write_text(
        "| a |\n{% for r in rows %}\n| {{ r | cell }} |\n{% endfor %}\n"
    )
    out = markdown.render("t.md.j2", {"rows": ["x|y", None]}, str(tmp_path))
    assert out == "| a |\n| x\\|y |\n| - |\n"


def test_a_missing_templates_folder_is_named_with_its_fix(tmp_path):
    with pytest.raises(ValueError, match="template_dir"):
        markdown.render("t.md.j2", {}, str(tmp_path / "nowhere"))


def test_the_trees_templates_are_found_without_the_action_plugin():
    assert markdown.template_dir().endswith("templates/reports")


def test_junit_counts_come_from_the_cases():
    suites = [
        {
            "name": "s1",
            "cases": [
                {"classname": "c", "name": "ok", "time": 1.5},
                {"classname": "c", "name": "bad", "failure": {"message": "m<", "text": "t&"}},
                {"classname": "c", "name": "later", "skipped": "not run: x"},
            ],
        },
        {"name": "s2", "cases": [{"classname": "d", "name": "e", "error": {"message": "boom"}}]},
    ]
    root = ET.fromstring(junit.render("kaiops x", suites))
    assert root.get("name") == "kaiops x"
    assert [root.get(k) for k in ("tests", "failures", "errors", "skipped")] == ["4", "1", "1", "1"]
    s1 = root.find("testsuite[@name='s1']")
    assert [s1.get(k) for k in ("tests", "failures", "errors", "skipped")] == ["3", "1", "0", "1"]
    bad = s1.find("testcase[@name='bad']/failure")
    assert bad.get("message") == "m<" and bad.text == "t&" and bad.get("type") == "failure"
    assert s1.find("testcase[@name='ok']").get("time") == "1.500"
    assert s1.find("testcase[@name='later']/skipped").get("message") == "not run: x"
    assert root.find("testsuite[@name='s2']/testcase/error").get("message") == "boom"


def test_junit_with_no_suites_is_a_valid_empty_document():
    root = ET.fromstring(junit.render("empty", []))
    assert root.get("tests") == "0" and list(root) == []
