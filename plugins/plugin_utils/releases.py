# Copyright: kaiops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""KAI's release facts, read on the controller from the collection's one data file.

``meta/kai_releases.yml`` (shipped with the collection) holds the version pair under test, the
affected range and how each release writes the GPU-sharing ConfigMap, with where each fact came
from. Modules run through AnsiballZ and cannot read a file shipped beside them, so the action
plugins (``plugin_utils/action.py``) read it here and pass the values in as option defaults:
a module declares ``RELEASE_DEFAULTS = {option: "dotted.path"}`` and gets the value at that
path whenever the task leaves the option out. Roles and playbooks omit these options instead
of restating the values.
"""

import os

import yaml
from ansible.errors import AnsibleError

COLLECTION_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
RELEASES_FILE = os.path.join(COLLECTION_ROOT, "meta", "kai_releases.yml")

_CACHE = {}


def load(path=RELEASES_FILE):
    """The release facts as a dict (read once per process)."""
    if path not in _CACHE:
        try:
            with open(path, "r") as handle:
                data = yaml.safe_load(handle)
        except (OSError, yaml.YAMLError) as exc:
            raise AnsibleError("Failed to read KAI release facts %s: %s" % (path, exc)) from exc
        if not isinstance(data, dict):
            raise AnsibleError("Failed to read KAI release facts %s: not a mapping" % path)
        _CACHE[path] = data
    return _CACHE[path]


def value(dotted, facts=None):
    """The fact at a dotted path, e.g. 'pair.patched' or 'affected_range'."""
    current = load() if facts is None else facts
    for part in dotted.split("."):
        if not isinstance(current, dict) or part not in current:
            raise AnsibleError(
                "Failed to read KAI release fact %s from %s: no such key" % (dotted, RELEASES_FILE)
            )
        current = current[part]
    return current
