"""module_utils/versions.py: pure, parametrised over fixtures/versions.yml; the release facts."""

import pytest
import yaml
from conftest import AFFECTED_RANGE, RELEASES, fixture_path

from ansible_collections.kaiops.runbooks.plugins.module_utils.errors import KaiopsError
from ansible_collections.kaiops.runbooks.plugins.module_utils.versions import (
    in_range,
    parse_range,
    parse_version,
)

with open(fixture_path("versions.yml")) as _handle:
    VERSION_CASES = [
        [v, AFFECTED_RANGE if spec == "affected" else spec, expected]
        for v, spec, expected in yaml.safe_load(_handle)
    ]


@pytest.mark.parametrize(
    ("version", "spec", "expected"),
    VERSION_CASES,
    ids=["%s %s" % (c[0], c[1]) for c in VERSION_CASES],
)
def test_in_range_matches_fixture(version, spec, expected):
    assert in_range(version, spec) is expected


@pytest.mark.parametrize(
    "row", RELEASES["releases"], ids=[r["version"] for r in RELEASES["releases"]]
)
def test_release_facts_affected_range_is_exactly_the_exposed_releases(row):
    # meta/kai_releases.yml keeps the range and the per-release behaviour side by side: a release
    # is in the range exactly when its ConfigMap write is the exposed one.
    exposed = RELEASES["behaviours"][row["configmap_write"]]["exposed"]
    assert in_range(row["version"], AFFECTED_RANGE) is exposed


def test_release_facts_pair_is_the_last_exposed_release_and_the_fix():
    rows = {r["version"]: r for r in RELEASES["releases"]}
    pre, patched = RELEASES["pair"]["pre"], RELEASES["pair"]["patched"]
    assert in_range(pre, AFFECTED_RANGE) is True
    assert in_range(patched, AFFECTED_RANGE) is False
    assert RELEASES["behaviours"][rows[patched]["configmap_write"]]["exposed"] is False


def test_parse_version_orders_prerelease_before_release():
    assert parse_version("v0.16.14-rc.1") < parse_version("v0.16.14") < parse_version("v0.16.15")


def test_parse_version_ignores_fips_build_suffix():
    assert parse_version("v0.16.13-fips") == parse_version("v0.16.13")


@pytest.mark.parametrize(
    "spec",
    ["", "  ", "0.16.9", ">=0.16.9;<0.16.14", ">=x.y", "=>0.16.9", ">=0.16.9,", "~0.16", None],
)
def test_parse_range_rejects_malformed(spec):
    with pytest.raises(KaiopsError) as info:
        parse_range(spec)
    assert info.value.msg.startswith("Failed to parse version range")
    assert info.value.status == "invalid_input"


def test_parse_range_names_the_bad_clause():
    with pytest.raises(KaiopsError, match="clause '<0.16.x'"):
        parse_range(">=0.16.9,<0.16.x")
