"""module_utils/render/markdown.py: the one table helper and the templates' environment."""

import pytest

from ansible_collections.kaiops.runbooks.plugins.module_utils.render import markdown


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
