"""module_utils/evidence/redact.py through the collection's policy (bundle/policy.py): object
rules and key rules, then the value rules and the rest of the policy (the second part below)."""

import json
import secrets

import pytest
import yaml
from conftest import fixture_path

from ansible_collections.kaiops.runbooks.plugins.module_utils.bundle.policy import (
    DEFAULT_POLICY,
    Redactor,
    policy_for,
    redact_text,
    redact_values,
    sanitize_object,
)
from ansible_collections.kaiops.runbooks.plugins.module_utils.bundle.report import write_report
from ansible_collections.kaiops.runbooks.plugins.module_utils.evidence.redact import (
    LAST_APPLIED,
    RedactionPolicy,
    has_redaction,
    is_redacted,
    looks_high_entropy,
    marker,
)
from ansible_collections.kaiops.runbooks.plugins.module_utils.evidence.writer import (
    EvidenceWriter,
)
from ansible_collections.kaiops.runbooks.plugins.module_utils.kai.facts import (
    is_gpu_sharing_configmap,
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


# -------------------------------------------------------------------------------------------------
# module_utils/evidence/redact.py and the collection's policy over it (bundle/policy.py): the
# value rules over YAML cases, markers, lists of args, env, ConfigMaps, embedded objects, the false
# positives issue 15 and issue 16 (item 8) name, and the writers that apply the one policy
# (EvidenceWriter, the report writer).


# The fixture spells PEM key markers PRIV@TE so that no file in git looks like a committed key;
# the cases get the real marker at load time.
with open(fixture_path("redact_cases.yml")) as _handle:
    CASES = yaml.safe_load(_handle.read().replace("PRIV@TE", "PRIV" + "ATE"))


def fresh_secret():
    """Lower case and digits: a case passes by its own rule, never by the entropy rule."""
    return "s" + secrets.token_hex(12)


# ------------------------------------------------------------------ the value rules, as data


@pytest.mark.parametrize("case", CASES["secret"], ids=[c["id"] for c in CASES["secret"]])
def test_value_rule_redacts_secret(case):
    secret = fresh_secret()
    text = case["text"].replace("SECRET", secret)
    out = redact_text(text)
    assert secret not in out, out
    for gone in case.get("gone", []):
        assert gone not in out, out
    for kept in case.get("keep", []):
        assert kept in out, out
    assert has_redaction(out), out
    assert redact_text(out) == out  # applying the policy twice changes nothing


@pytest.mark.parametrize("case", CASES["not_secret"], ids=[c["id"] for c in CASES["not_secret"]])
def test_value_rule_keeps_what_is_not_secret(case):
    assert redact_text(case["text"]) == case["text"]
    assert DEFAULT_POLICY.redact({"value": case["text"]}) == {"value": case["text"]}


def test_url_password_keeps_scheme_user_and_host():
    out = redact_text("postgres://app:hunter2hunter2@db.internal:5432/app?sslmode=require")
    assert out == "postgres://app:%s@db.internal:5432/app?sslmode=require" % marker(
        "hunter2hunter2"
    )


# ------------------------------------------------------------------ markers


@pytest.mark.parametrize(
    "length, size", [(1, 8), (8, 8), (9, 16), (32, 32), (33, 64), (100, 128), (1000, 1024)]
)
def test_marker_keeps_length_class(length, size):
    assert marker("x" * length).startswith("<redacted len~%d sha256:" % size)


def test_marker_is_a_short_stable_hash_so_runs_compare():
    first, again, other = marker("hunter2"), marker("hunter2"), marker("hunter3")
    assert first == again != other
    assert first == "<redacted len~8 sha256:f52fbd32>"
    assert is_redacted(first) and not is_redacted("hunter2")
    assert marker({"a": 1}) == marker('{"a": 1}')  # structures: their canonical JSON


@pytest.mark.parametrize(
    "token, expected",
    [
        ("xVy1eVQ0JFcyI3C9ZnEp5Ta0xHNWgOrSEaAupVw62OM", True),
        ("e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855", False),
        ("GPU-1a2b3c4d-1111-2222-3333-444455556666", False),
        ("abcdefghijklmnopqrstuvwxyzabcdefghij", False),  # one case, no digits
        ("Ab1Ab1Ab1Ab1Ab1Ab1Ab1Ab1Ab1Ab1Ab1Ab1", False),  # long, but low entropy
        ("xVy1eVQ0JFcyI3C9", False),  # too short
    ],
)
def test_looks_high_entropy(token, expected):
    assert looks_high_entropy(token) is expected


# ------------------------------------------------------------------ args and command lists


def test_args_list_redacts_the_value_after_a_secret_flag():
    secret = fresh_secret()
    args = [
        "binder",
        "--api-token",
        secret,
        "--fake-gpu-nodes",
        "--password=" + secret,
        "--qps",
        "50",
    ]
    out = DEFAULT_POLICY.redact({"args": args})["args"]
    assert secret not in json.dumps(out)
    assert out[:2] == ["binder", "--api-token"] and is_redacted(out[2])
    assert out[3] == "--fake-gpu-nodes" and out[5:] == ["--qps", "50"]
    assert out[4] == "--password=" + marker(secret)


def test_args_list_keeps_kai_verdict_flags():
    args = [
        "--scheduler-name",
        "kai-scheduler",
        "--resource-reservation-namespace",
        "kai-resource-reservation",
        "--plugins",
        '{"gpusharing":{"arguments":{"cdiEnabled":"false"},"enabled":true}}',
        "--fake-gpu-nodes",
        "--standin-configmap-write=race-fix-guarded",
        "--webhook-secret-name",
        "kai-admission-tls",
    ]
    assert DEFAULT_POLICY.redact({"args": args}) == {"args": args}


def test_a_bare_secret_flag_before_another_flag_redacts_nothing():
    args = ["--insecure-skip-tls-verify-token", "--qps", "50"]
    assert DEFAULT_POLICY.redact(args) == args


# ------------------------------------------------------------------ keys, env and references


def test_env_values_are_judged_by_value_and_by_name():
    secret = fresh_secret()
    env = [
        {"name": "DATABASE_URL", "value": "postgres://app:%s@db:5432/app" % secret},
        {"name": "NOTE", "value": "Bearer " + secret},
        {"name": "API_TOKEN", "value": secret},
        {"name": "LOG_LEVEL", "value": "info"},
        {"name": "GPU_PORTION", "value": "0.5"},
        {"name": "DB_PASSWORD", "valueFrom": {"secretKeyRef": {"name": "db", "key": "password"}}},
    ]
    out = DEFAULT_POLICY.redact({"env": env})["env"]
    assert secret not in json.dumps(out)
    assert out[0]["value"].startswith("postgres://app:") and out[0]["value"].endswith(
        "@db:5432/app"
    )
    assert is_redacted(out[2]["value"])
    assert out[3:] == env[3:]


def test_toleration_selector_and_keyref_keys_are_not_secrets():
    # issue 16 item 8: 145 toleration keys redacted in one gpu_access bundle
    spec = {
        "tolerations": [
            {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"},
            {"key": "node-role.kubernetes.io/control-plane", "operator": "Exists"},
        ],
        "affinity": {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [
                        {
                            "matchExpressions": [
                                {
                                    "key": "nvidia.com/gpu.present",
                                    "operator": "In",
                                    "values": ["true"],
                                }
                            ]
                        }
                    ]
                }
            }
        },
        "volumes": [
            {
                "name": "tls",
                "secret": {
                    "secretName": "kai-admission-tls",
                    "defaultMode": 420,
                    "items": [{"key": "tls.crt", "path": "tls.crt"}],
                },
            },
            {
                "name": "sa",
                "projected": {
                    "sources": [
                        {"serviceAccountToken": {"path": "token", "expirationSeconds": 3607}}
                    ]
                },
            },
        ],
        "containers": [
            {
                "name": "c",
                "envFrom": [{"secretRef": {"name": "app-env"}}],
                "env": [
                    {"name": "T", "valueFrom": {"secretKeyRef": {"name": "x", "key": "token"}}}
                ],
            }
        ],
        "imagePullSecrets": [{"name": "regcred"}],
        "automountServiceAccountToken": False,
    }
    assert DEFAULT_POLICY.redact(spec) == spec


