"""kai/identify: what runs, read from the components, and every disagreement named."""

import pytest
from fakeapi import FakeClient

from ansible_collections.kaiops.runbooks.plugins.module_utils.errors import KaiopsError
from ansible_collections.kaiops.runbooks.plugins.module_utils.kai import identify as I

COMPONENTS = (
    "admission",
    "binder",
    "kai-scheduler-default",
    "pod-grouper",
    "podgroup-controller",
    "queue-controller",
)


def deployment(name, tag, rolled=True, owner=True, image=None):
    meta = {"name": name, "generation": 2, "labels": {}}
    if owner:
        meta["ownerReferences"] = [
            {"kind": "Config", "name": "kai-config", "controller": True, "apiVersion": "v1"}
        ]
        meta["labels"]["app.kubernetes.io/managed-by"] = "kai-operator"
    status = {"observedGeneration": 2 if rolled else 1, "replicas": 1}
    status.update({"updatedReplicas": 1, "availableReplicas": 1, "readyReplicas": 1})
    return {
        "metadata": meta,
        "spec": {
            "replicas": 1,
            "template": {
                "spec": {
                    "containers": [{"name": name, "image": image or "reg/kai/%s:%s" % (name, tag)}]
                }
            },
        },
        "status": status,
    }


def config(tag, generation=3, observed=3, ready="True"):
    conditions = [
        {"type": t, "status": ready, "reason": t.lower(), "observedGeneration": observed}
        for t in I.CONFIG_CONDITIONS
    ]
    return {
        "metadata": {"name": "kai-config", "generation": generation},
        "spec": {
            "binder": {"service": {"image": {"tag": tag}}},
            "scheduler": {"service": {"image": {"tag": tag}}},
            "admission": {"gpuSharing": True},
        },
        "status": {"conditions": conditions},
    }


def install(component_tag, operator_tag=None, cfg=None, rolled=True):
    deps = [deployment(n, component_tag, rolled=rolled) for n in COMPONENTS]
    deps.append(deployment("kai-operator", operator_tag or component_tag, owner=False))
    return deps, cfg if cfg is not None else config(component_tag)


HELM_OLD = {"status": "deployed", "revision": 5, "chart": "kai-scheduler-v1", "app_version": "v1"}


def test_an_agreeing_install_is_rolled_out_with_no_findings():
    deps, cfg = install("v2")
    ident = I.analyse(deps, cfg, helm=dict(HELM_OLD, app_version="v2+standin"))
    assert ident["version"] == "v2" and ident["findings"] == [] and not ident["split"]
    assert ident["all_rolled_out"]
    assert I.rolled_out(ident, "v2") == (True, [])
    assert ident["config"]["tags"] == {
        "binder.service.image": "v2",
        "scheduler.service.image": "v2",
    }


def test_helm_rollback_to_an_upgrade_revision_is_a_split():
    # Contract section 14: helm and the operator went back to v1, kai-config and every
    # component still run v2.
    deps, cfg = install("v2", operator_tag="v1")
    ident = I.analyse(deps, cfg, helm=HELM_OLD)
    assert "helm says v1, binder runs v2: split" in ident["findings"]
    assert "operator runs v1, binder runs v2: split" in ident["findings"]
    ok, reasons = I.rolled_out(ident, "v1")
    assert not ok and "binder runs v2" in reasons


def test_conditions_of_an_older_generation_are_not_rolled_out():
    # The operator has not reconciled the Config the hook just applied: the components may
    # still be the old ones, whatever helm says.
    deps, _cfg = install("v1")
    ident = I.analyse(deps, config("v1", generation=4, observed=3))
    assert not ident["all_rolled_out"]
    ok, reasons = I.rolled_out(ident, "v1")
    assert not ok
    assert reasons == ["kai-config's conditions are not current for generation 4"]


@pytest.mark.parametrize(
    "cfg, reason",
    [
        ({}, "kai-config not found (the operator has nothing to reconcile)"),
        (config("v1", ready="False"), "kai-config is not Available and Ready"),
        (config("v2"), "kai-config names v2"),
    ],
)
def test_operator_install_needs_its_config(cfg, reason):
    deps, _cfg = install("v1")
    ident = I.analyse(deps, cfg or None)
    ok, reasons = I.rolled_out(ident, "v1")
    assert not ok and reason in reasons


def test_one_component_behind_is_named():
    deps, cfg = install("v2")
    deps[0] = deployment("admission", "v1")
    ident = I.analyse(deps, cfg)
    assert "binder runs v2, admission runs v1: split" in ident["findings"]
    ok, reasons = I.rolled_out(ident, "v2")
    assert reasons == ["admission runs v1"]


def test_a_rolling_component_is_not_rolled_out():
    deps, cfg = install("v2", rolled=False)
    ok, reasons = I.rolled_out(I.analyse(deps, cfg), "v2")
    assert not ok and "binder is rolling out (1/1 ready)" in reasons


