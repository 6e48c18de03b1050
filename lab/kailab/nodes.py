"""KWOK-managed fake GPU nodes, described as data."""

from __future__ import annotations

from .config import LabConfig

# The lab marks its clusters disposable here; playbooks that plant fixtures check it.
DISPOSABLE_ANNOTATION = "kaiops.dev/disposable"


def gpu_node(cfg: LabConfig, index: int) -> dict:
    g = cfg.gpu_nodes
    name = f"{g.name_prefix}{index}"
    resources = {
        "cpu": "32",
        "memory": "256Gi",
        "pods": "110",
        "ephemeral-storage": "1Ti",
        "nvidia.com/gpu": str(g.gpus_per_node),
    }
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "annotations": {"kwok.x-k8s.io/node": "fake", "node.alpha.kubernetes.io/ttl": "0"},
            "labels": {
                "kubernetes.io/hostname": name,
                "kubernetes.io/os": "linux",
                "kubernetes.io/arch": "amd64",
                "type": "kwok",
                "kaiops.dev/lab-node": "kwok",
                # The labels NVIDIA's GPU feature discovery puts on a GPU node.
                "nvidia.com/gpu.present": "true",
                "nvidia.com/gpu.product": g.product,
                "nvidia.com/gpu.count": str(g.gpus_per_node),
                "nvidia.com/gpu.memory": str(g.memory_mib),
                "nvidia.com/mig.strategy": "none",
                # no GPU behind it: the mark KAI's fake-GPU handling keys on
                "run.ai/fake.gpu": "true",
            },
        },
        "spec": {
            # kwok's convention: only pods that tolerate fake nodes land there.
            "taints": [{"key": "kwok.x-k8s.io/node", "value": "fake", "effect": "NoSchedule"}],
        },
        "status": {"capacity": resources, "allocatable": dict(resources)},
    }


def gpu_nodes(cfg: LabConfig) -> list[dict]:
    return [gpu_node(cfg, i) for i in range(cfg.gpu_nodes.count)]


def marker_objects(cfg: LabConfig) -> list[dict]:
    """The disposable marker: an annotation on kube-system and a ConfigMap saying what made it."""
    return [
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {
                "name": "kaiops-lab",
                "namespace": "kube-public",
                "annotations": {DISPOSABLE_ANNOTATION: "true"},
            },
            "data": {"lab": cfg.name, "disposable": "true", "createdBy": "kaiops lab up"},
        }
    ]