def test_a_bare_key_is_judged_by_its_value():
    marker = "PRIV" + "ATE KEY"  # built at run time: no committed file looks like a key
    pem = "-----BEGIN %s-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC\n-----END %s-----" % (
        marker,
        marker,
    )
    out = DEFAULT_POLICY.redact({"key": pem})
    assert "MIIEvQ" not in out["key"] and has_redaction(out["key"])


def test_under_a_secret_key_every_leaf_but_references_is_replaced():
    out = redact_values({"credentials": {"user": "bob", "value": "hunter2", "secretName": "s"}})
    creds = out["credentials"]
    assert is_redacted(creds["user"]) and is_redacted(creds["value"])
    assert creds["secretName"] == "s"


def test_flags_numbers_and_empty_values_under_secret_keys_are_kept():
    value = {"token": False, "password": "", "secret": None, "api_key": [], "auth": "true"}
    assert redact_values(value) == value
    assert is_redacted(redact_values({"password": 1234})["password"])


# ------------------------------------------------------------------ objects


def _cm(name, data, owners=None, **meta):
    metadata = dict({"name": name, "namespace": "team-a"}, **meta)
    if owners:
        metadata["ownerReferences"] = owners
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": metadata, "data": data}


POD_OWNER = [
    {"apiVersion": "v1", "kind": "Pod", "name": "p", "uid": "7c1d2e3f-4a5b-6c7d-8e9f-0a1b2c3d4e5f"}
]
DEVICES = "GPU-1a2b3c4d-1111-2222-3333-444455556666"


