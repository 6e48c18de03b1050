"""Acceptance tests of the lab cluster itself (issue 2)."""

from __future__ import annotations

import json

from kailab import images

TOOLS = images.TOOLBOX_REF  # busybox + kubectl, built locally and imported


CRASH_ONCE = (
    'if [ -f /state/ran ]; then echo "second run"; exec sleep 3600; fi; '
    'touch /state/ran; echo "first run $(cat /proc/sys/kernel/random/uuid)"; exit 3'
)


def pod(name: str, command: list[str], **spec) -> dict:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "labels": {"app": name}},
        "spec": {
            "restartPolicy": spec.pop("restartPolicy", "Never"),
            "containers": [
                {"name": "main", "image": TOOLS, "imagePullPolicy": "Never", "command": command}
            ],
            **spec,
        },
    }


def test_nodes_ready_and_server_version(kube, lab):
    version = json.loads(kube("version", "-o", "json").stdout)
    assert version["serverVersion"]["gitVersion"] == lab.versions["kubernetes"]["version"]
    assert version["clientVersion"]["gitVersion"] == lab.versions["kubernetes"]["version"]
    nodes = kube.json("get", "nodes")["items"]
    assert len(nodes) == 1 + lab.cfg.gpu_nodes.count
    for node in nodes:
        ready = [c for c in node["status"]["conditions"] if c["type"] == "Ready"]
        assert ready and ready[0]["status"] == "True", node["metadata"]["name"]
    real = kube.json("get", "node", lab.cfg.node_name)
    assert real["status"]["nodeInfo"]["kubeletVersion"] == lab.versions["kubernetes"]["version"]
    assert real["status"]["nodeInfo"]["containerRuntimeVersion"].startswith("containerd://")


def test_real_container_restarts_and_keeps_previous_logs(kube, namespace, lab):
    deploy = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "crasher"},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": {"app": "crasher"}},
            "template": {
                "metadata": {"labels": {"app": "crasher"}},
                "spec": {
                    "nodeName": lab.cfg.node_name,
                    # The first run fails, the restarted one stays up: the failed
                    # container is then the only dead one, so container GC keeps it.
                    "volumes": [{"name": "state", "emptyDir": {}}],
                    "containers": [
                        {
                            "name": "main",
                            "image": TOOLS,
                            "imagePullPolicy": "Never",
                            "volumeMounts": [{"name": "state", "mountPath": "/state"}],
                            "command": ["sh", "-c", CRASH_ONCE],
                        }
                    ],
                },
            },
        },
    }
    kube.apply(deploy, namespace=namespace)
    # Wait for the kubelet to record at least one restart; the condition is read from the pod.
    kube(
        "wait", "-n", namespace, "pod", "-l", "app=crasher",
        "--for=jsonpath={.status.containerStatuses[0].restartCount}=1", "--timeout=120s",
    )  # fmt: skip
    pod_obj = kube.json("get", "pods", "-n", namespace, "-l", "app=crasher")["items"][0]
    status = pod_obj["status"]["containerStatuses"][0]
    assert status["restartCount"] >= 1
    assert status["lastState"]["terminated"]["exitCode"] == 3
    previous = kube("logs", "-n", namespace, pod_obj["metadata"]["name"], "--previous").stdout
    assert previous.startswith("first run "), previous
    current = kube("logs", "-n", namespace, pod_obj["metadata"]["name"]).stdout
    assert current.startswith("second run"), current
    # the container really ran: its id comes from containerd on the real node
    assert status["containerID"].startswith("containerd://")


def test_service_routes_between_pods(kube, namespace, lab):
    server = pod(
        "web",
        [
            "sh",
            "-c",
            "mkdir -p /www && echo hello-from-web > /www/index.html && httpd -f -p 8080 -h /www",
        ],
        nodeName=lab.cfg.node_name,
    )
    service = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "web"},
        "spec": {"selector": {"app": "web"}, "ports": [{"port": 80, "targetPort": 8080}]},
    }
    kube.apply(server, service, namespace=namespace)
    kube("wait", "-n", namespace, "pod/web", "--for=condition=Ready", "--timeout=90s")
    ip = kube.json("get", "service", "web", "-n", namespace)["spec"]["clusterIP"]
    kube(
        "wait",
        "-n",
        namespace,
        "endpointslice",
        "-l",
        "kubernetes.io/service-name=web",
        "--for=jsonpath={.endpoints[0].conditions.ready}=true",
        "--timeout=60s",
    )
    # busybox-static's wget crashes in glibc's NSS inside a bare image; nc does not resolve.
    request = f"printf 'GET / HTTP/1.0\\r\\n\\r\\n' | nc -w 5 {ip} 80 | tail -n 1"
    client = pod("client", ["sh", "-c", request], nodeName=lab.cfg.node_name)
    kube.apply(client, namespace=namespace)
    kube(
        "wait",
        "-n",
        namespace,
        "pod/client",
        "--for=jsonpath={.status.phase}=Succeeded",
        "--timeout=90s",
    )
    assert kube("logs", "-n", namespace, "client").stdout.strip() == "hello-from-web"


