# Copyright: kaiops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Service layer of kai_inventory_info: what KAI runs on a cluster and whether it is exposed.

``analyse`` turns the reads of ``inventory/client.py`` into the inventory; pure, rules as data
(``VERDICT_RULES``), so the decisions are testable without a cluster. The affected range is
an input: the action plugin fills it in from the collection's ``meta/kai_releases.yml``.

The defect (KAI binder panic on an existing GPU-sharing ConfigMap with nil data) and
the install facts are described in docs/ and the project's reference notes.
"""

import re

from ansible_collections.kaiops.runbooks.plugins.module_utils.kai import facts as kai_facts
from ansible_collections.kaiops.runbooks.plugins.module_utils.kai import identify as kai_identify
from ansible_collections.kaiops.runbooks.plugins.module_utils.kai.facts import (
    FRACTION_ANNOTATIONS,
    IMPLEMENTATION_NAMES,
    NIL_MAP_REASON,
    NODE_LABELS,
    SHARED_CM_ANNOTATION,
    fraction_pods,
    implementation_of,
    node_sharing,
    sharing_configmap_pattern,
    sharing_configmap_role,
)
from ansible_collections.kaiops.runbooks.plugins.module_utils.kai.facts import (
    annotations as _annotations,
)
from ansible_collections.kaiops.runbooks.plugins.module_utils.kai.facts import (
    labels as _labels,
)
from ansible_collections.kaiops.runbooks.plugins.module_utils.versions import (
    in_range,
    parse_range,
)

LIST_LIMIT = 50  # pods/configmaps listed by name in the result; counts are always complete


def _selector_matches(selector, labels):
    match = (selector or {}).get("matchLabels") or {}
    return bool(match) and all(labels.get(k) == v for k, v in match.items())


def is_kai_component(deployment, release=None):
    """A Deployment of KAI: one of KAI's names (kai-scheduler-<shard> too), or annotated as a
    resource of the KAI Helm release. Anything else in the namespace is not inventoried."""
    name = (deployment.get("metadata") or {}).get("name") or ""
    if name in kai_facts.COMPONENTS or name.startswith(kai_facts.COMPONENT_PREFIX):
        return True
    return (
        bool(release) and _annotations(deployment).get(kai_facts.HELM_RELEASE_ANNOTATION) == release
    )


def _verdict_flag(name):
    return any(
        name == flag or (flag.endswith("-") and name.startswith(flag))
        for flag in kai_facts.VERDICT_FLAGS
    )


def verdict_flags(items):
    """The container's flags that decide a verdict (kai.facts.VERDICT_FLAGS), as
    ``--name=value`` or ``--name`` alone; every other argument is left out of evidence."""
    items = [str(i) for i in items or []]
    out = []
    for number, item in enumerate(items):
        if not item.startswith("--"):
            continue
        name, sep, value = item.partition("=")
        if not _verdict_flag(name):
            continue
        if not sep and number + 1 < len(items) and not items[number + 1].startswith("-"):
            out.append("%s=%s" % (name, items[number + 1]))
        else:
            out.append(item if sep else name)
    return out


def component(deployment, pods):
    """One Deployment: images with tags, the verdict flags, replicas, pod restarts."""
    spec = deployment.get("spec") or {}
    status = deployment.get("status") or {}
    template = (spec.get("template") or {}).get("spec") or {}
    own = [p for p in pods if _selector_matches(spec.get("selector"), _labels(p))]
    restarts = {}
    for pod in own:
        for cs in (pod.get("status") or {}).get("containerStatuses") or []:
            restarts[cs["name"]] = restarts.get(cs["name"], 0) + int(cs.get("restartCount", 0))
    containers = []
    for container in template.get("containers") or []:
        repository, tag, digest = kai_identify.image_tag(container.get("image"))
        containers.append(
            {
                "name": container.get("name"),
                "image": container.get("image"),
                "repository": repository,
                "tag": tag,
                "digest": digest,
                "flags": verdict_flags(
                    list(container.get("command") or []) + list(container.get("args") or [])
                ),
                "restarts": restarts.get(container.get("name"), 0),
            }
        )
    meta = deployment.get("metadata") or {}
    return {
        "name": meta.get("name"),
        "replicas": spec.get("replicas", 1),
        "ready_replicas": status.get("readyReplicas", 0),
        "available_replicas": status.get("availableReplicas", 0),
        "updated_replicas": status.get("updatedReplicas", 0),
        "pods": len(own),
        "restarts": sum(restarts.values()),
        "containers": containers,
        "helm_release": _annotations(deployment).get("meta.helm.sh/release-name"),
        "implementation": implementation_of(deployment),
    }


def _main_container(comp, preferred):
    for container in comp["containers"]:
        if container["name"] == preferred:
            return container
    return comp["containers"][0] if comp["containers"] else None


def helm_from_secrets(secrets):
    """Latest revision per release from Helm's release Secrets' labels (no data is read)."""
    releases = {}
    for secret in secrets or []:
        labels = _labels(secret)
        name, revision = labels.get("name"), labels.get("version", "0")
        if not name or not revision.isdigit():
            continue
        if name not in releases or int(revision) > releases[name]["revision"]:
            releases[name] = {
                "release": name,
                "revision": int(revision),
                "status": labels.get("status"),
            }
    return releases


def sharing_configmaps(pods, configmaps_by_ns):
    """GPU-sharing ConfigMaps named after the pods' runai/shared-gpu-configmap prefix."""
    found = []
    for pod in pods:
        prefix = _annotations(pod).get(SHARED_CM_ANNOTATION)
        if not prefix:
            continue
        meta = pod["metadata"]
        pattern = sharing_configmap_pattern(prefix)
        for cm in configmaps_by_ns.get(meta["namespace"], []):
            cm_meta = cm.get("metadata") or {}
            match = pattern.match(cm_meta.get("name", ""))
            if not match:
                continue
            owners = cm_meta.get("ownerReferences") or []
            owned_by_pod = (
                len(owners) == 1
                and owners[0].get("kind") == "Pod"
                and owners[0].get("uid") == meta.get("uid")
            )
            has_data = bool(cm.get("data")) or bool(cm.get("binaryData"))
            role = sharing_configmap_role(cm_meta.get("name"))
            found.append(
                {
                    "namespace": meta["namespace"],
                    "name": cm_meta.get("name"),
                    "pod": meta.get("name"),
                    "role": role,
                    "has_data": has_data,
                    "owned_by_pod": owned_by_pod,
                    # Every precondition on the ConfigMap side of the panicking branch.
                    "trigger_ready": role == "capabilities" and not has_data and owned_by_pod,
                }
            )
    return found


