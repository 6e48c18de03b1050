"""plugins/module_utils in layers: every import between the collection's Python files follows
LAYERS and the rules beside it; a synthetic bad arrow shows the checker reports what it should.

A name is a top-level module or package of plugins/module_utils (``errors``, ``kai``...). Each
name may import itself and the layers its row lists; a feature never imports another feature:
what two features use lives in a shared package. Within the layers: a client (I/O only) never
imports a service, and no runner imports another runner (a runner is the layer that exits). A
module and its action plugin, named after a feature (kai_<feature>_*), import no other feature;
the callback, filters and plugin_utils may import any of module_utils. module_utils import
nothing else of the collection.
"""

import ast
import os

import pytest
from conftest import REPO

PLUGINS = os.path.join(REPO, "plugins")
PREFIX = "ansible_collections.kaiops.runbooks.plugins."

# The one table: (layer, its names under plugins/module_utils, the layers it may import).
LAYERS = (
    ("base", ("errors", "ansible_module", "args_common", "vocabulary", "versions"), ("base",)),
    # render: the report templates' package another branch is adding (generic when it lands).
    ("generic", ("k8s", "evidence", "render"), ("base", "generic")),
    ("domain", ("kai",), ("base", "generic")),
    ("shared", ("bundle", "cost", "probes", "scan"), ("base", "generic", "domain", "shared")),
    (
        "feature",
        (
            "inventory",
            "reproduce",
            "recovery",
            "gpu_access",
            "rollout",
            "snapshot",
            "request",
            "diagnose",
        ),
        ("base", "generic", "domain", "shared"),
    ),
)
LAYER_OF = {name: layer for layer, names, _may in LAYERS for name in names}
MAY_IMPORT = {layer: may for layer, _names, may in LAYERS}
FEATURES = next(names for layer, names, _may in LAYERS if layer == "feature")
# Plugin folders whose files name a feature (kai_<feature>_<verb>): those import that feature only.
FEATURE_NAMED = ("modules", "action")


def module_name(path):
    """plugins/module_utils/kai/facts.py -> module_utils.kai.facts"""
    rel = os.path.relpath(path, PLUGINS)
    return os.path.splitext(rel)[0].replace(os.sep, ".")


def _resolve(dotted):
    """The dotted name when it is a module or package of the collection, else None."""
    path = os.path.join(PLUGINS, *dotted.split("."))
    return dotted if os.path.exists(path + ".py") or os.path.isdir(path) else None


def imports_of(path):
    """The collection modules a file imports, anywhere in it (functions too), as dotted names
    under plugins/: ``from X import name`` counts as X.name when that is a module."""
    with open(path) as handle:
        tree = ast.parse(handle.read(), path)
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names if a.name.startswith(PREFIX)]
            found.update(t[len(PREFIX) :] for t in targets)
        elif isinstance(node, ast.ImportFrom):
            assert not node.level, "%s: a relative import (%s)" % (path, node.module)
            if not (node.module or "").startswith(PREFIX):
                continue
            base = node.module[len(PREFIX) :]
            for alias in node.names:
                found.add(_resolve(base + "." + alias.name) or base)
    return found


def arrows():
    """Every (importer, imported) pair between the collection's Python files under plugins/."""
    out = []
    for folder, _dirs, files in sorted(os.walk(PLUGINS)):
        for name in sorted(files):
            if name.endswith(".py"):
                path = os.path.join(folder, name)
                out.extend((module_name(path), t) for t in sorted(imports_of(path)))
    return out


def _top(dotted):
    """module_utils.kai.facts -> kai; None outside module_utils."""
    parts = dotted.split(".")
    return parts[1] if parts[0] == "module_utils" and len(parts) > 1 else None


def _leaf(dotted):
    return dotted.rsplit(".", 1)[-1]


def _is_runner(dotted):
    return _leaf(dotted) == "runner" or _leaf(dotted).endswith("_runner")


def _plugin_feature(dotted):
    """The feature a module or action plugin is named after (kai_gpu_access_plan: gpu_access)."""
    stem = "_%s_" % _leaf(dotted)
    named = [f for f in FEATURES if "_%s_" % f in stem]
    return max(named, key=len) if named else None


def _layer_rule(source, target):
    mine, theirs = _top(source), _top(target)
    if mine is None or theirs is None or mine == theirs:
        return None
    for name in (mine, theirs):
        if name not in LAYER_OF:
            return "every name has a layer: %s is in no row of LAYERS" % name
    layer, other = LAYER_OF[mine], LAYER_OF[theirs]
    if layer == other == "feature":
        return "a feature never imports another feature: feature %s imports feature %s" % (
            mine,
            theirs,
        )
    if other not in MAY_IMPORT[layer]:
        return "%s %s imports %s %s; %s imports only %s (and itself)" % (
            layer,
            mine,
            other,
            theirs,
            layer,
            ", ".join(MAY_IMPORT[layer]),
        )
    return None