def test_in_cluster_api_access_with_own_token_and_rbac(kube, namespace, lab):
    role = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "Role",
        "metadata": {"name": "cm-reader"},
        "rules": [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get", "list"]}],
    }
    binding = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "RoleBinding",
        "metadata": {"name": "cm-reader"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "cm-reader"},
        "subjects": [{"kind": "ServiceAccount", "name": "default", "namespace": namespace}],
    }
    script = (
        "kubectl get configmap kube-root-ca.crt -o name; echo allowed=$?; "
        "kubectl get secrets 2>&1; echo denied=$?; "
        "kubectl get pods -n kube-system 2>&1; echo denied2=$?"
    )
    kube.apply(
        role,
        binding,
        pod("api", ["sh", "-c", script], nodeName=lab.cfg.node_name),
        namespace=namespace,
    )
    kube(
        "wait",
        "-n",
        namespace,
        "pod/api",
        "--for=jsonpath={.status.phase}=Succeeded",
        "--timeout=90s",
    )
    out = kube("logs", "-n", namespace, "api").stdout
    assert "configmap/kube-root-ca.crt" in out and "allowed=0" in out, out
    assert "Forbidden" in out and "denied=1" in out and "denied2=1" in out, out
    assert f"system:serviceaccount:{namespace}:default" in out, out


def test_namespace_deletion_and_owner_garbage_collection(kube, lab):
    ns = "labtest-gc"
    kube("delete", "namespace", ns, "--ignore-not-found", "--wait=true", "--timeout=120s")
    kube("create", "namespace", ns)
    kube("wait", "--for=create", "serviceaccount/default", "-n", ns, "--timeout=60s")
    kube.apply(pod("owner", ["sleep", "3600"], nodeName=lab.cfg.node_name), namespace=ns)
    uid = kube.json("get", "pod", "owner", "-n", ns)["metadata"]["uid"]
    owned = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": "owned",
            "ownerReferences": [{"apiVersion": "v1", "kind": "Pod", "name": "owner", "uid": uid}],
        },
    }
    kube.apply(owned, namespace=ns)
    kube("delete", "pod", "owner", "-n", ns, "--wait=false", "--grace-period=0", "--force")
    kube("wait", "--for=delete", "configmap/owned", "-n", ns, "--timeout=120s")
    kube("delete", "namespace", ns, "--wait=true", "--timeout=120s")
    gone = kube("get", "namespace", ns, check=False)
    assert gone.returncode != 0 and "NotFound" in gone.stderr


def test_kwok_gpu_nodes_advertise_gpus_and_run_pods(kube, namespace, lab):
    g = lab.cfg.gpu_nodes
    nodes = kube.json("get", "nodes", "-l", "type=kwok")["items"]
    assert len(nodes) == g.count
    for node in nodes:
        assert node["status"]["allocatable"]["nvidia.com/gpu"] == str(g.gpus_per_node)
        assert node["metadata"]["labels"]["nvidia.com/gpu.product"] == g.product
    target = nodes[0]["metadata"]["name"]
    gpu_pod = pod("on-kwok", ["sleep", "infinity"])
    gpu_pod["spec"]["nodeSelector"] = {"kubernetes.io/hostname": target}
    gpu_pod["spec"]["tolerations"] = [{"key": "kwok.x-k8s.io/node", "operator": "Exists"}]
    gpu_pod["spec"]["containers"][0]["resources"] = {"limits": {"nvidia.com/gpu": "2"}}
    kube.apply(gpu_pod, namespace=namespace)
    kube(
        "wait",
        "-n",
        namespace,
        "pod/on-kwok",
        "--for=jsonpath={.status.phase}=Running",
        "--timeout=90s",
    )
    bound = kube.json("get", "pod", "on-kwok", "-n", namespace)
    assert bound["spec"]["nodeName"] == target


def test_fake_gpu_plugin_gives_whole_gpus_on_the_real_node(kube, namespace, lab):
    devices = lab.versions["fakegpu"]["devices_per_node"]
    node = kube.json("get", "node", lab.cfg.node_name)
    assert node["status"]["allocatable"]["nvidia.com/gpu"] == str(devices)
    assert node["metadata"]["labels"]["run.ai/fake.gpu"] == "true"
    probe = pod("probe", ["gpuprobe", "--size", "32"], nodeName=lab.cfg.node_name)
    probe["spec"]["containers"][0]["image"] = images.GPUPROBE_REF
    probe["spec"]["containers"][0]["resources"] = {"limits": {"nvidia.com/gpu": "1"}}
    kube.apply(probe, namespace=namespace)
    kube("wait", "-n", namespace, "pod/probe", "--for=jsonpath={.status.phase}=Succeeded",
         "--timeout=90s")  # fmt: skip
    out = json.loads(kube("logs", "-n", namespace, "probe").stdout.strip().splitlines()[-1])
    visible = out["visible"]["NVIDIA_VISIBLE_DEVICES"]
    assert visible and visible.startswith("GPU-") and "," not in visible, visible
    # fake devices: the probe must say there is no GPU behind them
    assert out["gpu_present"] is False and out["mode"] == "cpu-reference"
    assert out["check"]["passed"] is True
