# Copyright: kaiops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Service layer of diagnose: the client's reads turned into the classifier's snapshot, and the
cluster's diagnosis. Pure: no I/O, the clock passed in.

The causes, their rules and their order are the shared classifier's (``scan/pending.py``),
so ``recovery.yml`` gives a Pending pod the same cause as ``diagnose.yml``.
"""

from ansible_collections.kaiops.runbooks.plugins.module_utils.k8s.objects import iso
from ansible_collections.kaiops.runbooks.plugins.module_utils.scan.pending import (
    classify,
    snapshot,
)


def diagnose(raw, now, cluster, namespaces=()):
    """The cluster's diagnosis: each Pending pod's cause with its proofs, grouped by cause."""
    found = classify(snapshot(raw), now, namespaces)
    access = raw.get("access") or {}
    # partial: a section the credentials may not read or the cluster does not serve (logs that
    # were not asked for are a choice, not a gap).
    refused = [s for s, state in access.items() if state in ("forbidden", "not_served")]
    return {
        "cluster": cluster,
        "status": "partial" if refused else "ok",
        "read_at": iso(now),
        "namespaces": list(namespaces or []),
        "pending": len(found["pods"]),
        "by_cause": found["by_cause"],
        "pods": found["pods"],
        "notes": found["notes"],
        "access": access,
        "api_calls": raw.get("api_calls"),
    }
