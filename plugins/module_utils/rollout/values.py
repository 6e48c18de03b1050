# Copyright: kaiops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The Helm values of the rollout's upgrade. Pure.

A change names a KAI version, not the site's configuration. Helm's upgrade with values resets
the release to the chart's defaults plus the values given, so an upgrade that names only what
the request holds drops whatever the release was installed with (on KAI's own chart,
``global.gpuSharing`` is false by default: GPU sharing turned off). Reusing the release's values
as they are keeps a value that pins the old version (``global.tag: v0.16.13``), and the
upgrade then runs the old images under the new chart. So the upgrade is given:

1. the values the release was given (``helm get values``), where every text equal to the version
   that ran is the version under test - the values that named the running version name the new
   one (each such place is listed, for the record);
2. the change request's values over them (``kaiops_kai_helm_values``, merged key by key).

Values can hold secrets: the paths listed name where a value was, never what it is.
"""

import copy


def _repoint(node, before, target, path, moved):
    if isinstance(node, dict):
        return {k: _repoint(v, before, target, path + [str(k)], moved) for k, v in node.items()}
    if isinstance(node, list):
        return [_repoint(v, before, target, path + [str(i)], moved) for i, v in enumerate(node)]
    if before and node == before:
        moved.append(".".join(path))
        return target
    return node


def _merge(base, over):
    out = copy.deepcopy(base)
    for key, value in over.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = _merge(out[key], value)
        else:
            out[key] = copy.deepcopy(value)
    return out


def upgrade_values(given, requested, before, target):
    """The upgrade's values and the paths re-pointed from ``before`` to ``target``:
    ``{"values": ..., "repointed": [...]}``. ``given``: the release's user-supplied values (None
    or {} when none could be read); ``requested``: the change request's values."""
    moved = []
    kept = _repoint(given or {}, before, target, [], moved)
    return {"values": _merge(kept, requested or {}), "repointed": sorted(moved)}
