# Copyright: kaiops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Paths a user gives (a bundle, a kubeconfig), read on the controller from where the command
runs: the action plugins run in ansible-playbook's own process, whose current directory is the
one the command was typed in (a module runs elsewhere and must get an absolute path).
"""

import os


def kind(path):
    """What is at ``path``: ``dir``, ``file``, ``missing`` or ``unreadable``."""
    if not os.path.exists(path):
        return "missing"
    if os.path.isdir(path):
        return "dir" if os.access(path, os.R_OK | os.X_OK) else "unreadable"
    return "file" if os.access(path, os.R_OK) else "unreadable"


def resolve(given, root=None):
    """An absolute path for ``given``: itself when absolute, else from the current directory
    when something is there, else a folder of that name in ``root`` (the evidence store) when
    there is one - ``evidence/<bundle>``, the documented form, included wherever the store is -,
    else from the current directory."""
    path = os.path.expanduser(given)
    if os.path.isabs(path):
        return os.path.normpath(path)
    here = os.path.abspath(path)
    if os.path.exists(here) or not root:
        return here
    parts = os.path.normpath(path).split(os.sep)
    names = [path] + (
        [os.path.join(*parts[1:])] if len(parts) > 1 and parts[0] == "evidence" else []
    )
    for name in names:
        inside = os.path.normpath(os.path.join(root, name))
        if os.path.exists(inside):
            return inside
    return here
