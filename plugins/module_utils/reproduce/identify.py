# -*- coding: utf-8 -*-
# Copyright: kaiops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Identify the KAI build a reproduce run is about to exercise, before anything is planted.

Reads only: KAI's Deployments (images, the binder's flags, the implementation label every
object of the lab's stand-in carries), Config `kai-config` (GPU sharing), the API server's
version. The build's version is its binder image tag, as for the inventory.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.kaiops.runbooks.plugins.module_utils.errors import KaiopsError

IMPLEMENTATION_LABEL = "kaiops.dev/kai-implementation"


def image_tag(image):
    name = (image or "").split("@", 1)[0]
    last = name.rsplit("/", 1)[-1]
    return last.split(":", 1)[1] if ":" in last else None


def identify(client, kai_namespace, helm=None):
    deployments = client.list("apps/v1", "Deployment", kai_namespace)
    if not deployments:
        raise KaiopsError(
            "Failed to identify KAI in namespace %s: no Deployments there; install KAI "
            "first (on the lab: make lab-up)" % kai_namespace
        )
    components = []
    binder_args = None
    version = None
    labels = set()
    for dep in deployments:
        meta = dep.get("metadata") or {}
        containers = ((dep.get("spec") or {}).get("template") or {}).get("spec", {}).get(
            "containers"
        ) or []
        labels.add((meta.get("labels") or {}).get(IMPLEMENTATION_LABEL))
        status = dep.get("status") or {}
        components.append(
            {
                "name": meta.get("name"),
                "images": [c.get("image") for c in containers],
                "ready": "%s/%s"
                % (status.get("readyReplicas", 0), (dep.get("spec") or {}).get("replicas", 1)),
                "rolled_out": status.get("observedGeneration", 0) >= meta.get("generation", 0)
                and status.get("updatedReplicas", 0) == (dep.get("spec") or {}).get("replicas", 1)
                and status.get("availableReplicas", 0)
                == (dep.get("spec") or {}).get("replicas", 1),
            }
        )
        if meta.get("name") == "binder" and containers:
            binder_args = list(containers[0].get("args") or [])
            version = image_tag(containers[0].get("image"))
    config = client.read("kai.scheduler/v1", "Config", "kai-config") or {}
    admission = ((config.get("spec") or {}).get("admission")) or {}
    server = client.server_version()
    implementation = "standin" if "standin" in labels else "kai"
    return {
        "version": version,
        "version_source": "binder image tag",
        "implementation": implementation,
        "implementation_label": "KAI stand-in" if implementation == "standin" else "KAI",
        "helm": helm or {},
        "components": components,
        "binder_flags": binder_args,
        "gpu_sharing": admission.get("gpuSharing"),
        "block_nvidia_visible_devices": admission.get("blockNvidiaVisibleDevices"),
        "kubernetes_version": server.get("gitVersion"),
        "all_rolled_out": all(c["rolled_out"] for c in components),
    }
