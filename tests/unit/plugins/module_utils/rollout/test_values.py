"""rollout/values.py and the filter upgrade_values: the rollout's upgrade keeps the values the
release was given (KAI's chart turns GPU sharing off by default), names the version under test
where they named the version that ran, and the request's values win key by key."""

from conftest import PATCHED, PRE

from ansible_collections.kaiops.runbooks.plugins.filter.upgrade_values import FilterModule
from ansible_collections.kaiops.runbooks.plugins.module_utils.rollout.values import upgrade_values

GIVEN = {
    "global": {"gpuSharing": True, "registry": "mirror.example/kai", "tag": PRE},
    "binder": {"image": {"tag": PRE}, "resources": {"limits": {"cpu": "1"}}},
    "scheduler": {"args": ["--v=2", PRE]},
}


def test_the_release_values_are_kept_and_the_old_version_becomes_the_new_one():
    out = upgrade_values(GIVEN, {}, PRE, PATCHED)
    assert out["values"]["global"] == {
        "gpuSharing": True,
        "registry": "mirror.example/kai",
        "tag": PATCHED,
    }
    assert out["values"]["binder"] == {
        "image": {"tag": PATCHED},
        "resources": {"limits": {"cpu": "1"}},
    }
    assert out["values"]["scheduler"]["args"] == ["--v=2", PATCHED]
    assert out["repointed"] == ["binder.image.tag", "global.tag", "scheduler.args.1"]
    assert GIVEN["global"]["tag"] == PRE  # the release's values are not changed in place


def test_the_request_values_win_key_by_key():
    requested = {"global": {"registry": "ghcr.io/kai-scheduler/kai-scheduler", "tag": "custom"}}
    out = upgrade_values(GIVEN, requested, PRE, PATCHED)
    assert out["values"]["global"] == {
        "gpuSharing": True,
        "registry": "ghcr.io/kai-scheduler/kai-scheduler",
        "tag": "custom",
    }
    assert out["values"]["binder"]["resources"] == {"limits": {"cpu": "1"}}


def test_no_values_read_gives_the_request_values_and_no_version_repoints_nothing():
    assert upgrade_values(None, {"global": {"gpuSharing": True}}, PRE, PATCHED) == {
        "values": {"global": {"gpuSharing": True}},
        "repointed": [],
    }
    assert upgrade_values(GIVEN, {}, "", PATCHED)["values"] == GIVEN


def test_the_filter_is_the_function():
    assert FilterModule().filters()["upgrade_values"] is upgrade_values
