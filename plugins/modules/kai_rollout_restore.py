#!/usr/bin/python
# Copyright: kaiops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

DOCUMENTATION = r"""
module: kai_rollout_restore
short_description: Read, or restore after the downgrade, KAI's recorded configuration
version_added: 0.1.0
author:
  - kaiops contributors (@kaiops)
description:
  - O(operation=read) reads Config C(kai-config), the queues and the SchedulingShards and returns
    their resourceVersions (right after the upgrade, and before a rollback).
  - O(operation=survivors) reads, by name, what a downgrade must keep - KAI's CRDs, the queues,
    the SchedulingShards, the PodGroups and the reservation namespace - read before and after it.
  - O(operation=restore), after the downgrade, puts back what the snapshot before the change
    (O(snapshot_dir), written by M(kaiops.runbooks.kai_snapshot)) recorded of those objects -
    recreated when absent, their spec put back (a merge patch with the resourceVersion as
    precondition) when the upgrade changed them - and reports what it did not restore
    automatically - objects changed in between (their resourceVersion before the rollback
    differs from the one read right after the upgrade) and objects created after the snapshot,
    which are left in place.
extends_documentation_fragment:
  - kaiops.runbooks.kai_namespaces.reservation
  - kaiops.runbooks.k8s_auth
  - kaiops.runbooks.journal
  - kaiops.runbooks.attributes
options:
  operation:
    description: What to do.
    type: str
    choices: [read, restore, survivors, hooks]
    default: read
  snapshot_dir:
    description:
      - For O(operation=restore), the snapshot folder - absolute, relative to the run's bundle
        (C(snapshots/before-change-<cluster>)) or relative to the evidence store
        (C(<bundle>/snapshots/before-change-<cluster>)).
      - Default - the snapshot the cluster's record (in the run's journal) holds before the
        change.
    type: str
  evidence_root:
    description: The evidence store. Default - the run's context, given by the action plugin.
    type: path
  kai_namespace:
    description: For O(operation=hooks), the namespace of KAI's release.
    type: str
    default: kai-scheduler
  before_rollback:
    description: For O(operation=restore), the resourceVersions read before the downgrade.
    type: dict
  after_upgrade:
    description:
      - For O(operation=restore), the resourceVersions read right after the upgrade, if known.
      - Default, when O(snapshot_dir) is not given either - those the cluster's record holds.
    type: dict
attributes:
  check_mode:
    support: full
    details:
      - O(operation=read) runs the same; O(operation=restore) and O(operation=hooks) report what
        they would do and change nothing.
seealso:
  - module: kaiops.runbooks.kai_rollout_rollback
"""

EXAMPLES = r"""
- name: Restore the configuration recorded before the change
  kaiops.runbooks.kai_rollout_restore:
    operation: restore
    before_rollback: "{{ read_before.objects }}"
"""

RETURN = r"""
objects:
  description: For O(operation=read), C({kind/namespace/name - resourceVersion}).
  returned: when operation is read
  type: dict
survivors:
  description:
    - For O(operation=survivors), C({crds, queues, schedulingshards, podgroups,
      reservation_namespace - sorted names}).
  returned: when operation is survivors
  type: dict
restore:
  description:
    - For O(operation=restore), C(results) per object (action, outcome, why) and C(summary).
  returned: when operation is restore
  type: dict
hooks:
  description:
    - For O(operation=hooks), the Helm hook Jobs in O(kai_namespace) whose pods wait on an image
      that was not pulled (C(ErrImagePull), C(ImagePullBackOff), ...), each deleted (only if
      unchanged since read) - after an uninstall that timed out on such a hook, left, it would
      run whenever its image arrives.
  returned: when operation is hooks
  type: list
  elements: dict
  contains:
    job:
      description: The Job's name (absent for the hook's work done in its stead).
      type: str
    hook:
      description: Its C(helm.sh/hook) annotation (e.g. C(post-delete)).
      type: str
    image:
      description: The image its pod waits on.
      type: str
    reason:
      description: Why its container waits (e.g. C(ErrImagePull)).
      type: str
    what:
      description: What was deleted and why, as the report's interventions line says it.
      type: str
    outcome:
      description: C(deleted), or C(would delete) under check mode.
      type: str
"""

from ansible_collections.kaiops.runbooks.plugins.module_utils.ansible_module import run_module
from ansible_collections.kaiops.runbooks.plugins.module_utils.args_common import (
    AUTH_ARG_SPEC,
    JOURNAL_ARG_SPEC,
    KAI_NAMESPACE_ARG_SPEC,
    RESERVATION_NAMESPACE_ARG_SPEC,
    merge_specs,
)
from ansible_collections.kaiops.runbooks.plugins.module_utils.k8s.client import KUBERNETES
from ansible_collections.kaiops.runbooks.plugins.module_utils.rollout.change_runner import (
    run_rollout_restore,
)

# The shared action plugin gives `cluster`, when the task leaves it out, the host the task runs for.
CLUSTER_FROM_HOST = True


def argspec():
    return merge_specs(
        RESERVATION_NAMESPACE_ARG_SPEC,
        KAI_NAMESPACE_ARG_SPEC,
        AUTH_ARG_SPEC,
        JOURNAL_ARG_SPEC,
        {
            "operation": {
                "type": "str",
                "choices": ["read", "restore", "survivors", "hooks"],
                "default": "read",
            },
            "snapshot_dir": {"type": "str"},
            "evidence_root": {"type": "path"},
            "before_rollback": {"type": "dict"},
            "after_upgrade": {"type": "dict"},
        },
    )


def main():
    run_module(argspec(), run_rollout_restore, libraries=[KUBERNETES])


if __name__ == "__main__":
    main()
