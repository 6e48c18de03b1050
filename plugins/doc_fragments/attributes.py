# Copyright: kaiops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the attributes of the collection's modules mean; each module gives its support."""


class ModuleDocFragment:
    DOCUMENTATION = r"""
options: {}
attributes:
  check_mode:
    description:
      - Can run under C(--check). The collection's read-only modules and its report writers run
        the same under C(--check), so a check run reads and records what a normal run does.
"""