def test_a_failed_release_is_named_with_the_fix():
    deps, cfg = install("v2")
    ident = I.analyse(deps, cfg, helm=dict(HELM_OLD, status="failed", app_version="v2"))
    assert any("is failed at revision 5" in f and "uninstall" in f for f in ident["findings"])


def test_a_chart_without_operator_needs_no_conditions():
    deps = [deployment(n, "v1", owner=False) for n in COMPONENTS]
    ident = I.analyse(deps, {"metadata": {"generation": 1}, "spec": {}})
    assert ident["operator"] is None and ident["all_rolled_out"]
    assert I.rolled_out(ident, "v1") == (True, [])


def test_wait_reads_until_rolled_out_and_measures_on_the_clock():
    states = [install("v1"), install("v2", cfg=config("v2", observed=2)), install("v2")]
    now = [0.0]

    class Client:
        def __init__(self):
            self.reads = 0

        def list(self, *a, **k):
            return states[min(self.reads, 2)][0]

        def read(self, *a, **k):
            cfg = states[min(self.reads, 2)][1]
            self.reads += 1
            return cfg

        def server_version(self):
            return {"gitVersion": "v1.35.4"}

    ident, took, ok, reasons = I.wait_rolled_out(
        Client(),
        "kai-scheduler",
        "v2",
        30,
        clock=lambda: now[0],
        sleep=lambda s: now.__setitem__(0, now[0] + 5),
    )
    assert ok and took == 10.0 and ident["version"] == "v2" and reasons == []


def test_wait_gives_up_at_the_bound_with_the_reasons():
    deps, cfg = install("v1")

    class Client:
        def list(self, *a, **k):
            return deps

        def read(self, *a, **k):
            return cfg

        def server_version(self):
            return {}

    now = [0.0]
    _ident, took, ok, reasons = I.wait_rolled_out(
        Client(),
        "kai-scheduler",
        "v2",
        12,
        clock=lambda: now[0],
        sleep=lambda s: now.__setitem__(0, now[0] + s),
    )
    assert not ok and took == 12.0 and "binder runs v1" in reasons


def test_wait_reads_again_after_a_failed_read_only_when_asked():
    from ansible_collections.kaiops.runbooks.plugins.module_utils.errors import KaiopsError

    deps, cfg = install("v2")

    class Client:
        def __init__(self):
            self.calls = 0

        def list(self, *a, **k):
            self.calls += 1
            if self.calls == 1:  # the API server busy mid-upgrade, once
                raise KaiopsError("Failed to list Deployments: connection refused")
            return deps

        def read(self, *a, **k):
            return cfg

        def server_version(self):
            return {}

    def wait(**kw):
        now = [0.0]
        return I.wait_rolled_out(
            Client(),
            "kai-scheduler",
            "v2",
            30,
            clock=lambda: now[0],
            sleep=lambda s: now.__setitem__(0, now[0] + 1),
            **kw,
        )

    with pytest.raises(KaiopsError):
        wait()
    ident, took, ok, reasons = wait(read_errors_retried=True)
    assert ok and took == 1.0 and ident["version"] == "v2" and reasons == []


@pytest.mark.parametrize(
    ("image", "expected"),
    [
        (
            "ghcr.io/kai-scheduler/kai-scheduler/binder:v0.16.13",
            ("ghcr.io/kai-scheduler/kai-scheduler/binder", "v0.16.13", None),
        ),
        ("localhost:5000/binder:v1", ("localhost:5000/binder", "v1", None)),
        ("localhost:5000/binder", ("localhost:5000/binder", None, None)),
        ("binder@sha256:abc", ("binder", None, "sha256:abc")),
        ("binder:v1@sha256:abc", ("binder", "v1", "sha256:abc")),
        (None, ("", None, None)),
    ],
)
def test_image_tag_splits_reference(image, expected):
    assert I.image_tag(image) == expected


def test_the_implementation_is_what_the_containers_run_not_a_label():
    deps, cfg = install("v2")
    assert I.analyse(deps, cfg, helm=HELM_OLD)["implementation_label"] == "KAI"
    # the stand-in starts every container with its own flag
    for dep in deps:
        dep["spec"]["template"]["spec"]["containers"][0]["args"] = ["--standin-release=v2"]
    assert I.analyse(deps, cfg, helm=HELM_OLD)["implementation"] == "standin"
    # KAI's operator keeps labels it does not own: the real KAI installed over the stand-in ran
    # its own images under the stand-in's label on the lab; that is KAI
    deps, cfg = install("v2")
    for dep in deps:
        dep["metadata"]["labels"]["kaiops.dev/kai-implementation"] = "standin"
    ident = I.analyse(deps, cfg, helm=HELM_OLD)
    assert (ident["implementation"], ident["implementation_label"]) == ("kai", "KAI")


