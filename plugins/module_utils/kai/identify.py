# Copyright: kaiops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What KAI runs, read from the running components: the one reading every feature uses.

An install of KAI speaks with several voices, and after a change they can disagree (kai-contract
section 14: a ``helm rollback`` to an upgrade revision leaves helm and the operator at the old
version while ``kai-config`` and every component keep the newer one):

- helm's release: chart, app version, revision, status (given by the caller, read on the
  controller with helm; this layer reads no Secret);
- the operator Deployment ``kai-operator`` (its image tag is the chart's);
- Config ``kai-config``: its spec names every component's image tag, and its status conditions say
  whether the operator reconciled the current generation;
- each component Deployment: its images, owner (the operator's Config) and rollout state;
- KAI's admission webhooks and the ready endpoints behind each one's Service: with
  failurePolicy Fail, every pod they admit is refused while none is ready, and after a switch
  of version that lasts past the Deployments' rollout for as long as the endpoints lag (the
  admission Deployment is Recreate).

The version that runs is the binder's image tag (the code that binds). ``analyse`` puts the voices
side by side and names each disagreement as a finding; ``rolled_out`` says whether an install is
rolled out to a version. Pure except ``read`` and ``wait_rolled_out``.
"""

import time

from ansible_collections.kaiops.runbooks.plugins.module_utils.errors import (
    STATUS_NOT_FOUND,
    KaiopsError,
)
from ansible_collections.kaiops.runbooks.plugins.module_utils.kai import facts as F

MANAGED_BY_LABEL = "app.kubernetes.io/managed-by"
# The conditions KAI's operator reports on kai-config (contract section 14).
CONFIG_CONDITIONS = ("Reconciling", "Deployed", "Available", "DependenciesFulfilled", "Ready")
# What the identity keeps of helm's status (never the values it also carries).
HELM_KEYS = ("release", "revision", "status", "chart", "app_version", "changed_by_this_run")


def image_tag(image):
    """Split an image reference into (repository, tag, digest); tag/digest may be None. The one
    reading of an image reference: the inventory's containers and the identity's versions."""
    image = image or ""
    digest = None
    if "@" in image:
        image, digest = image.split("@", 1)
    repository, tag = image, None
    last = image.rsplit("/", 1)[-1]
    if ":" in last:
        repository, tag = image.rsplit(":", 1)
    return repository, tag, digest


def release_version(app_version):
    """v0.16.13 from a chart app version such as v0.16.13+standin (helm's voice), or None."""
    if not app_version:
        return None
    text = str(app_version).split("+", 1)[0]
    return text if text.startswith("v") else "v" + text


def is_component(deployment):
    name = (deployment.get("metadata") or {}).get("name") or ""
    return name in F.COMPONENTS or name.startswith(F.COMPONENT_PREFIX)


def deployment_state(dep):
    """One Deployment: images and tags, owner, rollout state (generation observed, every replica
    updated and available, none left over from the previous ReplicaSet)."""
    meta = dep.get("metadata") or {}
    spec = dep.get("spec") or {}
    status = dep.get("status") or {}
    containers = ((spec.get("template") or {}).get("spec") or {}).get("containers") or []
    replicas = spec.get("replicas", 1)
    owner = next(
        (o for o in meta.get("ownerReferences") or [] if o.get("controller")),
        None,
    )
    return {
        "name": meta.get("name"),
        "images": [c.get("image") for c in containers],
        "tag": image_tag(containers[0].get("image"))[1] if containers else None,
        "ready": "%s/%s" % (status.get("readyReplicas", 0), replicas),
        "rolled_out": status.get("observedGeneration", 0) >= meta.get("generation", 0)
        and status.get("updatedReplicas", 0) == replicas
        and status.get("availableReplicas", 0) == replicas
        and status.get("replicas", replicas) == replicas,
        "managed_by": (meta.get("labels") or {}).get(MANAGED_BY_LABEL),
        "owner": "%s/%s" % (owner.get("kind"), owner.get("name")) if owner else None,
        "implementation": F.implementation_of(dep),
    }


def _image_tags(node, path=""):
    """Every image tag a Config spec names, by path (e.g. binder.service.image: v0.16.14)."""
    found = {}
    if isinstance(node, dict):
        image = node.get("image")
        if isinstance(image, dict) and image.get("tag"):
            found[path + "image" if not path else path + ".image"] = str(image["tag"])
        for key, value in sorted(node.items()):
            if key != "image":
                found.update(_image_tags(value, "%s.%s" % (path, key) if path else key))
    return found


def config_state(config):
    """kai-config: generation, the image tags its spec names, and its conditions; ``current`` when
    every condition the operator reports was set for this generation; ``ready`` when Available
    and Ready are True for it."""
    if not config:
        return {"found": False, "tags": {}, "conditions": [], "current": False, "ready": False}
    meta = config.get("metadata") or {}
    generation = meta.get("generation")
    conditions = [
        {
            "type": c.get("type"),
            "status": c.get("status"),
            "reason": c.get("reason"),
            "observed_generation": c.get("observedGeneration"),
        }
        for c in (config.get("status") or {}).get("conditions") or []
    ]
    by_type = {c["type"]: c for c in conditions}
    current = bool(conditions) and all(c["observed_generation"] == generation for c in conditions)
    ready = current and all(
        (by_type.get(t) or {}).get("status") == "True" for t in ("Available", "Ready")
    )
    return {
        "found": True,
        "generation": generation,
        "tags": _image_tags(config.get("spec") or {}),
        "conditions": conditions,
        "current": current,
        "ready": ready,
    }


def helm_state(helm):
    """helm's voice from a helm_info status (chart, app_version, revision, status), or {}."""
    if not helm:
        return {}
    # Only what names the release: helm_info's status also carries the values (never recorded).
    out = {k: helm[k] for k in HELM_KEYS if k in helm}
    out["release"] = helm.get("release") or helm.get("name")
    out["version"] = release_version(helm.get("app_version"))
    return out


def helm_findings(version, helm):
    """helm's voice against the binder's: a release helm cannot upgrade, or another version."""
    out = []
    helm = helm_state(helm) if helm and "version" not in helm else (helm or {})
    if helm.get("status") and helm["status"] != "deployed":
        out.append(
            "helm release %s is %s at revision %s: helm upgrade cannot run on it; downgrade by "
            "uninstall and install of the recorded version"
            % (helm.get("release"), helm["status"], helm.get("revision"))
        )
    if helm.get("version") and version and helm["version"] != version:
        out.append("helm says %s, binder runs %s: split" % (helm["version"], version))
    return out


def all_findings(kai):
    """KAI's findings with helm's voice added, each once: a release helm cannot upgrade, or
    helm naming another version than the binder."""
    found = list(kai.get("findings") or [])
    return found + [f for f in helm_findings(kai.get("version"), kai.get("helm")) if f not in found]


def findings(identity):
    """Every disagreement between KAI's voices, each one line naming both sides."""
    version = identity.get("version")
    out = helm_findings(version, identity.get("helm"))
    operator = identity.get("operator") or {}
    if operator.get("version") and version and operator["version"] != version:
        out.append("operator runs %s, binder runs %s: split" % (operator["version"], version))
    others = sorted(
        "%s runs %s" % (c["name"], c["tag"])
        for c in identity.get("components") or []
        if c["name"] not in (F.BINDER, F.OPERATOR) and version and c["tag"] != version
    )
    if others:
        out.append("binder runs %s, %s: split" % (version, ", ".join(others)))
    config = identity.get("config") or {}
    stale = sorted(set(config.get("tags", {}).values()) - {version}) if version else []
    if stale and config.get("current"):
        out.append("kai-config names %s, binder runs %s: split" % (", ".join(stale), version))
    return out


def ready_endpoints(slices):
    """Endpoints ready to serve in a Service's EndpointSlices (an unset ``ready`` counts as
    ready, as the EndpointSlice API says consumers should read it)."""
    return sum(
        1
        for s in slices or []
        for e in s.get("endpoints") or []
        if (e.get("conditions") or {}).get("ready") is not False
    )


def webhook_states(configurations, namespace):
    """KAI's webhooks: each webhook of these configurations that calls a Service in KAI's
    namespace, by configuration, name, Service and failure policy."""
    out = []
    for cfg in configurations or []:
        for hook in cfg.get("webhooks") or []:
            service = (hook.get("clientConfig") or {}).get("service") or {}
            if service.get("namespace") != namespace:
                continue
            out.append(
                {
                    "configuration": "%s/%s"
                    % (cfg.get("kind"), (cfg.get("metadata") or {}).get("name")),
                    "webhook": hook.get("name"),
                    "service": "%s/%s" % (namespace, service.get("name")),
                    "failure_policy": hook.get("failurePolicy", "Fail"),
                }
            )
    return out


def read_webhooks(client, namespace):
    """KAI's webhooks with the ready endpoints behind each; [] where the API server serves no
    webhook configurations (then it calls none)."""
    configurations = []
    for kind in F.WEBHOOK_CONFIGURATIONS:
        try:
            configurations += client.list(*kind)
        except KaiopsError as exc:
            if exc.status != STATUS_NOT_FOUND:
                raise
    hooks = webhook_states(configurations, namespace)
    ready = {}
    for service in sorted({h["service"] for h in hooks}):
        ready[service] = ready_endpoints(
            client.list(
                *F.ENDPOINT_SLICE,
                namespace=namespace,
                label_selector="%s=%s" % (F.SERVICE_NAME_LABEL, service.split("/", 1)[1]),
            )
        )
    return [dict(h, ready_endpoints=ready[h["service"]]) for h in hooks]


def _binder_args(deployments):
    """The binder container's args as its Deployment gives them (None without a binder; the
    last one listed, as the components' states keep it, were there several)."""
    args = None
    for dep in deployments or []:
        if (dep.get("metadata") or {}).get("name") == F.BINDER:
            pod_spec = ((dep.get("spec") or {}).get("template") or {}).get("spec") or {}
            containers = pod_spec.get("containers") or []
            args = list(containers[0].get("args") or []) if containers else None
    return args


def _implementation(comps, deployments):
    """(implementation, its label for reports, the faults it plays) of the components."""
    implementation = "standin" if any(c["implementation"] == "standin" for c in comps) else "kai"
    faults = sorted({f for d in deployments or [] if is_component(d) for f in F.standin_faults(d)})
    label = F.IMPLEMENTATION_NAMES[implementation]
    if faults:
        label += " with faults: %s" % ", ".join(faults)
    return implementation, label, faults


def _all_rolled_out(comps, operator, cfg, webhooks):
    """Every component rolled out and every webhook served. An operator install is rolled out
    when the operator reconciled the Config's generation too; a chart that renders the
    Deployments itself has no conditions to wait for."""
    return (
        bool(comps)
        and all(c["rolled_out"] for c in comps)
        and (operator is None or bool(cfg["current"] and cfg["ready"]))
        and all(h["ready_endpoints"] for h in webhooks)
    )


def analyse(deployments, config, helm=None, server=None, webhooks=None):
    """The identity of the running KAI from its Deployments, kai-config, helm's status and its
    webhooks (``read_webhooks``)."""
    comps = sorted(
        (deployment_state(d) for d in deployments or [] if is_component(d)),
        key=lambda c: c["name"],
    )
    by_name = {c["name"]: c for c in comps}
    binder = by_name.get(F.BINDER)
    operator = by_name.get(F.OPERATOR)
    admission = ((config or {}).get("spec") or {}).get("admission") or {}
    implementation, label, faults = _implementation(comps, deployments)
    cfg = config_state(config)
    webhooks = list(webhooks or [])
    identity = {
        "version": binder["tag"] if binder else None,
        "version_source": "binder image tag",
        "implementation": implementation,
        "implementation_label": label,
        "faults": faults,
        "helm": helm_state(helm),
        "operator": {"version": operator["tag"], "rolled_out": operator["rolled_out"]}
        if operator
        else None,
        "config": cfg,
        "components": [c for c in comps if c["name"] != F.OPERATOR],
        "binder_flags": _binder_args(deployments),
        "gpu_sharing": admission.get("gpuSharing"),
        "block_nvidia_visible_devices": admission.get("blockNvidiaVisibleDevices"),
        "kubernetes_version": (server or {}).get("gitVersion"),
        "webhooks": webhooks,
        "all_rolled_out": _all_rolled_out(comps, operator, cfg, webhooks),
    }
    identity["findings"] = findings(identity)
    identity["split"] = bool(identity["findings"])
    return identity


def rolled_out(identity, version):
    """(True, []) when KAI runs ``version`` everywhere and is rolled out; else (False, reasons)."""
    reasons = []
    comps = identity.get("components") or []
    if not any(c["name"] == F.BINDER for c in comps):
        reasons.append("no binder Deployment")
    for c in comps:
        if c["tag"] != version:
            reasons.append("%s runs %s" % (c["name"], c["tag"]))
        elif not c["rolled_out"]:
            reasons.append("%s is rolling out (%s ready)" % (c["name"], c["ready"]))
    for hook in identity.get("webhooks") or []:
        if not hook.get("ready_endpoints"):
            reasons.append(
                "webhook %s has no ready endpoint behind Service %s (failurePolicy %s)"
                % (hook["webhook"], hook["service"], hook["failure_policy"])
            )
    operator = identity.get("operator")
    if operator is not None:
        cfg = identity.get("config") or {}
        if not cfg.get("found"):
            reasons.append("kai-config not found (the operator has nothing to reconcile)")
        elif not cfg.get("current"):
            reasons.append(
                "kai-config's conditions are not current for generation %s" % cfg.get("generation")
            )
        elif not cfg.get("ready"):
            reasons.append("kai-config is not Available and Ready")
        stale = sorted(set((cfg.get("tags") or {}).values()) - {version})
        if stale:
            reasons.append("kai-config names %s" % ", ".join(stale))
        if not operator.get("rolled_out"):
            reasons.append("kai-operator is rolling out")
    return (not reasons), reasons


def read(client, namespace):
    """The reads ``analyse`` needs: KAI's Deployments, kai-config, the API server's version."""
    deployments = client.list(*F.DEPLOYMENT, namespace=namespace)
    config = client.read(F.KAI_CONFIG[0], F.KAI_CONFIG[1], F.KAI_CONFIG_NAME)
    return deployments, config, client.server_version()


def identify(client, namespace, helm=None):
    deployments, config, server = read(client, namespace)
    webhooks = read_webhooks(client, namespace)
    return analyse(deployments, config, helm=helm, server=server, webhooks=webhooks)


def wait_rolled_out(
    client,
    namespace,
    version,
    timeout_s,
    helm=None,
    clock=time.monotonic,
    sleep=time.sleep,
    read_errors_retried=False,
):
    """Read until KAI runs ``version`` rolled out or ``timeout_s`` passed (KAI's operator rolls
    the components some seconds after helm returns). Returns (identity, seconds, ok, reasons);
    the seconds are measured here, so a figure over the bound is never reported as within it.
    With ``read_errors_retried`` a failed read (the API server busy during an upgrade) is the
    reason until a later read succeeds, instead of an error."""
    start = clock()
    identity = {}
    while True:
        try:
            identity = identify(client, namespace, helm=helm)
            ok, reasons = rolled_out(identity, version)
        except KaiopsError as exc:
            if not read_errors_retried:
                raise
            ok, reasons = False, ["reading KAI failed: %s" % exc]
        took = clock() - start
        if ok or took >= timeout_s:
            return identity, round(took, 1), ok, reasons
        sleep(min(1.0, max(0.0, timeout_s - took)))