def _shipped_rule(source, target):
    if source.startswith("module_utils.") and not target.startswith("module_utils."):
        return "module_utils ship with the modules to where they run: they import no plugin code"
    return None


def _client_rule(source, target):
    if _leaf(source) == "client" and _leaf(target) == "service":
        return "a client (I/O only) never imports a service"
    return None


def _runner_rule(source, target):
    if _is_runner(source) and _is_runner(target) and source != target:
        return "no runner imports another runner"
    return None


def _plugin_rule(source, target):
    if source.split(".")[0] not in FEATURE_NAMED or LAYER_OF.get(_top(target)) != "feature":
        return None
    own = _plugin_feature(source)
    if _top(target) != own:
        return "a module imports its own feature only: %s is %s" % (
            _leaf(source),
            "feature %s's" % own if own else "named after no feature",
        )
    return None


# Rules as data: (name, rule(importer, imported) -> why it is broken, or None).
RULES = (
    ("layers", _layer_rule),
    ("shipped", _shipped_rule),
    ("client-service", _client_rule),
    ("runner-runner", _runner_rule),
    ("plugin-feature", _plugin_rule),
)


def broken(pairs):
    """One message per arrow and rule it breaks: '<importer> -> <imported>: <rule>: <why>'."""
    out = []
    for source, target in pairs:
        for name, rule in RULES:
            why = rule(source, target)
            if why:
                out.append("%s -> %s: %s: %s" % (source, target, name, why))
    return out


def test_every_import_follows_the_layers():
    found = arrows()
    # the walk sees the imports at all: a scan that finds none would pass anything
    assert ("module_utils.rollout.runner", "module_utils.errors") in found
    assert ("modules.kai_snapshot", "module_utils.snapshot.runner") in found
    problems = broken(found)
    assert not problems, "\n".join(problems)


def test_every_package_has_a_layer():
    names = {
        os.path.splitext(n)[0]
        for n in os.listdir(os.path.join(PLUGINS, "module_utils"))
        if n.endswith(".py") or os.path.isdir(os.path.join(PLUGINS, "module_utils", n))
    } - {"__pycache__", "__init__"}
    assert sorted(names - set(LAYER_OF)) == []


@pytest.mark.parametrize(
    ("arrow", "expected"),
    [
        (
            ("module_utils.k8s.objects", "module_utils.kai.facts"),
            "module_utils.k8s.objects -> module_utils.kai.facts: layers: generic k8s imports "
            "domain kai; generic imports only base, generic (and itself)",
        ),
        (
            ("module_utils.rollout.probes", "module_utils.reproduce.service"),
            "module_utils.rollout.probes -> module_utils.reproduce.service: layers: a feature "
            "never imports another feature: feature rollout imports feature reproduce",
        ),
        (
            ("module_utils.cost", "module_utils.gpu_access.service"),
            "module_utils.cost -> module_utils.gpu_access.service: layers: shared cost imports "
            "feature gpu_access; shared imports only base, generic, domain, shared (and itself)",
        ),
        (
            ("module_utils.inventory.client", "module_utils.inventory.service"),
            "module_utils.inventory.client -> module_utils.inventory.service: client-service: "
            "a client (I/O only) never imports a service",
        ),
        (
            ("module_utils.rollout.change_runner", "module_utils.rollout.runner"),
            "module_utils.rollout.change_runner -> module_utils.rollout.runner: runner-runner: "
            "no runner imports another runner",
        ),
        (
            ("modules.kai_rollout_decision", "module_utils.recovery.runner"),
            "modules.kai_rollout_decision -> module_utils.recovery.runner: plugin-feature: a "
            "module imports its own feature only: kai_rollout_decision is feature rollout's",
        ),
        (
            ("module_utils.vocabulary", "plugin_utils.paths"),
            "module_utils.vocabulary -> plugin_utils.paths: shipped: module_utils ship with the "
            "modules to where they run: they import no plugin code",
        ),
        (
            ("module_utils.tools.thing", "module_utils.errors"),
            "module_utils.tools.thing -> module_utils.errors: layers: every name has a layer: "
            "tools is in no row of LAYERS",
        ),
    ],
    ids=[
        "generic-domain",
        "feature-feature",
        "shared-feature",
        "client",
        "runner",
        "plugin",
        "shipped",
        "new",
    ],
)
def test_a_bad_arrow_is_reported_with_the_rule_it_breaks(arrow, expected):
    assert broken([arrow]) == [expected]


@pytest.mark.parametrize(
    "arrow",
    [
        ("module_utils.rollout.probes", "module_utils.probes.watches"),
        ("module_utils.kai.identify", "module_utils.kai.facts"),
        ("modules.kai_gpu_access_plan", "module_utils.gpu_access.runner"),
        ("filter.serial", "module_utils.rollout.change"),
        ("module_utils.rollout.runner", "module_utils.rollout.client"),
    ],
)
def test_a_good_arrow_passes(arrow):
    assert broken([arrow]) == []