def gpu_nodes(nodes, device_plugin_configmaps):
    listed, mig, fake = [], set(), 0
    time_slicing = mps = False
    for node in nodes or []:
        labels = _labels(node)
        capacity = ((node.get("status") or {}).get("capacity") or {}).get("nvidia.com/gpu")
        is_fake = labels.get(NODE_LABELS["fake_gpu"]) == "true"
        if not capacity and not is_fake:
            continue
        hints = {key: labels.get(label) for key, label in NODE_LABELS.items() if label in labels}
        fake += 1 if is_fake else 0
        if hints.get("mig_strategy"):
            mig.add(hints["mig_strategy"])
        shared = node_sharing(labels)
        time_slicing = time_slicing or "time-slicing" in shared
        mps = mps or "mps" in shared
        listed.append({"name": node["metadata"]["name"], "gpus": _int(capacity), "hints": hints})
    configs = []
    for cm in device_plugin_configmaps or []:
        text = "\n".join(str(v) for v in (cm.get("data") or {}).values())
        entry = {
            "namespace": cm["metadata"].get("namespace"),
            "name": cm["metadata"]["name"],
            "time_slicing": "timeSlicing" in text,
            "mps": re.search(r"\bmps\b", text) is not None,
        }
        time_slicing = time_slicing or entry["time_slicing"]
        mps = mps or entry["mps"]
        configs.append(entry)
    return {
        "count": len(listed),
        "gpus_total": sum(n["gpus"] for n in listed),
        "nodes": listed,
        "hints": {
            "mig_strategies": sorted(mig),
            "time_slicing": time_slicing,
            "mps": mps,
            "fake_gpu_nodes": fake,
            "device_plugin_configs": configs,
        },
    }


