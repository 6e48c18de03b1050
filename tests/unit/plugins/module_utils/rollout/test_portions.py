"""rollout/portions: what each GPU device was given at once, from the verification's watches."""

from ansible_collections.kaiops.runbooks.plugins.module_utils.rollout import portions as PT
from ansible_collections.kaiops.runbooks.plugins.module_utils.rollout import probes as P

NS = "kaiops-rollout-rollback-1"
GROUPS = {"g-first": "GPU-326d", "g-retry": "GPU-a424"}


def pod(t, name, group, node="kwok-gpu-0", phase="Running"):
    obj = {
        "metadata": {
            "name": name,
            "namespace": NS,
            "labels": {"runai-gpu-group": group},
            "annotations": {"gpu-fraction": "0.5"},
        },
        "spec": {"nodeName": node},
        "status": {"phase": phase},
    }
    return {"t": t, "type": "MODIFIED", "object": obj}


def bindrequest(name, group, phase):
    return {
        "metadata": {"name": name, "namespace": NS},
        "spec": {
            "podName": name,
            "selectedGPUGroups": [group],
            "receivedGPU": {"count": 1, "portion": "0.50"},
        },
        "status": {"phase": phase},
    }


def reservation(group, device):
    return {
        "metadata": {
            "name": "gpu-reservation-" + group,
            "labels": {"runai-gpu-group": group},
            "annotations": {"run.ai/reserve_for_gpu_index": device},
        },
        "spec": {"nodeName": "kwok-gpu-0"},
    }


RESERVATIONS = [reservation(g, d) for g, d in GROUPS.items()]


def test_a_pod_bound_on_its_retry_counts_on_the_retry_s_device_not_its_label_s():
    # Real KAI, 2026-12-07: probe-00's first bind in g-first failed, the retry bound it in
    # g-retry (another device), and the pod kept g-first's label; probe-01 and probe-07 hold
    # g-first. Each device held 1.0 at most; by the label alone g-first had 1.5.
    records = [
        pod(1.0, "probe-01", "g-first"),
        pod(2.0, "probe-00", "g-first"),
        pod(2.1, "probe-07", "g-first"),
    ]
    brs = [
        {"t": 1.5, "type": "MODIFIED", "object": bindrequest("probe-00", "g-first", "Failed")},
        {"t": 1.6, "type": "DELETED", "object": bindrequest("probe-00", "g-first", "Failed")},
        {"t": 1.7, "type": "ADDED", "object": bindrequest("probe-00", "g-retry", "Succeeded")},
        bindrequest("probe-01", "g-first", "Succeeded"),
        bindrequest("probe-07", "g-first", "Succeeded"),
    ]
    out = PT.device_portions(records, brs, RESERVATIONS)
    assert out["max"] == 1.0 and out["over"] == []
    assert out["max_device"] == "kwok-gpu-0/GPU-326d"
    assert out["max_pods"] == ["probe-01", "probe-07"]


def test_three_halves_in_one_group_are_over_one_gpu():
    # The gate still sees a device given more than one GPU (KAI-Scheduler #2153).
    records = [pod(1.0, n, "g-first") for n in ("probe-00", "probe-01", "probe-07")]
    brs = [bindrequest(n, "g-first", "Succeeded") for n in ("probe-00", "probe-01", "probe-07")]
    out = PT.device_portions(records, brs, RESERVATIONS)
    assert out["max"] == 1.5
    assert [o["device"] for o in out["over"]] == ["kwok-gpu-0/GPU-326d"]


def test_without_a_successful_bindrequest_the_label_places_the_pod():
    records = [pod(1.0, n, "g-first") for n in ("probe-00", "probe-01", "probe-07")]
    brs = [bindrequest("probe-00", "g-retry", "Failed")]
    assert PT.device_portions(records, brs, RESERVATIONS)["max"] == 1.5


def _retried_probe():
    """probe-00: its first bind in g-first failed, the retry bound it in g-retry, and the pod
    kept g-first's label (real KAI, 2026-12-07)."""
    records = [dict(pod(2.0, "probe-00", "g-first"), at="2026-12-07T05:00:02Z")]
    brs = [
        {"t": 1.5, "type": "MODIFIED", "object": bindrequest("probe-00", "g-first", "Failed")},
        {"t": 1.7, "type": "ADDED", "object": bindrequest("probe-00", "g-retry", "Succeeded")},
    ]
    for n, rec in enumerate(brs):
        rec["at"] = "2026-12-07T05:00:01.%dZ" % (5 + 2 * n)
    return records, brs


def test_the_probes_groups_are_their_labels_and_every_group_their_bindrequests_selected():
    records, brs = _retried_probe()
    # a reservation the retry made in g-retry is checked for leftovers too
    assert P.probe_groups(records, {"probe-00"}, brs) == {"g-first", "g-retry"}
    assert P.probe_groups(records, {"probe-01"}, brs) == set()


def test_a_group_is_in_use_by_a_live_pod_s_successful_bindrequest_as_by_its_label():
    records, brs = _retried_probe()
    live = [records[0]["object"]]
    assert P.groups_in_use(live, "kai-resource-reservation", brs) == {"g-first", "g-retry"}
    assert P.groups_in_use(live, "kai-resource-reservation") == {"g-first"}


def test_a_probe_row_names_the_group_its_successful_bindrequest_bound_it_in():
    records, brs = _retried_probe()
    state = {"name": "probe-00", "kind": "fraction", "submitted_t": 1.0}
    row = P._probe_row(state, records, brs, {}, {})
    assert row["gpu_group"] == "g-retry"
    assert P._probe_row(state, records, brs[:1], {}, {})["gpu_group"] == "g-first"
