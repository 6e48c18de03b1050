# Copyright: kaiops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Who ran what, for every report: the run's facts from its ``run.json`` and their one line.

The report writer every module writes its files with is ``bundle/report.py``: it needs the
collection's redaction policy, which this layer does not know.
"""

import json
import os


def run_facts(evidence_dir):
    """Who ran what, from the run.json the evidence callback writes when a run begins: the
    run's folder, operator, the collection's git commit, the inventory and the playbook. None
    for a field the record lacks (no callback, no git checkout): a report says "unknown" then,
    it never guesses."""
    facts = {"run": None, "operator": None, "commit": None, "dirty": None, "inventory": []}
    if not evidence_dir:
        return facts
    try:
        with open(os.path.join(evidence_dir, "run.json")) as handle:
            run = json.load(handle)
    except (OSError, ValueError):
        return facts
    user = run.get("user") or {}
    git = run.get("git") or {}
    operator = user.get("name")
    if operator and user.get("sudo_user"):
        operator = "%s (sudo from %s)" % (operator, user["sudo_user"])
    facts.update(
        run=run.get("folder"),
        operator=operator,
        commit=git.get("commit"),
        dirty=git.get("dirty"),
        inventory=list((run.get("inventory") or {}).get("sources") or []),
        playbook=(run.get("playbook") or {}).get("path"),
        started_at=run.get("started_at"),
    )
    return facts


def run_line(facts):
    """One line of Markdown naming the run, its operator, commit and inventory."""
    commit = facts.get("commit")
    if commit:
        commit = "`%s`%s" % (commit[:12], " (uncommitted changes)" if facts.get("dirty") else "")
    return "Run: %s · operator: %s · collection commit: %s · inventory: %s" % (
        facts.get("run") or "unknown",
        facts.get("operator") or "unknown",
        commit or "unknown",
        ", ".join(facts.get("inventory") or []) or "unknown",
    )
