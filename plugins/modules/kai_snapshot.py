#!/usr/bin/python
# Copyright: kaiops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

DOCUMENTATION = r"""
module: kai_snapshot
short_description: Capture sets of Kubernetes objects into the run's evidence folder
version_added: 0.1.0
author:
  - kaiops contributors (@kaiops)
description:
  - Reads one or more selections of objects (kind, apiVersion, namespace, label and field
    selectors) with one LIST request per selection, plus one discovery request per apiVersion;
    never one request per object.
  - Returns the objects and writes each as a JSON file under
    C(snapshots/<name>/<NN>-<kind>/<namespace>/<object>.json) in the run's evidence folder,
    with an C(index.json) listing the selections, counts and what was removed.
  - Objects pass through the collection's one redaction policy (docs/evidence.md, "What
    evidence never contains") before they are returned or written. Secret C(data) and
    C(stringData) are never returned or written; nor are the
    C(kubectl.kubernetes.io/last-applied-configuration) annotation (it can hold a Secret's
    data), C(metadata.managedFields), Helm v2 release ConfigMap data, TokenRequest tokens,
    env values whose names look secret (TOKEN, PASSWORD, SECRET...), secret-looking container
    args (C(--api-token=...)), and secrets in any value (URL passwords, bearer tokens, JWTs,
    PEM blocks, long high-entropy strings). A replaced value reads
    C(<redacted len~N sha256:XXXXXXXX>) (length class and short hash, so runs compare).
  - ConfigMaps keep their keys; their values are kept only for GPU-sharing ConfigMaps
    (C(*-shared-gpu-<n>), C(*-shared-gpu-i<n>), their C(-evar), or owned by a pod and holding
    C(NVIDIA_VISIBLE_DEVICES) or C(GPU_PORTION)), and otherwise replaced with
    C(<hashed len~N sha256:XXXXXXXX>) unless O(configmap_values=true).
  - If C(snapshots/<name>) already exists in the run's folder the module writes to
    C(snapshots/<name>-2) (then C(-3) and so on); files are never replaced.
extends_documentation_fragment:
  - kaiops.runbooks.attributes
  - kaiops.runbooks.k8s_auth
  - kaiops.runbooks.evidence
options:
  name:
    description:
      - Name of the snapshot; the folder under C(snapshots/) in the evidence folder.
      - Characters outside C([A-Za-z0-9._-]) are replaced with C(_).
    type: str
    required: true
  selections:
    description:
      - What to capture; each entry is one LIST request.
    type: list
    elements: dict
    required: true
    suboptions:
      kind:
        description: Kind of the objects, e.g. C(ConfigMap), C(Deployment).
        type: str
        required: true
      api_version:
        description: apiVersion of the kind, e.g. C(v1), C(apps/v1), C(kai.scheduler/v1).
        type: str
        default: v1
      namespace:
        description:
          - Namespace to list in. Omit to list in all namespaces (or for cluster-scoped kinds).
        type: str
      label_selectors:
        description: Label selectors, joined with commas (all must match).
        type: list
        elements: str
        default: []
      field_selectors:
        description: Field selectors, joined with commas (all must match).
        type: list
        elements: str
        default: []
  return_objects:
    description:
      - Return the (sanitized) objects in RV(objects).
      - Set to C(false) for large snapshots to keep the task result, and the evidence
        callback's C(tasks.jsonl), small; the files are written either way.
    type: bool
    default: true
  configmap_values:
    description:
      - Keep the values of ConfigMaps that are not GPU-sharing ConfigMaps in the snapshot
        files (they are still judged value by value, as everything is).
      - By default they are recorded by key and a hash of each value. The task result, as the
        evidence callback records it, hashes them whatever this says.
    type: bool
    default: false
attributes:
  check_mode:
    support: full
    details:
      - The module only reads from the cluster, so it runs unchanged under C(--check) and
        reports C(changed=false); it still writes its evidence files, which are the record of
        the run and not managed state.
notes:
  - Its action plugin runs it on the controller, whatever the host's connection, and gives it the
    run's evidence folder as the C(kaiops.runbooks.evidence) callback registered it for the play.
seealso:
  - module: kaiops.runbooks.kai_inventory_info
"""

