# Copyright: kaiops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The collection's redaction policy: ``evidence/redact.py``'s rules, KAI's evidence kept.

The generic policy hashes the values of every ConfigMap; this one keeps those of KAI's
GPU-sharing ConfigMaps (``kai/facts.is_gpu_sharing_configmap``): they are the evidence of the
defect. Every writer of a run's bundle takes its policy from here - the evidence callback, the
report writer (``bundle/report.py``), the snapshot, the recovery journal - so an object is
redacted the same way wherever it is written. Pure, no I/O.
"""

from ansible_collections.kaiops.runbooks.plugins.module_utils.evidence.redact import (
    DEFAULT_SECRET_KEY_PATTERN,
    RedactionPolicy,
)
from ansible_collections.kaiops.runbooks.plugins.module_utils.kai.facts import (
    is_gpu_sharing_configmap,
)


class KaiRedactionPolicy(RedactionPolicy):
    """``RedactionPolicy`` with KAI's GPU-sharing ConfigMaps kept whole; same options."""

    def __init__(self, key_pattern=DEFAULT_SECRET_KEY_PATTERN, configmap_values=False):
        super(KaiRedactionPolicy, self).__init__(
            key_pattern, configmap_values, evidence_configmap=is_gpu_sharing_configmap
        )


DEFAULT_POLICY = KaiRedactionPolicy()


def policy_for(params):
    """The policy for a module's params: the default, with kai_snapshot's configmap_values."""
    if params and params.get("configmap_values"):
        return KaiRedactionPolicy(configmap_values=True)
    return DEFAULT_POLICY


def sanitize_object(obj, policy=None):
    """Return (redacted copy of obj, list of what was removed or replaced)."""
    return (policy or DEFAULT_POLICY).sanitize_object(obj)


def redact_values(value, pattern=DEFAULT_SECRET_KEY_PATTERN):
    """Any structure through a policy with this key pattern."""
    if pattern == DEFAULT_SECRET_KEY_PATTERN:
        return DEFAULT_POLICY.redact(value)
    return KaiRedactionPolicy(pattern).redact(value)


def redact_text(text, policy=None):
    return (policy or DEFAULT_POLICY).redact_text(text)


# The callback's name for the policy.
Redactor = KaiRedactionPolicy