@pytest.mark.parametrize(
    "name, owners, data, sharing",
    [
        ("trainer-0-abc1234-shared-gpu-0", None, {"x": "1"}, True),
        ("trainer-0-abc1234-shared-gpu-i1", None, {"x": "1"}, True),
        ("trainer-0-abc1234-shared-gpu-0-evar", None, {"x": "1"}, True),
        ("trainer-0-abc1234-shared-gpu-i12-evar", None, {"x": "1"}, True),
        ("renamed", POD_OWNER, {"NVIDIA_VISIBLE_DEVICES": DEVICES}, True),
        ("renamed", POD_OWNER, {"GPU_PORTION": "0.5"}, True),
        ("renamed", None, {"NVIDIA_VISIBLE_DEVICES": DEVICES}, False),  # not owned by a pod
        ("renamed", POD_OWNER, {"other": "1"}, False),
        ("app-config", None, {"x": "1"}, False),
        ("shared-gpu-settings", None, {"x": "1"}, False),
    ],
)
def test_is_gpu_sharing_configmap(name, owners, data, sharing):
    assert is_gpu_sharing_configmap(_cm(name, data, owners)) is sharing


def test_gpu_sharing_configmap_keeps_keys_and_values_but_not_a_secret():
    secret = fresh_secret()
    cm = _cm(
        "trainer-0-abc1234-shared-gpu-0-evar",
        {
            "NVIDIA_VISIBLE_DEVICES": DEVICES,
            "GPU_PORTION": "0.5",
            "RUNAI_NUM_OF_GPUS": "0.5",
            "API_TOKEN": secret,
        },
        POD_OWNER,
    )
    clean, removed = sanitize_object(cm)
    assert {k: v for k, v in clean["data"].items() if k != "API_TOKEN"} == {
        "NVIDIA_VISIBLE_DEVICES": DEVICES,
        "GPU_PORTION": "0.5",
        "RUNAI_NUM_OF_GPUS": "0.5",
    }
    assert clean["data"]["API_TOKEN"] == marker(secret) and removed == ["data.API_TOKEN"]
    assert clean["metadata"]["ownerReferences"] == POD_OWNER  # UIDs are not secrets


