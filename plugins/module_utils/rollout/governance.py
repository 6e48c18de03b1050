# Copyright: kaiops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Who can edit KAI's coordination objects, read from RBAC: bindings resolved to subjects. Pure.

The objects (``targets``): Config ``kai-config``, the queues, the binder and scheduler
Deployments, and the GPU-sharing ConfigMaps in the namespaces the change touches (KAI's, the
reservation namespace, those of GPU-sharing pods). A subject can edit one when a rule of a role
bound to it (ClusterRoleBinding: cluster-wide; RoleBinding: in its namespace) allows a write verb
on that resource (wildcards included). A grant is flagged **broad** when a subject that is not a
system one (``system:`` users and groups, service accounts of ``kube-system`` and of KAI's own
namespace) holds it cluster-wide on ConfigMaps, or through ``*`` resources or verbs.

Read-only; ``governance_gate`` refuses nothing unless the change request sets
``refuse_broad_grants``.
"""

from ansible_collections.kaiops.runbooks.plugins.module_utils.k8s.objects import meta as _meta

WRITE_VERBS = ("create", "update", "patch", "delete")


def targets(kai_namespace, namespaces, binder="binder", scheduler="kai-scheduler-default"):
    """The coordination objects: (label, api group, resource, namespace or None, name or None)."""
    out = [
        ("Config kai-config", "kai.scheduler", "configs", None, "kai-config"),
        ("Queues", "scheduling.run.ai", "queues", None, None),
        ("SchedulingShards", "kai.scheduler", "schedulingshards", None, None),
        (
            "Deployment %s/%s" % (kai_namespace, binder),
            "apps",
            "deployments",
            kai_namespace,
            binder,
        ),
        (
            "Deployment %s/%s" % (kai_namespace, scheduler),
            "apps",
            "deployments",
            kai_namespace,
            scheduler,
        ),
    ]
    for ns in sorted(set(namespaces)):
        out.append(("GPU-sharing ConfigMaps in %s" % ns, "", "configmaps", ns, None))
    return out


def _matches(values, wanted):
    values = values or []
    return "*" in values or wanted in values


def rule_allows(rule, group, resource, verb, name):
    if not _matches(rule.get("apiGroups"), group):
        return False
    if not _matches(rule.get("resources"), resource):
        return False
    if not _matches(rule.get("verbs"), verb):
        return False
    names = rule.get("resourceNames") or []
    return not names or name is None or name in names


def subject_text(subject):
    kind = subject.get("kind")
    if kind == "ServiceAccount":
        return "ServiceAccount %s/%s" % (subject.get("namespace"), subject.get("name"))
    return "%s %s" % (kind, subject.get("name"))


def is_system(subject, kai_namespace):
    name = subject.get("name") or ""
    if subject.get("kind") in ("User", "Group") and name.startswith("system:"):
        return True
    if subject.get("kind") == "ServiceAccount" and subject.get("namespace") in (
        "kube-system",
        kai_namespace,
    ):
        return True
    return False


def _grants(rbac):
    """(binding, scope namespace or None, role, binding object) for each binding whose role
    exists: ClusterRoleBindings cluster-wide, RoleBindings in their namespace."""
    cluster_roles = {_meta(r).get("name"): r for r in rbac.get("cluster_roles") or []}
    roles = {(_meta(r).get("namespace"), _meta(r).get("name")): r for r in rbac.get("roles") or []}
    grants = []
    for b in rbac.get("cluster_role_bindings") or []:
        role = cluster_roles.get((b.get("roleRef") or {}).get("name"))
        if role:
            grants.append(("ClusterRoleBinding " + _meta(b).get("name"), None, role, b))
    for b in rbac.get("role_bindings") or []:
        ref = b.get("roleRef") or {}
        ns = _meta(b).get("namespace")
        role = (
            cluster_roles.get(ref.get("name"))
            if ref.get("kind") == "ClusterRole"
            else roles.get((ns, ref.get("name")))
        )
        if role:
            grants.append(("RoleBinding %s/%s" % (ns, _meta(b).get("name")), ns, role, b))
    return grants


def _in_scope(scope, namespace):
    if scope is not None and namespace is not None and scope != namespace:
        return False
    # a RoleBinding never grants a cluster-scoped object
    return not (scope is not None and namespace is None)


def _broad_reasons(scope, resource, wildcard):
    """Why a grant is broad: cluster-wide on ConfigMaps, or cluster-wide through a wildcard."""
    reasons = []
    if scope is None and resource == "configmaps":
        reasons.append("cluster-wide ConfigMap write")
    if scope is None and wildcard:
        reasons.append("wildcard rule (* resources or verbs)")
    return reasons


def _add_grant(editors, broad, grant, target, verbs, kai_namespace):
    """Each subject of one grant as an editor of the target; a broad grant of a subject that is
    not a system one is added to ``broad``."""
    via, scope, role, binding = grant
    _label, group, resource, _namespace, _name = target
    wildcard = any(
        "*" in (r.get("resources") or []) or "*" in (r.get("verbs") or [])
        for r in role.get("rules") or []
        if _matches(r.get("apiGroups"), group)
    )
    for subject in binding.get("subjects") or []:
        who = subject_text(subject)
        entry = editors.setdefault(
            who,
            {
                "subject": who,
                "system": is_system(subject, kai_namespace),
                "via": [],
                "verbs": set(),
            },
        )
        entry["via"].append(
            "%s -> %s %s%s"
            % (
                via,
                role.get("kind") or "Role",
                _meta(role).get("name"),
                "" if scope else " (cluster-wide)",
            )
        )
        entry["verbs"].update(verbs)
        reasons = _broad_reasons(scope, resource, wildcard)
        if reasons and not entry["system"]:
            key = (who, via)
            broad.setdefault(key, {"subject": who, "via": entry["via"][-1], "why": set()})
            broad[key]["why"].update(reasons)


def _editors(target, grants, kai_namespace, broad):
    """Who can write one target, by subject, and through which grants."""
    _label, group, resource, namespace, name = target
    editors = {}
    for grant in grants:
        scope, role = grant[1], grant[2]
        if not _in_scope(scope, namespace):
            continue
        verbs = [
            v
            for v in WRITE_VERBS
            if any(rule_allows(r, group, resource, v, name) for r in role.get("rules") or [])
        ]
        if verbs:
            _add_grant(editors, broad, grant, target, verbs, kai_namespace)
    return [
        {
            "subject": entry["subject"],
            "system": entry["system"],
            "verbs": sorted(entry["verbs"]),
            "via": sorted(set(entry["via"])),
        }
        for entry in sorted(editors.values(), key=lambda e: e["subject"])
    ]


def resolve(rbac, target_list, kai_namespace):
    """Per target, who can write it and through what; and the broad grants.

    ``rbac``: {cluster_roles, cluster_role_bindings, roles, role_bindings} as listed.
    """
    grants = _grants(rbac)
    broad = {}
    out = [
        {"target": target[0], "editors": _editors(target, grants, kai_namespace, broad)}
        for target in target_list
    ]
    flagged = [
        {"subject": b["subject"], "via": b["via"], "why": sorted(b["why"])}
        for b in sorted(broad.values(), key=lambda b: (b["subject"], b["via"]))
    ]
    return {"targets": out, "broad": flagged}


def governance_gate(summary, rule=None):
    """One gate (stage governance): passes unless the change request refuses broad grants."""
    from ansible_collections.kaiops.runbooks.plugins.module_utils.rollout.gates import checked

    rule = rule if isinstance(rule, dict) else {}
    if summary.get("error"):
        return checked(
            "governance",
            "governance",
            "not read: %s" % summary["error"],
            "RBAC read (read-only; refuses nothing unless kaiops_rollout_governance sets a rule)",
            summary["error"] if rule.get("refuse_broad_grants") else None,
            "give the rollout's credentials get/list on RBAC objects",
        )
    editors = sorted(
        {
            e["subject"]
            for t in summary.get("targets") or []
            for e in t["editors"]
            if not e["system"]
        }
    )
    broad = summary.get("broad") or []
    refuse = bool(rule.get("refuse_broad_grants")) and bool(broad)
    figure = "%d non-system subject(s) can edit KAI's coordination objects; %d broad grant(s)" % (
        len(editors),
        len(broad),
    )
    return checked(
        "governance",
        "governance",
        figure,
        "no broad grant (kaiops_rollout_governance.refuse_broad_grants)"
        if rule.get("refuse_broad_grants")
        else "reported (no rule set: refuses nothing)",
        "broad grants: %s"
        % "; ".join("%s (%s)" % (b["subject"], ", ".join(b["why"])) for b in broad)
        if refuse
        else None,
        "narrow the grants named, or drop the rule with the change owner",
    )
