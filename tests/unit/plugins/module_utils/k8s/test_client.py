"""module_utils/client.py against the fake API server (real HTTP, no cluster)."""

import socket
import subprocess
import sys

import pytest

from ansible_collections.kaiops.runbooks.plugins.module_utils.errors import KaiopsError
from ansible_collections.kaiops.runbooks.plugins.module_utils.k8s.client import (
    ACCEPT_METADATA,
    KubeClient,
    group_version_path,
    load_api_client,
)


@pytest.fixture
def client(fake_api, tmp_path):
    api = fake_api("kai-sharing")
    kubeconfig = api.kubeconfig(tmp_path / "kubeconfig")
    return api, KubeClient.from_options(kubeconfig, None, 5)


@pytest.mark.parametrize(
    ("api_version", "path"),
    [
        ("v1", "/api/v1"),
        ("apps/v1", "/apis/apps/v1"),
        ("kai.scheduler/v1", "/apis/kai.scheduler/v1"),
    ],
)
def test_group_version_path_core_and_groups(api_version, path):
    assert group_version_path(api_version) == path


def test_list_makes_one_request_per_selection_after_discovery(client):
    api, kube = client
    items = kube.list("v1", "ConfigMap", "team-a")
    kube.list("v1", "ConfigMap", "gpu-operator")
    assert sorted(i["metadata"]["name"] for i in items) == [
        "trainer-0-shared-gpu-0",
        "trainer-0-shared-gpu-0-evar",
        "unrelated",
    ]
    assert all(i["kind"] == "ConfigMap" and i["apiVersion"] == "v1" for i in items)
    paths = [r["path"] for r in api.requests]
    assert paths == [
        "/api/v1",
        "/api/v1/namespaces/team-a/configmaps",
        "/api/v1/namespaces/gpu-operator/configmaps",
    ]
    assert kube.calls == 3


def test_list_passes_selectors_and_metadata_accept(client):
    api, kube = client
    items = kube.list(
        "v1",
        "Secret",
        "kai-scheduler",
        label_selector="owner=helm,status=deployed",
        metadata_only=True,
    )
    assert [i["metadata"]["name"] for i in items] == ["sh.helm.release.v1.kai-scheduler.v2"]
    assert "data" not in items[0]
    last = api.requests[-1]
    assert last["query"] == {"labelSelector": "owner=helm,status=deployed"}
    assert last["accept"] == ACCEPT_METADATA


def test_list_cluster_scoped_ignores_namespace(client):
    api, kube = client
    kube.list("v1", "Node", namespace="ignored")
    assert api.requests[-1]["path"] == "/api/v1/nodes"


def test_read_returns_none_when_missing(client):
    _api, kube = client
    assert kube.read("kai.scheduler/v1", "Config", "kai-config")["spec"]["admission"] == {
        "gpuSharing": True
    }
    assert kube.read("kai.scheduler/v1", "Config", "nope") is None


def test_resource_unknown_kind_is_not_found(client):
    _api, kube = client
    with pytest.raises(KaiopsError) as info:
        kube.list("v1", "Widget")
    assert info.value.status == "not_found"
    assert info.value.msg == "Failed to find kind Widget in v1: the API server does not serve it"


def test_unserved_group_is_not_found(client):
    _api, kube = client
    with pytest.raises(KaiopsError) as info:
        kube.list("example.com/v1", "Thing")
    assert info.value.status == "not_found" and info.value.http_status == 404


def test_forbidden_maps_to_status_forbidden(fake_api, tmp_path):
    api = fake_api("kai-sharing")
    api.forbidden = ["/api/v1/nodes"]
    kube = KubeClient.from_options(api.kubeconfig(tmp_path / "k"), None, 5)
    with pytest.raises(KaiopsError) as info:
        kube.list("v1", "Node")
    assert info.value.status == "forbidden" and info.value.http_status == 403
    assert info.value.msg.startswith("Failed to read the list of v1 Node: HTTP 403 forbidden")


def test_bad_token_maps_to_unauthorized(fake_api, tmp_path):
    api = fake_api("kai-sharing")
    path = api.kubeconfig(tmp_path / "k")
    api.token = "rotated"
    with pytest.raises(KaiopsError) as info:
        KubeClient.from_options(path, None, 5).server_version()
    assert info.value.status == "unauthorized"


def test_closed_port_is_unreachable(tmp_path, fake_api):
    api = fake_api("kai-sharing")
    path = api.kubeconfig(tmp_path / "k")
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()
    path_text = open(path).read().replace(api.url, "http://127.0.0.1:%d" % port)
    with open(path, "w") as handle:
        handle.write(path_text)
    with pytest.raises(KaiopsError) as info:
        KubeClient.from_options(path, None, 2).server_version()
    assert info.value.status == "unreachable"
    assert info.value.msg.startswith("Failed to reach the API server at http://127.0.0.1:%d" % port)


def test_load_api_client_missing_kubeconfig_is_invalid_input(tmp_path):
    with pytest.raises(KaiopsError) as info:
        load_api_client(str(tmp_path / "missing"), None)
    assert info.value.status == "invalid_input"
    assert "does not exist" in info.value.msg


def test_load_api_client_unknown_context_is_invalid_input(fake_api, tmp_path):
    path = fake_api("kai-sharing").kubeconfig(tmp_path / "k")
    with pytest.raises(KaiopsError) as info:
        load_api_client(path, "prod")
    assert info.value.status == "invalid_input"
    assert info.value.msg.startswith("Failed to load kubeconfig %s (context prod)" % path)


def test_a_module_that_only_judges_its_inputs_does_not_import_the_kubernetes_client(tmp_path):
    """The kubernetes client is imported when a client is built: the rollout's runner, which every
    judging module loads, leaves it out; building a client brings it in."""
    utils = "ansible_collections.kaiops.runbooks.plugins.module_utils"
    code = (
        "import sys\n"
        f"from {utils}.rollout import change_runner\n"
        f"from {utils}.k8s import client\n"
        "assert client.HAS_KUBERNETES\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('kubernetes', 'urllib3')))\n"
        "client.load_api_client(sys.argv[1])\n"
        "print('kubernetes.client' in sys.modules)\n"
    )
    config = (
        "apiVersion: v1\nkind: Config\ncurrent-context: c\n"
        "clusters: [{name: c, cluster: {server: 'https://127.0.0.1:1'}}]\n"
        "contexts: [{name: c, context: {cluster: c, user: u}}]\nusers: [{name: u, user: {}}]\n"
    )
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(config)
    done = subprocess.run(
        [sys.executable, "-c", code, str(kubeconfig)],
        capture_output=True,
        text=True,
        check=False,
        env={"PYTHONPATH": ":".join(sys.path)},
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["[]", "True"]