def test_a_faulted_stand_in_says_which_faults_it_plays():
    # issue 22: every report that ran on a faulted build says which fault
    deps, cfg = install("v2")
    for dep in deps:
        dep["spec"]["template"]["spec"]["containers"][0]["args"] = [
            "--standin-release=v2",
            "--standin-faults=gang-broken,api-unauthorized",
        ]
    ident = I.analyse(deps, cfg, helm=HELM_OLD)
    assert ident["faults"] == ["api-unauthorized", "gang-broken"]
    assert ident["implementation_label"] == (
        "KAI stand-in with faults: api-unauthorized, gang-broken"
    )
    for dep in deps:  # the healthy build is started with the flag and no fault
        dep["spec"]["template"]["spec"]["containers"][0]["args"] = [
            "--standin-release=v2",
            "--standin-faults=",
        ]
    ident = I.analyse(deps, cfg, helm=HELM_OLD)
    assert (ident["faults"], ident["implementation_label"]) == ([], "KAI stand-in")


WEBHOOK_API = "admissionregistration.k8s.io/v1"


def webhook_configuration(kind, service_namespace="kai-scheduler", policy="Fail"):
    return {
        "apiVersion": WEBHOOK_API,
        "kind": kind,
        "metadata": {"name": kind.lower()},
        "webhooks": [
            {
                "name": "admission.kai-scheduler.svc",
                "failurePolicy": policy,
                "clientConfig": {"service": {"namespace": service_namespace, "name": "admission"}},
            }
        ],
    }


def endpoint_slice(*ready, service="admission"):
    return {
        "apiVersion": "discovery.k8s.io/v1",
        "kind": "EndpointSlice",
        "metadata": {
            "name": service + "-abcde",
            "namespace": "kai-scheduler",
            "labels": {"kubernetes.io/service-name": service},
        },
        "endpoints": [{"addresses": ["10.0.0.9"], "conditions": {"ready": r}} for r in ready],
    }


def hooks_client(*objects):
    deps, cfg = install("v2")
    for d in deps:
        d.update(apiVersion="apps/v1", kind="Deployment")
        d["metadata"]["namespace"] = "kai-scheduler"
    cfg.update(apiVersion="kai.scheduler/v1", kind="Config")
    return FakeClient(objects=deps + [cfg] + list(objects))


def test_a_webhook_with_no_ready_endpoint_is_not_rolled_out():
    # After a switch of version the admission pod is Ready before the EndpointSlice says so:
    # with failurePolicy Fail every pod it admits is refused meanwhile, so KAI is not rolled out.
    client = hooks_client(
        webhook_configuration("MutatingWebhookConfiguration"),
        webhook_configuration("ValidatingWebhookConfiguration", policy="Ignore"),
        endpoint_slice(False),
    )
    ident = I.identify(client, "kai-scheduler")
    assert [h["ready_endpoints"] for h in ident["webhooks"]] == [0, 0]
    assert not ident["all_rolled_out"]
    ok, reasons = I.rolled_out(ident, "v2")
    assert not ok and reasons == [
        "webhook admission.kai-scheduler.svc has no ready endpoint behind Service "
        "kai-scheduler/admission (failurePolicy Fail)",
        "webhook admission.kai-scheduler.svc has no ready endpoint behind Service "
        "kai-scheduler/admission (failurePolicy Ignore)",
    ]


@pytest.mark.parametrize("ready", [True, None])
def test_a_ready_endpoint_makes_the_webhook_ready(ready):
    # An unset ready condition is read as ready, as the EndpointSlice API says.
    client = hooks_client(
        webhook_configuration("MutatingWebhookConfiguration"), endpoint_slice(False, ready)
    )
    ident = I.identify(client, "kai-scheduler")
    assert ident["webhooks"] == [
        {
            "configuration": "MutatingWebhookConfiguration/mutatingwebhookconfiguration",
            "webhook": "admission.kai-scheduler.svc",
            "service": "kai-scheduler/admission",
            "failure_policy": "Fail",
            "ready_endpoints": 1,
        }
    ]
    assert ident["all_rolled_out"] and I.rolled_out(ident, "v2") == (True, [])


def test_webhooks_of_other_namespaces_and_unserved_apis_are_not_kais():
    other = hooks_client(
        webhook_configuration("MutatingWebhookConfiguration", service_namespace="gpu-operator")
    )
    assert I.identify(other, "kai-scheduler")["webhooks"] == []
    # An API server that serves no webhook configurations calls no webhook.
    bare = hooks_client()
    bare.served.discard(WEBHOOK_API)
    assert I.identify(bare, "kai-scheduler")["webhooks"] == []


def test_an_unreadable_webhook_configuration_fails_the_reading():
    # No data never passes: a 403 on the webhooks is an error, not "no webhook".
    client = hooks_client()
    client.forbidden.add((WEBHOOK_API, "MutatingWebhookConfiguration"))
    with pytest.raises(KaiopsError):
        I.identify(client, "kai-scheduler")
