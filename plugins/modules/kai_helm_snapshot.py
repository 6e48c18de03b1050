#!/usr/bin/python
# Copyright: kaiops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

DOCUMENTATION = r"""
module: kai_helm_snapshot
short_description: Record a Helm release's revision, history and values in the run's evidence folder
version_added: 0.1.0
author:
  - kaiops contributors (@kaiops)
description:
  - Runs C(helm history) and C(helm get values --revision <current>) (read-only) and writes
    C(snapshots/<name>/values.json), C(history.json) and C(release.json) into the run's evidence
    folder, so a rollback can restore the recorded revision and configuration.
  - The values pass through the collection's one redaction policy (docs/evidence.md); values
    whose key looks secret (token, password, secret, api key...) and secrets found in any value
    (URL passwords, bearer tokens, JWTs, PEM blocks, secret-looking flags, long high-entropy
    strings) are replaced with C(<redacted len~N sha256:XXXXXXXX>) before they are written;
    their paths are returned in RV(redacted). The values themselves are never returned in the
    task result.
extends_documentation_fragment:
  - kaiops.runbooks.attributes
  - kaiops.runbooks.evidence
options:
  name:
    description: Name of the snapshot folder under C(snapshots/) (C(-2), C(-3)... when taken).
    type: str
    required: true
  release:
    description: Name of the Helm release.
    type: str
    required: true
  namespace:
    description: Namespace of the Helm release.
    type: str
    required: true
  kubeconfig:
    description: Path of the kubeconfig; default - helm's own (KUBECONFIG, ~/.kube/config).
    type: path
  context:
    description: Context in the kubeconfig.
    type: str
  binary_path:
    description: Path of helm; default - helm on PATH.
    type: path
attributes:
  check_mode:
    support: full
    details:
      - Only reads; runs the same under C(--check) and writes its evidence files.
seealso:
  - module: kaiops.runbooks.kai_snapshot
"""

EXAMPLES = r"""
- name: Record KAI's Helm release before the change
  kaiops.runbooks.kai_helm_snapshot:
    name: before-change-helm
    release: kai-scheduler
    namespace: kai-scheduler
    kubeconfig: "{{ kaiops_kubeconfig }}"
"""

RETURN = r"""
revision:
  description: The release's current revision.
  returned: success
  type: int
  sample: 3
chart:
  description: Chart name and version of the current revision.
  returned: success
  type: str
  sample: kai-scheduler-v1.4.2
app_version:
  description: App version of the current revision.
  returned: success
  type: str
status:
  description: Helm status of the current revision.
  returned: success
  type: str
  sample: deployed
redacted:
  description: Paths of the values replaced with C(<redacted len~N sha256:XXXXXXXX>).
  returned: success
  type: list
  elements: str
folder:
  description: The snapshot folder, relative to RV(evidence_dir); null when nothing was written.
  returned: success
  type: str
files:
  description: Files written, relative to RV(evidence_dir).
  returned: success
  type: list
  elements: str
evidence_dir:
  description: The evidence folder written into; null when none was known.
  returned: success
  type: str
"""

from ansible_collections.kaiops.runbooks.plugins.module_utils.ansible_module import run_module
from ansible_collections.kaiops.runbooks.plugins.module_utils.args_common import (
    EVIDENCE_ARG_SPEC,
    merge_specs,
)
from ansible_collections.kaiops.runbooks.plugins.module_utils.snapshot.runner import (
    run_helm_snapshot,
)


def argspec():
    return merge_specs(
        EVIDENCE_ARG_SPEC,
        {
            "name": {"type": "str", "required": True},
            "release": {"type": "str", "required": True},
            "namespace": {"type": "str", "required": True},
            "kubeconfig": {"type": "path"},
            "context": {"type": "str"},
            "binary_path": {"type": "path"},
        },
    )


def main():
    run_module(argspec(), run_helm_snapshot)


if __name__ == "__main__":
    main()
