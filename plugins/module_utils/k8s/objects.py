# Copyright: kaiops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Kubernetes objects as plain data: references, times, pod conditions. Pure, no I/O."""

import datetime


def meta(obj):
    """An object's metadata, {} when it has none."""
    return (obj or {}).get("metadata") or {}


def parse_time(text):
    """RFC 3339 (as the API server writes it) -> aware datetime; None when absent/unreadable.

    A time that names no zone is read as UTC, the zone Kubernetes writes, so that every time this
    returns compares with every other (a naive one would raise TypeError against an aware one).
    """
    if not text:
        return None
    text = str(text).strip()
    try:
        return datetime.datetime.strptime(text.replace("Z", "+0000"), "%Y-%m-%dT%H:%M:%S%z")
    except ValueError:
        try:
            parsed = datetime.datetime.fromisoformat(text.replace("Z", "+00:00"))
        except ValueError:
            return None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=datetime.timezone.utc)


def iso(when):
    return when.astimezone(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ") if when else None


def ref(obj):
    data = meta(obj)
    return {
        "api_version": obj.get("apiVersion"),
        "kind": obj.get("kind"),
        "namespace": data.get("namespace"),
        "name": data.get("name"),
        "uid": data.get("uid"),
        "resource_version": data.get("resourceVersion"),
    }


def key(obj):
    """'<namespace>/<name>'."""
    data = meta(obj)
    return "%s/%s" % (data.get("namespace"), data.get("name"))


def condition(pod, kind):
    for cond in (pod.get("status") or {}).get("conditions") or []:
        if cond.get("type") == kind:
            return cond
    return None


def is_bound(pod):
    return bool((pod.get("spec") or {}).get("nodeName"))


def is_live(pod):
    phase = (pod.get("status") or {}).get("phase")
    return phase not in ("Succeeded", "Failed") and not meta(pod).get("deletionTimestamp")


def age_s(obj, now):
    created = parse_time(meta(obj).get("creationTimestamp"))
    return (now - created).total_seconds() if created else None


def in_scope(namespace, namespaces):
    return not namespaces or namespace in namespaces


def group_by(items, key_of):
    """{key: [items with that key]} in their order; an item whose key is None is left out."""
    grouped = {}
    for item in items or []:
        found = key_of(item)
        if found is not None:
            grouped.setdefault(found, []).append(item)
    return grouped
