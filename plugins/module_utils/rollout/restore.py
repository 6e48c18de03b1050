# Copyright: kaiops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Restoring KAI's configuration after the downgrade: what to put back, what not. Pure.

The objects restored are those a rollback needs beyond the Helm release: Config ``kai-config``,
the queues and the SchedulingShards, as the snapshot before the change recorded them
(``snapshots/before-change-<cluster>/``). For each:

- recorded and absent now: recreated from the record, unless it was there right after the upgrade
  (something else deleted it in between: not restored, reported);
- recorded, present, its spec as recorded: nothing to do (the downgrade put it back, or it
  never changed);
- recorded, present, changed **in between** - its resourceVersion before the rollback differs from
  the one read right after the upgrade, so something other than the upgrade changed it: **not
  restored automatically**, reported with who last wrote it (managedFields);
- recorded, present, changed by the upgrade only: its recorded spec is put back (a replace with
  the current resourceVersion as precondition);
- present and not recorded (created after the snapshot): left in place, reported.

Without a reading after the upgrade (a bundle from before this was recorded) an object that
differs is restored and the report says the in-between check could not be made.
"""

import copy

from ansible_collections.kaiops.runbooks.plugins.module_utils.k8s.objects import meta as _meta

# (apiVersion, kind, snapshot folder suffix) restored after the downgrade.
RESTORED_KINDS = (
    ("kai.scheduler/v1", "Config", "config"),
    ("scheduling.run.ai/v2", "Queue", "queue"),
    ("kai.scheduler/v1", "SchedulingShard", "schedulingshard"),
)
# What a downgrade must keep (KAI's documented uninstall keeps CRDs, queues, SchedulingShards and
# the reservation namespace; pod groups are the users' work): read before and after, by name.
SURVIVOR_KINDS = (
    ("apiextensions.k8s.io/v1", "CustomResourceDefinition", "crds"),
    ("scheduling.run.ai/v2", "Queue", "queues"),
    ("kai.scheduler/v1", "SchedulingShard", "schedulingshards"),
    ("scheduling.run.ai/v2alpha2", "PodGroup", "podgroups"),
)
KAI_CRD_GROUPS = ("kai.scheduler", "scheduling.run.ai")


# A container waiting in one of these never starts until someone changes the image or the registry.
UNPULLED = ("ErrImagePull", "ImagePullBackOff", "InvalidImageName", "ErrImageNeverPull")
HOOK_ANNOTATION = "helm.sh/hook"
# What KAI's post-delete hook deletes (its chart's hooks/post): the Deployments the operator made
# and Config kai-config.
OPERATOR_MANAGED = "app.kubernetes.io/managed-by=kai-operator"
KAI_CONFIG = "Config//kai-config"


def _unpulled(pod):
    """The pod's container statuses (init containers first) waiting on an image not pulled."""
    status = pod.get("status") or {}
    return [
        c
        for c in (status.get("initContainerStatuses") or [])
        + (status.get("containerStatuses") or [])
        if ((c.get("state") or {}).get("waiting") or {}).get("reason") in UNPULLED
    ]


def stuck_hooks(jobs, pods):
    """The Helm hook Jobs (annotation ``helm.sh/hook``) not finished whose pods wait on an image
    that was not pulled: [{job, uid, resource_version, hook, pod, image, reason, message}].

    Why the downgrade needs them: a release whose new images never reached the cluster leaves its
    upgrade hook waiting, and its uninstall runs KAI's post-delete hook on the same missing image;
    helm gives up ("timed out waiting for the condition") after removing the release, and the
    Jobs stay. Left, the post-delete one would delete ``kai-config`` whenever its image arrives,
    taking down the KAI the downgrade installs (contract, "An image missing on a cluster")."""
    by_job = {}
    for pod in pods or []:
        for ref in _meta(pod).get("ownerReferences") or []:
            if ref.get("kind") == "Job":
                by_job.setdefault(ref.get("uid"), []).append(pod)
    out = []
    for job in jobs or []:
        meta = _meta(job)
        hook = (meta.get("annotations") or {}).get(HOOK_ANNOTATION)
        if not hook or (job.get("status") or {}).get("succeeded"):
            continue
        for pod in by_job.get(meta.get("uid")) or []:
            waiting = _unpulled(pod)
            if waiting:
                why = waiting[0]["state"]["waiting"]
                out.append({
                    "job": meta.get("name"),
                    "uid": meta.get("uid"),
                    "resource_version": meta.get("resourceVersion"),
                    "hook": hook,
                    "pod": _meta(pod).get("name"),
                    "image": waiting[0].get("image"),
                    "reason": why.get("reason"),
                    "message": why.get("message"),
                    "what": "%s hook Job %s (its pod waited on %s: %s)"
                    % (hook, meta.get("name"), waiting[0].get("image"), why.get("reason")),
                })  # fmt: skip
                break
    return out


