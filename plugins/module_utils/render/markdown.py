# Copyright: kaiops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Reports rendered from the collection's Jinja2 templates (``templates/reports/``).

Report builders return data; a template turns it into Markdown. One environment for every
report, so that every template has the same filters and the same whitespace rules:

- ``cell``: a value made safe for a Markdown table cell (the one table helper);
- ``StrictUndefined``: a template that names a missing field fails loudly instead of printing
  an empty cell that a reader would take for a recorded blank;
- ``trim_blocks``/``lstrip_blocks``: ``{% %}`` lines leave no blank lines behind, so a template
  reads like the Markdown it renders.

The folder of the templates is given by the module's action plugin (option ``template_dir``,
doc fragment ``evidence``): a module runs from a zip that holds Python files only. Run from the
collection's tree (unit tests) the folder is found next to this file.
"""

import os

try:
    import jinja2
except ImportError:  # pragma: no cover - jinja2 comes with ansible-core on the controller
    jinja2 = None

# plugins/module_utils/render/markdown.py -> the collection's root
_TREE_TEMPLATES = os.path.join(
    os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))),
    "templates",
    "reports",
)

_ENVIRONMENTS = {}


def cell(value, empty="-"):
    """A table cell: ``empty`` for None or "", a list joined with commas, ``|`` escaped and
    line breaks folded (either would break the row)."""
    if value is None or value == "":
        return empty
    if isinstance(value, (list, tuple)):
        value = ", ".join(str(v) for v in value)
    return str(value).replace("|", "\\|").replace("\n", " ")


def template_dir(given=None):
    """The templates' folder: ``given`` (the action plugin's) or the one in the tree."""
    folder = given or _TREE_TEMPLATES
    if not os.path.isdir(folder):
        raise ValueError(
            "report templates folder %s does not exist: run the module through its action "
            "plugin (it gives template_dir), or give template_dir" % folder
        )
    return folder


def environment(folder=None):
    folder = template_dir(folder)
    if folder not in _ENVIRONMENTS:
        env = jinja2.Environment(
            loader=jinja2.FileSystemLoader(folder),
            undefined=jinja2.StrictUndefined,
            trim_blocks=True,
            lstrip_blocks=True,
            keep_trailing_newline=True,
            autoescape=False,
        )
        env.filters["cell"] = cell
        _ENVIRONMENTS[folder] = env
    return _ENVIRONMENTS[folder]


def render(name, context, folder=None):
    """Template ``name`` (e.g. ``request.md.j2``) rendered with the mapping ``context``."""
    return environment(folder).get_template(name).render(**context)