def _int(value):
    try:
        return int(value)
    except (TypeError, ValueError):
        return 0


# Exposure verdict rules, in order; the first whose predicate holds wins.
VERDICT_RULES = (
    ("not_installed", lambda f: not f["installed"], "KAI is not installed in the namespace"),
    (
        "unknown",
        lambda f: f["version_in_range"] is None,
        "the binder version could not be read from its image tag",
    ),
    (
        "not_exposed",
        lambda f: not f["version_in_range"],
        "the binder version is outside the affected range",
    ),
    (
        "exposed",
        lambda f: f["path_in_use"],
        "affected binder version and pods on the GPU-sharing path",
    ),
    (
        "latent",
        lambda f: f["gpu_sharing_enabled"],
        "affected binder version and GPU sharing on, but no GPU-sharing pods right now",
    ),
    (
        "not_exposed",
        lambda f: True,
        "affected binder version, but GPU sharing is off and no pod uses it",
    ),
)


def verdict(facts):
    for name, predicate, reason in VERDICT_RULES:
        if predicate(facts):
            return name, reason
    raise AssertionError("VERDICT_RULES ends with a catch-all")  # pragma: no cover


def _release_of(raw, deployments):
    """The KAI Helm release: the one asked for, else the first KAI Deployment's annotation."""
    return raw.get("release_name") or next(
        (
            _annotations(d).get(kai_facts.HELM_RELEASE_ANNOTATION)
            for d in deployments
            if is_kai_component(d) and _annotations(d).get(kai_facts.HELM_RELEASE_ANNOTATION)
        ),
        kai_facts.HELM_RELEASE,
    )


def _running_version(identity, binder, binder_name, operator_container):
    """(version, source): identify's reading, else the binder's tag, else the operator's."""
    version = identity["version"] if binder_name == kai_facts.BINDER else None
    if version is None and binder:
        version = (_main_container(binder, binder_name) or {}).get("tag")
    version_source = "binder image tag"
    if version is None and operator_container:
        version, version_source = operator_container.get("tag"), "operator image tag"
    return version, version_source


def _kai_reading(raw, binder_name, operator_name, admission_name):
    """What KAI runs: its components, the named ones among them, kai-config and the version."""
    deployments = raw.get("deployments") or []
    kai_pods = raw.get("kai_pods") or []
    release = _release_of(raw, deployments)
    components = sorted(
        (component(d, kai_pods) for d in deployments if is_kai_component(d, release)),
        key=lambda c: c["name"],
    )
    by_name = {c["name"]: c for c in components}
    binder = by_name.get(binder_name)
    operator_comp = by_name.get(operator_name)
    config = raw.get("kai_config")
    installed = bool(binder or operator_comp)
    kinds = set(c.get("implementation") for c in components)
    # The one reading of what runs (kai/identify): its findings name components, the operator
    # and kai-config disagreeing; helm's voice is added by the report, after helm is read.
    identity = kai_identify.analyse(
        [d for d in deployments if is_kai_component(d, release)], config
    )
    operator_container = _main_container(operator_comp, "operator") if operator_comp else None
    version, version_source = _running_version(identity, binder, binder_name, operator_container)
    return {
        "components": components,
        "binder": binder,
        "operator": operator_comp,
        "admission": by_name.get(admission_name),
        "config": config,
        "installed": installed,
        "implementation": ("standin" if "standin" in kinds else "kai") if installed else None,
        "identity": identity,
        "operator_container": operator_container,
        "version": version,
        "version_source": version_source,
    }


