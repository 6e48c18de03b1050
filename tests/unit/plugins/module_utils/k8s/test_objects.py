"""module_utils/k8s/objects.py: grouping objects by a key keeps their order and skips no key; times
read as the API server writes them, and as people do, are aware and comparable."""

from datetime import datetime, timezone

from ansible_collections.kaiops.runbooks.plugins.module_utils.k8s.objects import (
    group_by,
    parse_time,
)


def test_group_by_keeps_each_groups_order_and_leaves_out_a_none_key():
    pods = [{"n": "a", "g": "x"}, {"n": "b", "g": None}, {"n": "c", "g": "y"}, {"n": "d", "g": "x"}]
    grouped = group_by(pods, lambda p: p["g"])
    assert {k: [p["n"] for p in v] for k, v in grouped.items()} == {"x": ["a", "d"], "y": ["c"]}
    assert group_by(None, lambda p: p) == {}


def test_parse_time_returns_aware_times_that_compare_whatever_the_spelling():
    utc = datetime(2026, 12, 7, 21, 0, 0, tzinfo=timezone.utc)
    # As the API server writes it, with fractions (eventTime), with an offset, with no zone
    # (read as UTC, Kubernetes' zone) and padded: one instant, and each compares with the others.
    assert parse_time("2026-12-07T21:00:00Z") == utc
    assert parse_time("2026-12-07T21:00:00.000000Z") == utc
    assert parse_time("2026-12-07T22:00:00+01:00") == utc
    assert parse_time("2026-12-07T21:00:00") == utc
    assert parse_time(" 2026-12-07T21:00:00Z\n") == utc
    assert all(parse_time(t).tzinfo for t in ("2026-12-07T21:00:00", "2026-12-07T21:00:00.5"))
    assert [parse_time(t) for t in (None, "", "yesterday", "2026-13-40T00:00:00Z")] == [None] * 4