EXAMPLES = r"""
- name: Snapshot KAI's components and the GPU-sharing ConfigMaps of a namespace
  kaiops.runbooks.kai_snapshot:
    kubeconfig: "{{ kaiops_kubeconfig }}"
    name: before-upgrade
    selections:
      - kind: Deployment
        api_version: apps/v1
        namespace: kai-scheduler
      - kind: Config
        api_version: kai.scheduler/v1
      - kind: ConfigMap
        namespace: team-a
        label_selectors:
          - app=trainer
  register: kai_rollout_snapshot

- name: Snapshot every BindRequest without returning them
  kaiops.runbooks.kai_snapshot:
    name: bindrequests
    return_objects: false
    selections:
      - kind: BindRequest
        api_version: scheduling.run.ai/v1alpha2
"""

RETURN = r"""
name:
  description: The snapshot name as given.
  returned: always
  type: str
  sample: before-upgrade
count:
  description: Number of objects captured over all selections.
  returned: always
  type: int
  sample: 12
selections:
  description: Per selection, the normalized selection, the object count and what was removed.
  returned: always
  type: list
  elements: dict
  sample:
    - selection: {api_version: v1, kind: Secret, namespace: kai-scheduler,
                  label_selectors: [], field_selectors: []}
      count: 1
      redactions: [{kind: Secret, namespace: kai-scheduler, name: tls, removed: [data]}]
api_calls:
  description: HTTP requests made (one discovery GET per apiVersion plus one LIST per selection).
  returned: always
  type: int
  sample: 4
duration_s:
  description: Seconds the module spent, reads and writes together.
  returned: always
  type: float
  sample: 0.42
evidence_dir:
  description: The evidence folder written into; null when none was known.
  returned: always
  type: str
  sample: /srv/kaiops/evidence/20261101T101500Z-rollout-1a2b3c4d
folder:
  description: The snapshot folder, relative to RV(evidence_dir); null when nothing was written.
  returned: always
  type: str
  sample: snapshots/before-upgrade
files:
  description: Number of files written (one per object plus index.json).
  returned: always
  type: int
  sample: 13
objects:
  description: The sanitized objects, each with apiVersion and kind.
  returned: when return_objects is true
  type: list
  elements: dict
"""

from ansible_collections.kaiops.runbooks.plugins.module_utils.ansible_module import run_module
from ansible_collections.kaiops.runbooks.plugins.module_utils.args_common import (
    AUTH_ARG_SPEC,
    EVIDENCE_ARG_SPEC,
    merge_specs,
)
from ansible_collections.kaiops.runbooks.plugins.module_utils.k8s.client import KUBERNETES
from ansible_collections.kaiops.runbooks.plugins.module_utils.snapshot.runner import run_snapshot


def argspec():
    return merge_specs(
        AUTH_ARG_SPEC,
        EVIDENCE_ARG_SPEC,
        {
            "name": {"type": "str", "required": True},
            "selections": {
                "type": "list",
                "elements": "dict",
                "required": True,
                "options": {
                    "kind": {"type": "str", "required": True},
                    "api_version": {"type": "str", "default": "v1"},
                    "namespace": {"type": "str"},
                    "label_selectors": {"type": "list", "elements": "str", "default": []},
                    "field_selectors": {"type": "list", "elements": "str", "default": []},
                },
            },
            "return_objects": {"type": "bool", "default": True},
            "configmap_values": {"type": "bool", "default": False},
        },
    )


def main():
    run_module(argspec(), run_snapshot, libraries=[KUBERNETES])


if __name__ == "__main__":
    main()