def _gpu_sharing(config, admission):
    """Whether GPU sharing is on: the admission container's flag decides, else kai-config."""
    config_spec = (config or {}).get("spec") or {}
    config_sharing = (config_spec.get("admission") or {}).get("gpuSharing")
    admission_arg = None
    if admission:
        admission_arg = any(
            kai_facts.bool_flag(c["flags"], kai_facts.SHARING_ARG) for c in admission["containers"]
        )
    if admission_arg is not None:
        sharing_enabled, sharing_source = admission_arg, "admission container args"
    elif config_sharing is not None:
        sharing_enabled, sharing_source = (
            bool(config_sharing),
            "kai-config spec.admission.gpuSharing",
        )
    else:
        sharing_enabled, sharing_source = None, "unknown"
    return {
        "enabled": sharing_enabled,
        "source": sharing_source,
        "admission_arg": admission_arg,
        "config_gpu_sharing": config_sharing,
        "config_gpu_sharing_mode": (config_spec.get("global") or {}).get("gpuSharingMode"),
    }


def _helm(raw, components, operator_container):
    """The release the components carry, its latest revision read from helm's Secrets."""
    helm_releases = helm_from_secrets(raw.get("helm_secrets"))
    release_name = next((c["helm_release"] for c in components if c["helm_release"]), None)
    helm = dict(helm_releases.get(release_name) or {}) if release_name else {}
    helm.update(
        {
            "release": release_name,
            "namespace": raw.get("namespace") if release_name else None,
            # chart version = app version = release tag for the KAI chart
            "chart_version": operator_container.get("tag") if operator_container else None,
            "source": "deployment annotations and operator image tag",
        }
    )
    return helm


def _bind_request_symptoms(bind_requests):
    failed = [b for b in bind_requests if (b.get("status") or {}).get("phase") == "Failed"]
    nil_map = [b for b in failed if NIL_MAP_REASON in str((b.get("status") or {}).get("reason"))]
    return {
        "bind_requests": len(bind_requests),
        "bind_requests_failed": len(failed),
        "bind_requests_nil_map": len(nil_map),
    }


def _exposure(kai, sharing_enabled, affected_range, pods, cms, symptoms):
    """The verdict (VERDICT_RULES) with its reasons, and the facts it was decided on."""
    version_affected = in_range(kai["version"], affected_range) if kai["installed"] else None
    facts = {
        "installed": kai["installed"],
        "version_in_range": version_affected,
        "path_in_use": bool(pods),
        "gpu_sharing_enabled": bool(sharing_enabled),
    }
    verdict_name, reason = verdict(facts)
    reasons = [reason]
    if cms and any(c["trigger_ready"] for c in cms):
        reasons.append(
            "GPU-sharing ConfigMaps with no data owned by their pod exist "
            "(the exact precondition of the panic)"
        )
    if symptoms["bind_requests_nil_map"]:
        reasons.append("BindRequests already failed with '%s'" % NIL_MAP_REASON)
    return {
        "verdict": verdict_name,
        "reasons": reasons,
        "affected_range": affected_range,
        "binder_version": kai["version"],
        "version_in_range": version_affected,
        "path_in_use": facts["path_in_use"],
        "gpu_sharing_enabled": sharing_enabled,
    }


def _status(installed, access):
    status = "ok" if installed else "not_installed"
    denied = sorted(k for k, v in access.items() if v == "forbidden")
    if installed and denied:
        status = "partial"
    if not installed and access.get("deployments") == "forbidden":
        status = "forbidden"
    return status


def _server_version(version_info):
    version_info = version_info or {}
    return {
        "git_version": version_info.get("gitVersion"),
        "major": version_info.get("major"),
        "minor": version_info.get("minor"),
        "platform": version_info.get("platform"),
    }


