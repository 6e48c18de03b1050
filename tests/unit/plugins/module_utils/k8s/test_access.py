"""module_utils/access.py: an optional read records ok / forbidden / the not-found label."""

import pytest

from ansible_collections.kaiops.runbooks.plugins.module_utils.errors import KaiopsError
from ansible_collections.kaiops.runbooks.plugins.module_utils.k8s.access import (
    Reads,
    read_optional,
)


def _raise(status):
    def read():
        raise KaiopsError("Failed to read x: HTTP", status=status)

    return read


@pytest.mark.parametrize(
    ("status", "label"),
    [("forbidden", "forbidden"), ("unauthorized", "forbidden"), ("not_found", "absent")],
)
def test_read_optional_records_refusal_and_returns_none(status, label):
    access = {}
    assert read_optional(access, "nodes", _raise(status), not_found="absent") is None
    assert access == {"nodes": label}


def test_read_optional_not_found_label_is_the_callers():
    access = {}
    read_optional(access, "bind_requests", _raise("not_found"), not_found="not_served")
    assert access == {"bind_requests": "not_served"}


def test_read_optional_ok_returns_the_value():
    access = {}
    assert read_optional(access, "pods", lambda: [1], not_found="absent") == [1]
    assert access == {"pods": "ok"}


@pytest.mark.parametrize("status", ["unreachable", "error", "invalid_input"])
def test_read_optional_other_failures_raise(status):
    access = {}
    with pytest.raises(KaiopsError):
        read_optional(access, "pods", _raise(status), not_found="absent")
    assert access == {}


def test_reads_pass_the_arguments_and_record_each_section_in_one_access():
    reads = Reads(not_found="not_served", access={"pods": "ok"})
    assert reads.optional("nodes", lambda *a, **kw: (a, kw), "v1", "Node", namespace="x") == (
        ("v1", "Node"),
        {"namespace": "x"},
    )
    assert reads.optional("queues", _raise("not_found")) is None
    assert reads.access == {"pods": "ok", "nodes": "ok", "queues": "not_served"}
