#!/usr/bin/python
# Copyright: kaiops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

DOCUMENTATION = r"""
module: kai_inventory_info
short_description: Read what KAI Scheduler runs on a cluster and whether it is exposed
version_added: 0.1.0
author:
  - kaiops contributors (@kaiops)
description:
  - Reads, without changing anything, the Kubernetes server version; the KAI install in
    O(namespace) (Deployments with images, tags, ready replicas and container restarts; the
    operator; the Helm release from the Deployments' C(meta.helm.sh/release-name) annotation and
    the labels of Helm's release Secrets, read as metadata only); whether GPU sharing is on
    (admission container args C(--gpu-sharing-enabled=true), the C(kai-config) Config
    C(kai.scheduler/v1) C(spec.admission.gpuSharing) and C(spec.global.gpuSharingMode));
    pods on the GPU-sharing path (annotations C(gpu-fraction), C(gpu-memory),
    C(runai/shared-gpu-configmap)) and their GPU-sharing ConfigMaps, how many have no data;
    failed BindRequests; GPU nodes and sharing hints (C(nvidia.com/gpu) capacity,
    C(nvidia.com/mig.strategy), time-slicing and MPS labels and device-plugin configs,
    C(run.ai/fake.gpu)).
  - Computes an exposure verdict to the KAI binder panic on an existing GPU-sharing ConfigMap
    with nil data, from the binder image tag against O(affected_range) and whether the path is
    in use. Verdicts are V(exposed), V(latent), V(not_exposed), V(not_installed), V(unknown).
  - About ten requests whatever the cluster size, plus one ConfigMap LIST per namespace that
    holds GPU-sharing pods.
  - Sections the credentials may not read (HTTP 403) or APIs the cluster does not serve are
    recorded in RV(inventory.access) and the module carries on; the cluster status is then
    V(partial).
  - Fails, with RV(status) set, when the API server is unreachable (V(unreachable)), rejects the
    credentials (V(unauthorized)), forbids reading Deployments in O(namespace) (V(forbidden)), or
    an input is wrong (V(invalid_input)); a bad O(affected_range) or kubeconfig fails before any
    request.
extends_documentation_fragment:
  - kaiops.runbooks.attributes
  - kaiops.runbooks.k8s_auth
options:
  cluster:
    description: Name of the cluster in the report, usually C(inventory_hostname).
    type: str
    required: true
  namespace:
    description: Namespace of the KAI release.
    type: str
    default: kai-scheduler
  affected_range:
    description:
      - Binder versions affected by the defect, as comma-separated clauses C(<op><version>)
        with op one of C(>=), C(>), C(<=), C(<), C(==), C(!=).
      - Default - C(affected_range) of the collection's C(meta/kai_releases.yml), the one home
        of KAI's release facts (with the source of each), given by the module's action plugin.
        That range is conservative - every release that could carry the race fix without the
        nil check is counted until its source says otherwise.
    type: str
  releases:
    description:
      - KAI's release rows (C(version), C(retracted), C(retracted_source)); a cluster running a
        release with C(retracted=true) is flagged in RV(inventory) (C(kai.retracted)) and the
        report.
      - Default - C(releases) of the collection's C(meta/kai_releases.yml), given by the module's
        action plugin.
    type: list
    elements: dict
  helm_release:
    description: Name of the Helm release, used to read its release Secrets' labels.
    type: str
    default: kai-scheduler
  binder_deployment:
    description: Name of the binder Deployment (its image tag is the KAI version).
    type: str
    default: binder
  operator_deployment:
    description: Name of the operator Deployment.
    type: str
    default: kai-operator
  admission_deployment:
    description: Name of the admission Deployment.
    type: str
    default: admission
  restart_threshold:
    description:
      - Components whose containers restarted more than this many times in total are listed in
        RV(inventory.restart_threshold_exceeded). Note the binder recovers this panic without
        restarting, so restart counts alone miss the defect.
    type: int
attributes:
  check_mode:
    support: full
    details: Read-only; runs the same under C(--check) and always reports C(changed=false).
"""

EXAMPLES = r"""
- name: Inventory KAI on the cluster
  kaiops.runbooks.kai_inventory_info:
    cluster: "{{ inventory_hostname }}"
    kubeconfig: "{{ kaiops_kubeconfig }}"
    context: "{{ kaiops_context | default(omit) }}"
    namespace: kai-scheduler
  register: kai_inventory_info_result

- name: Show the verdict
  ansible.builtin.debug:
    msg: "{{ kai_inventory_info_result.inventory.exposure.verdict }}"
"""