def survivors(by_kind, reservation_namespace_present):
    """{what: sorted names} of what a downgrade must keep, from lists of objects by folder."""
    out = {}
    for _api, _kind, what in SURVIVOR_KINDS:
        names = []
        for obj in by_kind.get(what) or []:
            meta = obj.get("metadata") or {}
            if what == "crds" and (obj.get("spec") or {}).get("group") not in KAI_CRD_GROUPS:
                continue
            names.append(
                "%s/%s" % (meta["namespace"], meta["name"])
                if meta.get("namespace")
                else meta.get("name")
            )
        out[what] = sorted(names)
    out["reservation_namespace"] = ["present"] if reservation_namespace_present else []
    return out


def lost(before, after):
    """What was there before the downgrade and is gone after it: {what: [names]}."""
    out = {}
    for what, names in sorted((before or {}).items()):
        gone = sorted(set(names) - set((after or {}).get(what) or []))
        if gone:
            out[what] = gone
    return out


DROP_METADATA = (
    "uid",
    "resourceVersion",
    "creationTimestamp",
    "generation",
    "managedFields",
    "selfLink",
)


def key(obj):
    meta = _meta(obj)
    return "%s/%s/%s" % (obj.get("kind"), meta.get("namespace") or "", meta.get("name"))


def versions(objects):
    """{key: resourceVersion} of objects as read."""
    return {key(o): _meta(o).get("resourceVersion") for o in objects}


def last_writer(obj):
    fields = _meta(obj).get("managedFields") or []
    if not fields:
        return "unknown (no managedFields)"
    newest = sorted(fields, key=lambda f: f.get("time") or "")[-1]
    return "%s (%s at %s)" % (newest.get("manager"), newest.get("operation"), newest.get("time"))


def recreate_body(recorded):
    body = copy.deepcopy(recorded)
    meta = body.setdefault("metadata", {})
    for field in DROP_METADATA:
        meta.pop(field, None)
    body.pop("status", None)
    return body


def _absent_action(k, after_upgrade):
    """(action, why) for an object recorded and absent now."""
    if after_upgrade is not None and k in after_upgrade:
        return (
            "not_restored",
            "deleted in between (it was there right after the upgrade, "
            "resourceVersion %s): recreate it by hand from the snapshot if that "
            "deletion is to be undone" % after_upgrade[k],
        )
    return "recreate", "recorded before the change, absent now"


def _present_action(k, rec, cur, before_rollback, after_upgrade):
    """(action, why) for an object recorded and present now."""
    if cur.get("spec") == rec.get("spec"):
        return "none", "spec as recorded before the change"
    if after_upgrade is None:
        return (
            "replace",
            "spec differs from the record; no reading after the upgrade, so a "
            "change in between could not be ruled out",
        )
    before, after = (before_rollback or {}).get(k), after_upgrade.get(k)
    if after is not None and before is not None and before != after:
        return (
            "not_restored",
            "changed in between (resourceVersion %s after the upgrade, %s before "
            "the rollback; last written by %s): restore it by hand from the snapshot if "
            "that change is to go" % (after, before, last_writer(cur)),
        )
    return "replace", "changed by the upgrade: the recorded spec is put back"


def plan(recorded, before_rollback, after_upgrade, now):
    """Actions per object: ``recreate``, ``replace``, ``none``, ``not_restored``, ``left``.

    ``recorded``: the snapshot's objects; ``before_rollback``: {key: resourceVersion} read before
    the downgrade; ``after_upgrade``: {key: resourceVersion} read right after the upgrade, or
    None; ``now``: the objects as read after the downgrade.
    """
    now_by_key = {key(o): o for o in now}
    rec_by_key = {key(o): o for o in recorded}
    out = []
    for k in sorted(rec_by_key):
        rec, cur = rec_by_key[k], now_by_key.get(k)
        if cur is None:
            action, why = _absent_action(k, after_upgrade)
        else:
            action, why = _present_action(k, rec, cur, before_rollback, after_upgrade)
        out.append({"object": k, "action": action, "why": why})
    for k in sorted(set(now_by_key) - set(rec_by_key)):
        out.append(
            {
                "object": k,
                "action": "left",
                "why": "created after the snapshot (not recorded before the change): left in place",
            }
        )
    return out


def summary(results):
    done = [r for r in results if r.get("outcome") in ("recreated", "replaced")]
    same = [r for r in results if r.get("outcome") == "unchanged"]
    not_restored = [
        r for r in results if r.get("outcome") in ("not_restored", "left", "failed", "conflict")
    ]
    return {
        "restored": len(done),
        "unchanged": len(same),
        "not_restored": len(not_restored),
        "not_restored_objects": ["%s: %s" % (r["object"], r["why"]) for r in not_restored],
    }


def merge_patch(current, desired):
    """The JSON merge patch (RFC 7386) that turns ``current`` into ``desired``: keys gone become
    null, mappings are patched key by key, anything else is replaced."""
    if not isinstance(current, dict) or not isinstance(desired, dict):
        return copy.deepcopy(desired)
    out = {}
    for k in current:
        if k not in desired:
            out[k] = None
    for k, v in desired.items():
        if k not in current:
            out[k] = copy.deepcopy(v)
        elif current[k] != v:
            out[k] = merge_patch(current[k], v)
    return out
