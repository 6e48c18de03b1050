"""playbooks/gpu_access.yml against a fake API server: no cluster needed.

The fake serves only GET, so the playbook can read but never create: a cluster whose
kube-system namespace lacks kaiops.dev/disposable=true must be refused after the one read of
that namespace, before any workload is submitted, and the refusal must name the override.
"""

import os
import sys

import fakeapi
import playbook_run

from playbooks.test_inventory import sha256sum_ok

BIN = os.path.dirname(sys.executable)


class DiscoveringFakeAPI(fakeapi.FakeAPI):
    """The fake API server plus the /api and /apis listings that kubernetes.core reads."""

    def handle(self, raw_path, headers):
        path = raw_path.split("?")[0].rstrip("/")
        if path == "/api":
            self.requests.append({"path": path, "query": {}, "accept": headers.get("Accept")})
            return 200, {
                "kind": "APIVersions",
                "versions": ["v1"],
                "serverAddressByClientCIDRs": [],
            }
        if path == "/apis":
            self.requests.append({"path": path, "query": {}, "accept": headers.get("Accept")})
            groups = sorted({gv for gv in self.served if "/" in gv})
            return 200, {
                "kind": "APIGroupList",
                "apiVersion": "v1",
                "groups": [
                    {
                        "name": gv.split("/")[0],
                        "versions": [{"groupVersion": gv, "version": gv.split("/")[1]}],
                        "preferredVersion": {"groupVersion": gv, "version": gv.split("/")[1]},
                    }
                    for gv in groups
                ],
            }
        return super().handle(raw_path, headers)


def run_playbook(tmp_path, kubeconfig, *args, playbook="playbooks/gpu_access.yml"):
    inventory = tmp_path / "hosts.yml"
    playbook_run.write_inventory(inventory, {"c1": {"kaiops_kubeconfig": kubeconfig}})
    return playbook_run.run_playbook(tmp_path, playbook, inventory, *args)


def start(objects):
    return DiscoveringFakeAPI(objects=objects).start()


def kube_system(annotations):
    return {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {"name": "kube-system", "annotations": annotations},
    }


def test_gpu_access_refuses_a_cluster_not_marked_disposable(tmp_path):
    api = start([kube_system({"kaiops.dev/disposable": "false"})])
    try:
        done, bundle = run_playbook(tmp_path, api.kubeconfig(tmp_path / "kubeconfig"))
    finally:
        api.stop()
    out = done.stdout + done.stderr
    assert done.returncode == 2, out
    assert (
        "Refusing c1: namespace kube-system lacks the annotation kaiops.dev/disposable=true" in out
    )
    assert "kai_gpu_access_allow_non_disposable: true" in out
    paths = [r["path"] for r in api.requests]
    assert "/api/v1/namespaces/kube-system" in paths
    assert not [p for p in paths if "/pods" in p or "kaiops-gpu-access" in p], paths
    assert sha256sum_ok(bundle)


def test_gpu_access_validates_options_before_any_request(tmp_path):
    api = start([kube_system({"kaiops.dev/disposable": "true"})])
    try:
        done, _unused = run_playbook(
            tmp_path,
            api.kubeconfig(tmp_path / "kubeconfig"),
            "-e",
            '{"kai_gpu_access_cases": ["whole_gpu", "teleport"],'
            ' "kai_gpu_access_namespace": "kube-system"}',
        )
    finally:
        api.stop()
    out = done.stdout + done.stderr
    assert done.returncode == 2, out
    assert "kai_gpu_access_cases has unknown cases ['teleport']" in out
    assert "kai_gpu_access_namespace 'kube-system' is a system namespace" in out
    assert api.requests == []