RETURN = r"""
inventory:
  description: The cluster's inventory; docs/evidence.md describes every field.
  returned: success
  type: dict
  contains:
    cluster:
      description: O(cluster).
      type: str
    status:
      description: V(ok), V(partial) (some sections forbidden), or V(not_installed).
      type: str
      sample: ok
    server_version:
      description: C(gitVersion), C(major), C(minor), C(platform) of the API server.
      type: dict
    kai:
      description:
        - installed, namespace, version (binder image tag), components, helm, config.
        - C(components) lists KAI's Deployments only (KAI's names - binder, admission,
          kai-operator, kai-scheduler-*, pod-grouper, podgroup-controller, queue-controller,
          node-scale-adjuster - or the KAI release's C(meta.helm.sh/release-name) annotation),
          each container with C(image), C(repository), C(tag), C(digest), C(restarts) and
          C(flags) - the flags that decide a verdict (C(--gpu-sharing-enabled),
          C(--fake-gpu-nodes), C(--plugins), C(--scheduler-name), C(--resource-reservation-*),
          ...), never the other args.
        - C(retracted) - C(version) and C(source) when the running release is one upstream
          retracted (O(releases)), else null.
      type: dict
    gpu_sharing:
      description: Whether GPU sharing is on, and from which source that was read.
      type: dict
    affected_path:
      description: GPU-sharing pods and ConfigMaps, counts of ConfigMaps without data.
      type: dict
    symptoms:
      description: BindRequests total, failed, and failed with "assignment to entry in nil map".
      type: dict
    gpu_nodes:
      description: GPU nodes with capacity and sharing hints.
      type: dict
    exposure:
      description: C(verdict), C(reasons), C(affected_range), C(binder_version), inputs.
      type: dict
      sample:
        verdict: exposed
        reasons: [affected binder version and pods on the GPU-sharing path]
        affected_range: ">=1.4.0,<1.4.3"
        binder_version: v1.4.2
        version_in_range: true
        path_in_use: true
        gpu_sharing_enabled: true
    restart_threshold:
      description: O(restart_threshold) as given, or null.
      type: int
    restart_threshold_exceeded:
      description: Components whose containers restarted more than O(restart_threshold) times.
      type: list
      elements: str
    access:
      description: Per section read, V(ok), V(forbidden) or V(absent) (API not served).
      type: dict
    api_calls:
      description: HTTP requests made.
      type: int
    duration_s:
      description: Seconds spent.
      type: float
helm_path:
  description: Path of the C(helm) binary on the host running the module, or null.
  returned: success
  type: str
status:
  description:
    - On failure, V(unreachable), V(unauthorized), V(forbidden), V(invalid_input) or V(error).
  returned: failure
  type: str
  sample: unreachable
"""

from ansible_collections.kaiops.runbooks.plugins.module_utils.ansible_module import run_module
from ansible_collections.kaiops.runbooks.plugins.module_utils.args_common import (
    AUTH_ARG_SPEC,
    merge_specs,
)
from ansible_collections.kaiops.runbooks.plugins.module_utils.inventory.runner import (
    run_inventory_info,
)
from ansible_collections.kaiops.runbooks.plugins.module_utils.k8s.client import KUBERNETES

# Options the action plugin fills in from meta/kai_releases.yml when the task leaves them out.
RELEASE_DEFAULTS = {"affected_range": "affected_range", "releases": "releases"}


def argspec():
    return merge_specs(
        AUTH_ARG_SPEC,
        {
            "cluster": {"type": "str", "required": True},
            "namespace": {"type": "str", "default": "kai-scheduler"},
            "affected_range": {"type": "str"},
            "releases": {"type": "list", "elements": "dict"},
            "helm_release": {"type": "str", "default": "kai-scheduler"},
            "binder_deployment": {"type": "str", "default": "binder"},
            "operator_deployment": {"type": "str", "default": "kai-operator"},
            "admission_deployment": {"type": "str", "default": "admission"},
            "restart_threshold": {"type": "int"},
        },
    )


def main():
    run_module(argspec(), run_inventory_info, libraries=[KUBERNETES])


if __name__ == "__main__":
    main()
