# -*- coding: utf-8 -*-
# Copyright: kaiops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The evidence folder option; the argument spec is module_utils/args_common.EVIDENCE_ARG_SPEC."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type


class ModuleDocFragment(object):
    DOCUMENTATION = r"""
options:
  evidence_dir:
    description:
      - The run's evidence folder, into which the module writes its files.
      - When omitted, the C(KAIOPS_EVIDENCE_DIR) environment variable is used; the
        C(kaiops.runbooks.evidence) callback exports it at playbook start, and modules that run
        on the controller (C(ansible_connection=local)) inherit it.
      - When neither is set the module writes nothing and warns; its result is unchanged.
      - The module never writes outside this folder and never replaces a file in it.
    type: path
"""