def test_the_generic_policy_keeps_only_the_configmaps_its_caller_names():
    cm = _cm("trainer-0-abc1234-shared-gpu-0", {"GPU_PORTION": "0.5"}, POD_OWNER)
    # evidence/redact.py knows no scheduler: without a rule, a GPU-sharing ConfigMap is hashed
    assert RedactionPolicy().sanitize_object(cm)[0]["data"] == {
        "GPU_PORTION": marker("0.5", "hashed")
    }
    named = RedactionPolicy(evidence_configmap=lambda obj: True)
    assert named.sanitize_object(cm)[0]["data"] == {"GPU_PORTION": "0.5"}
    assert DEFAULT_POLICY.sanitize_object(cm)[0]["data"] == {"GPU_PORTION": "0.5"}


def test_other_configmaps_keep_keys_and_a_hash_of_each_value():
    secret = fresh_secret()
    cm = _cm("app-config", {"DATABASE_URL": "postgres://app:%s@db" % secret, "LOG_LEVEL": "info"})
    cm["binaryData"] = {"blob": "AAEC"}
    clean, removed = sanitize_object(cm)
    assert set(clean["data"]) == {"DATABASE_URL", "LOG_LEVEL"}
    assert clean["data"]["LOG_LEVEL"] == marker("info", "hashed")
    assert clean["binaryData"]["blob"] == marker("AAEC", "hashed")
    assert secret not in json.dumps(clean)
    assert removed == [
        "data: values hashed: 2 (not a GPU-sharing ConfigMap)",
        "binaryData: values hashed: 1 (not a GPU-sharing ConfigMap)",
    ]
    assert sanitize_object(clean) == (clean, [])  # twice changes nothing


def test_configmap_values_opt_in_keeps_values_but_still_judges_them():
    secret = fresh_secret()
    cm = _cm("app-config", {"LOG_LEVEL": "info", "DATABASE_URL": "postgres://app:%s@db" % secret})
    clean, _removed = policy_for({"configmap_values": True}).sanitize_object(cm)
    assert clean["data"]["LOG_LEVEL"] == "info"
    assert clean["data"]["DATABASE_URL"] == "postgres://app:%s@db" % marker(secret)
    assert policy_for({}) is DEFAULT_POLICY and policy_for(None) is DEFAULT_POLICY


def test_deployment_args_env_and_last_applied_are_reported_by_name():
    secret = fresh_secret()
    dep = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {
            "name": "app",
            "namespace": "kai-scheduler",
            "uid": "7c1d2e3f-4a5b-6c7d-8e9f-0a1b2c3d4e5f",
            "resourceVersion": "123456",
            "annotations": {
                LAST_APPLIED: json.dumps({"spec": {"args": ["--api-token=" + secret]}})
            },
        },
        "spec": {
            "template": {
                "spec": {
                    "containers": [
                        {
                            "name": "app",
                            "image": "ghcr.io/x/app:v1.2.3@sha256:" + "ab" * 32,
                            "command": ["/app"],
                            "args": ["--api-token=" + secret, "--listen=:8080"],
                            "env": [
                                {"name": "DATABASE_URL", "value": "postgres://app:%s@db" % secret},
                                {"name": "SERVICE_PASSWORD", "value": secret},
                            ],
                        }
                    ]
                }
            }
        },
    }
    clean, removed = sanitize_object(dep)
    assert secret not in json.dumps(clean)
    container = clean["spec"]["template"]["spec"]["containers"][0]
    assert container["image"] == dep["spec"]["template"]["spec"]["containers"][0]["image"]
    assert container["args"] == ["--api-token=" + marker(secret), "--listen=:8080"]
    assert clean["metadata"]["uid"] == dep["metadata"]["uid"]
    assert clean["metadata"]["resourceVersion"] == "123456"
    assert removed == [
        "metadata.annotations." + LAST_APPLIED,
        "env app/SERVICE_PASSWORD",
        "args app[0]",
        "spec.template.spec.containers[0].env[0].value",
    ]


