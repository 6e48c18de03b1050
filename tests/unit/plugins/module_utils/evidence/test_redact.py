"""module_utils/evidence/redact.py through the collection's policy (bundle/policy.py): object
rules and key rules (the value rules and the rest of the policy: test_redact_rules.py)."""

import pytest

from ansible_collections.kaiops.runbooks.plugins.module_utils.bundle.policy import (
    Redactor,
    redact_values,
    sanitize_object,
)
from ansible_collections.kaiops.runbooks.plugins.module_utils.evidence.redact import (
    LAST_APPLIED,
    is_redacted,
    marker,
)


def secret(**extra):
    obj = {
        "apiVersion": "v1",
        "kind": "Secret",
        "type": "Opaque",
        "metadata": {
            "name": "s",
            "namespace": "n",
            "annotations": {LAST_APPLIED: '{"data":{"password":"aHVudGVyMg=="}}'},
            "managedFields": [{"manager": "kubectl"}],
        },
        "data": {"password": "aHVudGVyMg=="},
        "stringData": {"token": "plain"},
    }
    obj.update(extra)
    return obj


def test_sanitize_object_drops_secret_data_and_last_applied():
    clean, removed = sanitize_object(secret())
    assert "data" not in clean and "stringData" not in clean
    assert LAST_APPLIED not in clean["metadata"]["annotations"]
    assert "managedFields" not in clean["metadata"]
    assert set(removed) == {"data", "stringData", "metadata.annotations." + LAST_APPLIED}
    assert "aHVudGVyMg" not in repr(clean)


def test_sanitize_object_does_not_mutate_input():
    obj = secret()
    sanitize_object(obj)
    assert obj["data"] == {"password": "aHVudGVyMg=="}


def test_sanitize_object_keeps_gpu_sharing_configmap_data():
    # Issue 15: only GPU-sharing ConfigMaps keep their values (this one by name).
    cm = {
        "kind": "ConfigMap",
        "metadata": {"name": "c-shared-gpu-0"},
        "data": {"GPU_PORTION": "0.5"},
    }
    clean, removed = sanitize_object(cm)
    assert clean["data"] == {"GPU_PORTION": "0.5"} and removed == []


def test_sanitize_object_reduces_helm_v2_release_configmap():
    cm = {
        "kind": "ConfigMap",
        "metadata": {"name": "r.v1", "labels": {"OWNER": "TILLER"}},
        "data": {"release": "H4sI..."},
    }
    clean, removed = sanitize_object(cm)
    assert "data" not in clean and removed == ["data"]


def test_sanitize_object_blanks_secret_looking_env_in_pod_templates():
    dep = {
        "kind": "Deployment",
        "metadata": {"name": "d"},
        "spec": {
            "template": {
                "spec": {
                    "containers": [
                        {
                            "name": "c",
                            "env": [
                                {"name": "DB_PASSWORD", "value": "hunter2"},
                                {"name": "LOG_LEVEL", "value": "info"},
                                {
                                    "name": "API_TOKEN",
                                    "valueFrom": {"secretKeyRef": {"name": "x", "key": "t"}},
                                },
                            ],
                        }
                    ]
                }
            }
        },
    }
    clean, removed = sanitize_object(dep)
    env = clean["spec"]["template"]["spec"]["containers"][0]["env"]
    assert env[0]["value"] == marker("hunter2") and env[1]["value"] == "info"
    assert "valueFrom" in env[2]
    assert removed == ["env c/DB_PASSWORD"]


def test_sanitize_object_drops_token_request_token():
    clean, removed = sanitize_object({"kind": "TokenRequest", "status": {"token": "ey..."}})
    assert clean["status"] == {} and removed == ["status.token"]


@pytest.mark.parametrize(
    "key",
    [
        "password",
        "db_password",
        "api_key",
        "API-KEY",
        "token",
        "aws_secret_access_key",
        "client-key-data",
        "credentials",
        "private_key",
        "ssh_key",
        "Authorization",
    ],
)
def test_redactor_redacts_secret_looking_keys(key):
    assert redact_values({key: "value"}) == {key: marker("value")}


@pytest.mark.parametrize(
    "key",
    ["kubeconfig", "namespace", "keys", "monkey", "gpu_sharing", "kai_inventory_context", "name"],
)
def test_redactor_keeps_ordinary_keys(key):
    assert redact_values({key: "value"}) == {key: "value"}


def test_redactor_walks_nested_structures_and_embedded_secrets():
    value = {"results": [{"item": {"password": "x"}}, secret()], "flag": {"token": True}}
    out = redact_values(value)
    assert is_redacted(out["results"][0]["item"]["password"])
    assert "data" not in out["results"][1]
    assert out["flag"]["token"] is True  # flags are not secrets


def test_redactor_custom_pattern():
    assert Redactor(r"(?i)^pin$").redact({"pin": "1234", "password": "x"}) == {
        "pin": marker("1234"),
        "password": "x",
    }
