"""module_utils/k8s/objects.py: grouping objects by a key keeps their order and skips no key."""

from ansible_collections.kaiops.runbooks.plugins.module_utils.k8s.objects import group_by


def test_group_by_keeps_each_groups_order_and_leaves_out_a_none_key():
    pods = [{"n": "a", "g": "x"}, {"n": "b", "g": None}, {"n": "c", "g": "y"}, {"n": "d", "g": "x"}]
    grouped = group_by(pods, lambda p: p["g"])
    assert {k: [p["n"] for p in v] for k, v in grouped.items()} == {"x": ["a", "d"], "y": ["c"]}
    assert group_by(None, lambda p: p) == {}
