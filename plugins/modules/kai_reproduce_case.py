#!/usr/bin/python
# Copyright: kaiops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

DOCUMENTATION = r"""
module: kai_reproduce_case
short_description: Run one case of the nil-data ConfigMap reproduction on one KAI build
version_added: 0.1.0
author:
  - kaiops contributors (@kaiops)
description:
  - Declares the case's expectation (written to the evidence first), creates a labelled
    namespace of its own, plants the case's fixture pods held by a scheduling gate, reads the
    ConfigMap names KAI's admission gave each pod, plants the capabilities ConfigMap owned by
    the pod, reads back what the API server stored, lifts the gate and follows the pods with
    watches until each reached its outcome or the window ended.
  - Talks to the Kubernetes API only. Writes only in the namespace it created, never edits a
    ConfigMap it did not create and never touches KAI's configuration.
  - Evidence goes to C(cases/<build>/<case>/) of the run's bundle, every BindRequest attempt
    included (watched, so attempts the scheduler deletes are kept), with the binder's logs.
  - Nothing runs under check mode.
extends_documentation_fragment:
  - kaiops.runbooks.kai_namespaces.reservation
  - kaiops.runbooks.kai_namespaces
  - kaiops.runbooks.attributes
  - kaiops.runbooks.k8s_auth
  - kaiops.runbooks.evidence
options:
  case:
    description: The case to run.
    type: str
    required: true
    choices: [nil_data, normal_update, creation, repeat, variants, recovery, concurrency]
  phase:
    description:
      - For C(recovery) only - C(plant) leaves the edge case failing on the installed build and
        keeps its namespace; C(observe) follows the same workloads once the next build runs.
    type: str
    choices: [plant, observe]
  build:
    description:
      - The build under test - C(version), C(exposed) (from the release facts), C(implementation).
    type: dict
    required: true
  run_id:
    description: The run's id; names and labels the namespace.
    type: str
    required: true
  namespace_prefix:
    description: Prefix of the namespaces the case creates.
    type: str
    default: kaiops-repro
  namespace:
    description: For C(phase=observe), the namespace the plant phase kept.
    type: str
  workloads:
    description: For C(phase=observe), the plant phase's C(workloads).
    type: list
    elements: dict
  switch_to:
    description:
      - For C(phase=observe) started (with C(async)) before the install of the next build - that
        build's tag. The watches start at once; the window opens once KAI runs this build rolled
        out, read from the running components as M(kaiops.runbooks.kai_identify) reads them, so
        a bind or a deletion during the switch is recorded, not missed.
      - Left out, the window opens when the module starts.
    type: str
  switch_timeout_s:
    description: How long to wait for C(switch_to) to roll out, in seconds; past it, a failed check.
    type: int
    default: 300
  placement:
    description: Pod spec fields (C(spec.nodeSelector), C(spec.tolerations)) for the fixture pods.
    type: dict
    default: {}
  probe_placement:
    description: The same for the probe workload that must run to completion.
    type: dict
    default: {}
  image:
    description: Image of the fixture pods (it only sleeps).
    type: str
    default: docker.io/library/busybox:kaiops-1.35.0
  probe_image:
    description: Image of the probe workload (runs C(/usr/local/bin/gpuprobe) and exits).
    type: str
    default: kaiops.dev/gpuprobe:0.1.0
  window_s:
    description: How long to follow the case's pods, in seconds.
    type: int
    default: 60
  concurrency:
    description: Simultaneous submissions of the concurrency case.
    type: int
    default: 20
  keep_namespaces:
    description: Keep the case's namespace for inspection.
    type: bool
    default: false
attributes:
  check_mode:
    support: partial
    details:
      - Under C(--check) it plants nothing, makes no request and reports the case as skipped.
"""

EXAMPLES = r"""
- name: Reproduce the nil-data edge on the installed build
  kaiops.runbooks.kai_reproduce_case:
    case: nil_data
    build: {version: v0.16.13, exposed: true, implementation: standin}
    run_id: "{{ kaiops_run_id }}"
"""

RETURN = r"""
declared:
  description: The expectation, as written before the case ran.
  returned: success
  type: dict
observations:
  description: Per workload, what the watches saw (node, phase, attempts, ConfigMaps, latencies).
  returned: success
  type: list
  elements: dict
assertions:
  description: Each declared check with C(result) pass or fail, figure and expected value.
  returned: success
  type: list
  elements: dict
verdict:
  description: C(pass) when every assertion passed.
  returned: success
  type: str
metrics:
  description: Submissions, affected, submit-to-bound and -Running with counts, completion, causes.
  returned: success
  type: dict
files:
  description: Evidence files written, relative to the bundle.
  returned: success
  type: list
  elements: str
"""

from ansible_collections.kaiops.runbooks.plugins.module_utils.ansible_module import run_module
from ansible_collections.kaiops.runbooks.plugins.module_utils.args_common import (
    AUTH_ARG_SPEC,
    EVIDENCE_ARG_SPEC,
    KAI_NAMESPACE_ARG_SPEC,
    RESERVATION_NAMESPACE_ARG_SPEC,
    merge_specs,
)
from ansible_collections.kaiops.runbooks.plugins.module_utils.k8s.client import KUBERNETES
from ansible_collections.kaiops.runbooks.plugins.module_utils.reproduce.runner import run_case


def argspec():
    return merge_specs(
        KAI_NAMESPACE_ARG_SPEC,
        RESERVATION_NAMESPACE_ARG_SPEC,
        AUTH_ARG_SPEC,
        EVIDENCE_ARG_SPEC,
        {
            "case": {
                "type": "str",
                "required": True,
                "choices": [
                    "nil_data",
                    "normal_update",
                    "creation",
                    "repeat",
                    "variants",
                    "recovery",
                    "concurrency",
                ],
            },
            "phase": {"type": "str", "choices": ["plant", "observe"]},
            "build": {"type": "dict", "required": True},
            "run_id": {"type": "str", "required": True},
            "namespace_prefix": {"type": "str", "default": "kaiops-repro"},
            "namespace": {"type": "str"},
            "workloads": {"type": "list", "elements": "dict"},
            "switch_to": {"type": "str"},
            "switch_timeout_s": {"type": "int", "default": 300},
            "placement": {"type": "dict", "default": {}},
            "probe_placement": {"type": "dict", "default": {}},
            "image": {"type": "str", "default": "docker.io/library/busybox:kaiops-1.35.0"},
            "probe_image": {"type": "str", "default": "kaiops.dev/gpuprobe:0.1.0"},
            "window_s": {"type": "int", "default": 60},
            "concurrency": {"type": "int", "default": 20},
            "keep_namespaces": {"type": "bool", "default": False},
        },
    )


def main():
    run_module(argspec(), run_case, libraries=[KUBERNETES])


if __name__ == "__main__":
    main()