def _kai_section(raw, kai, sharing, helm):
    installed, identity = kai["installed"], kai["identity"]
    return {
        "installed": installed,
        "namespace": raw.get("namespace"),
        "version": kai["version"],
        "version_source": kai["version_source"] if kai["version"] else None,
        "implementation": kai["implementation"],
        "implementation_label": identity.get("implementation_label")
        or IMPLEMENTATION_NAMES.get(kai["implementation"]),
        "binder": kai["binder"],
        "operator": kai["operator"],
        "components": kai["components"],
        "helm": helm,
        "config": {
            "found": kai["config"] is not None,
            "gpu_sharing": sharing["config_gpu_sharing"],
            "gpu_sharing_mode": sharing["config_gpu_sharing_mode"],
            "generation": identity["config"].get("generation"),
            "conditions": identity["config"]["conditions"],
            "conditions_current": identity["config"]["current"],
            "image_tags": identity["config"]["tags"],
        },
        "all_rolled_out": identity["all_rolled_out"] if installed else None,
        "findings": identity["findings"] if installed else [],
    }


def _affected_path_section(pods, cms):
    return {
        "in_use": bool(pods),
        "fraction_pods": len(pods),
        "pods": [
            {
                "namespace": p["metadata"]["namespace"],
                "name": p["metadata"]["name"],
                "annotations": {
                    k: v for k, v in _annotations(p).items() if k in FRACTION_ANNOTATIONS
                },
            }
            for p in pods[:LIST_LIMIT]
        ],
        "configmaps": len(cms),
        "configmaps_without_data": sum(1 for c in cms if not c["has_data"]),
        "trigger_ready_configmaps": sum(1 for c in cms if c["trigger_ready"]),
        "configmap_list": cms[:LIST_LIMIT],
    }


def retracted_release(version, releases):
    """The release row's retraction when ``version`` is a release upstream withdrew
    (``retracted: true`` in meta/kai_releases.yml), else None."""
    for row in releases or []:
        if version and row.get("version") == version and row.get("retracted") is True:
            return {"version": version, "source": row.get("retracted_source")}
    return None


def analyse(
    raw,
    cluster,
    affected_range,
    binder_name="binder",
    operator_name="kai-operator",
    admission_name="admission",
    restart_threshold=None,
    releases=None,
):
    """The inventory of one cluster from collect()'s reads; raises only for a bad range."""
    parse_range(affected_range)
    access = raw.get("access") or {}
    kai = _kai_reading(raw, binder_name, operator_name, admission_name)
    sharing = _gpu_sharing(kai["config"], kai["admission"])
    pods = fraction_pods(raw.get("pods") or [])
    cms = sharing_configmaps(pods, raw.get("sharing_configmaps") or {})
    symptoms = _bind_request_symptoms(raw.get("bind_requests") or [])
    helm = _helm(raw, kai["components"], kai["operator_container"])
    section = _kai_section(raw, kai, sharing, helm)
    section["retracted"] = retracted_release(kai["version"], releases)
    over = []
    if restart_threshold is not None:
        over = [c["name"] for c in kai["components"] if c["restarts"] > restart_threshold]
    return {
        "cluster": cluster,
        "status": _status(kai["installed"], access),
        "server_version": _server_version(raw.get("version")),
        "kai": section,
        "gpu_sharing": sharing,
        "affected_path": _affected_path_section(pods, cms),
        "symptoms": symptoms,
        "gpu_nodes": gpu_nodes(raw.get("nodes"), raw.get("device_plugin_configmaps")),
        "exposure": _exposure(kai, sharing["enabled"], affected_range, pods, cms, symptoms),
        "restart_threshold": restart_threshold,
        "restart_threshold_exceeded": over,
        "access": dict(sorted(access.items())),
        "api_calls": raw.get("api_calls"),
    }
