# Copyright: kaiops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The report of a refused request: what each cluster's request got wrong and how to fix it.
Pure: ``build`` judges nothing (``rules.check`` did), ``render_markdown`` only renders.

A playbook that refuses its request before any cluster is read leaves its own report
(``<report>.json`` and ``.md``: ``rules.PLAYBOOKS``) with ``decision: refused`` and each item's
field, message and fix, so a refused run is never a run without a report.
"""

from ansible_collections.kaiops.runbooks.plugins.module_utils.render import markdown

SCHEMA = "kaiops.request/v1"


def build(playbook, refusals, generated_at, run=None):
    """The report document: ``refusals`` is cluster -> [problem {field, message, fix}]."""
    clusters = {
        str(name): {"decision": "refused", "items": list(items or [])}
        for name, items in sorted((refusals or {}).items(), key=lambda kv: str(kv[0]))
    }
    return {
        "schema": SCHEMA,
        "kind": playbook,
        "decision": "refused",
        "refused_by": "request",
        "generated_at": generated_at,
        "run": run or {},
        "clusters": clusters,
        "reasons": sorted({i["message"] for c in clusters.values() for i in c["items"]}),
    }


def render_markdown(document, template_dir=None):
    """``document`` rendered with ``templates/reports/request.md.j2``."""
    return markdown.render("request.md.j2", document, template_dir)
