# Copyright: kaiops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The report templates option; the argument spec is module_utils/args_common.REPORT_ARG_SPEC."""


class ModuleDocFragment:
    DOCUMENTATION = r"""
options:
  template_dir:
    description:
      - The folder of the collection's report templates (Jinja2), from which the module renders
        its Markdown report.
      - When omitted, the module's action plugin gives it the collection's C(templates/reports)
        on the controller. Give it only to render with templates of your own.
    type: path
"""