def test_embedded_objects_are_redacted_as_when_written_alone():
    """The same object, in a task result or as a snapshot file, is redacted the same way."""
    secret = fresh_secret()
    cm = _cm("plain", {"a": secret})
    evar = _cm(
        "p-abc1234-shared-gpu-0-evar", {"API_TOKEN": secret, "NVIDIA_VISIBLE_DEVICES": DEVICES}
    )
    sec = {
        "apiVersion": "v1",
        "kind": "Secret",
        "type": "Opaque",
        "metadata": {"name": "s"},
        "data": {"t": "c2VjcmV0"},
        "stringData": {"t": secret},
    }
    result = {"resources": [cm, evar, sec], "changed": False}
    out = DEFAULT_POLICY.redact(result)
    assert out["resources"] == [sanitize_object(o)[0] for o in (cm, evar, sec)]
    assert secret not in json.dumps(out)


def test_list_items_without_kind_are_still_recognised():
    secret = fresh_secret()
    items = [
        {"metadata": {"name": "s"}, "type": "Opaque", "data": {"t": "c2VjcmV0"}},
        {"metadata": {"name": "plain"}, "data": {"a": secret}},
    ]
    out = DEFAULT_POLICY.redact({"items": items})["items"]
    assert "data" not in out[0]
    assert out[1]["data"]["a"] == marker(secret, "hashed")


def test_policy_applied_twice_changes_nothing():
    secret = fresh_secret()
    value = {
        "args": ["--token", secret, "--db=postgres://u:%s@h/x" % secret],
        "objects": [_cm("plain", {"a": secret}), _cm("x-shared-gpu-0", {"API_TOKEN": secret})],
        "text": "Authorization: Bearer %s9X and " % secret
        + "-----BEGIN CERTIFICATE-----\nabc\n-----END CERTIFICATE-----",
    }
    once = DEFAULT_POLICY.redact(value)
    assert secret not in json.dumps(once)
    assert DEFAULT_POLICY.redact(once) == once


def test_custom_key_pattern_still_judges_values():
    policy = RedactionPolicy(r"(?i)^pin$")
    secret = fresh_secret()
    out = policy.redact({"pin": "1234", "url": "https://u:%s@h" % secret})
    assert out["pin"] == marker("1234") and secret not in out["url"]


# ------------------------------------------------------------------ the writers apply the policy


def test_evidence_writer_applies_the_policy_to_json_text_and_jsonl(tmp_path):
    secret = fresh_secret()
    writer = EvidenceWriter(str(tmp_path), DEFAULT_POLICY)
    writer.write_json(
        "a.json", {"args": ["--api-token=" + secret], "cm": _cm("plain", {"a": secret})}
    )
    writer.write_text(
        "binder.log", "2026-01-01T00:00:00Z connecting postgres://app:%s@db\n" % secret
    )
    lines = [
        json.dumps({"type": "ADDED", "object": _cm("plain", {"a": secret})}),
        "not json " + "--password=" + secret,
        "",
    ]
    writer.write_text("watch-configmaps.jsonl", "\n".join(lines))
    for name in ("a.json", "binder.log", "watch-configmaps.jsonl"):
        text = (tmp_path / name).read_text()
        assert secret not in text, name
        assert "<redacted len~" in text or "<hashed len~" in text, name
    watch = (tmp_path / "watch-configmaps.jsonl").read_text().split("\n")
    assert json.loads(watch[0])["object"]["data"]["a"] == marker(secret, "hashed")
    assert watch[2] == ""


def test_write_report_uses_the_modules_opt_in(tmp_path, fake_module):
    secret = fresh_secret()
    data = {"cm": _cm("plain", {"a": "b", "url": "https://u:%s@h" % secret})}
    module = fake_module({"evidence_dir": str(tmp_path), "configmap_values": True})
    write_report(module, [("kept.json", data)])
    kept = json.loads((tmp_path / "kept.json").read_text())
    assert kept["cm"]["data"]["a"] == "b" and secret not in json.dumps(kept)
    module = fake_module({"evidence_dir": str(tmp_path)})
    write_report(module, [("hashed.json", data)])
    assert json.loads((tmp_path / "hashed.json").read_text())["cm"]["data"]["a"] == marker(
        "b", "hashed"
    )
