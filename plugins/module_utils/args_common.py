# Copyright: kaiops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Argument-spec dicts shared by the modules; kept in step with doc_fragments/."""

# doc_fragments/k8s_auth.py documents these.
AUTH_ARG_SPEC = {
    "kubeconfig": {"type": "path"},
    "context": {"type": "str"},
    "request_timeout": {"type": "int", "default": 30},
}

# doc_fragments/evidence.py documents this.
EVIDENCE_ARG_SPEC = {
    "evidence_dir": {"type": "path"},
}

# doc_fragments/journal.py documents these: the modules that keep a cluster's rollout record in
# the run's journal (the action plugin fills in cluster, from inventory_hostname, and the bundle).
JOURNAL_ARG_SPEC = {
    "cluster": {"type": "str"},
    "evidence_dir": {"type": "path"},
}

# doc_fragments/kai_namespaces.py documents these (DOCUMENTATION and RESERVATION).
KAI_NAMESPACE_ARG_SPEC = {
    "kai_namespace": {"type": "str", "default": "kai-scheduler"},
}
RESERVATION_NAMESPACE_ARG_SPEC = {
    "reservation_namespace": {"type": "str", "default": "kai-resource-reservation"},
}

# doc_fragments/report.py documents this: the modules that render a report from templates.
REPORT_ARG_SPEC = {
    "template_dir": {"type": "path"},
}


def merge_specs(*specs):
    """One argument spec out of several; later dicts win."""
    merged = {}
    for spec in specs:
        merged.update(spec)
    return merged
