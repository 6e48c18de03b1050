# Copyright: kaiops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Runner layer of kai_request: params in, the result out; the only layer that exits.

- ``check`` (per cluster host): the request judged by ``rules.check``; never fails the task
  (the role decides: ``roles/kai_request``).
- ``refusals`` (once for the play): the refusal report of the clusters whose request was
  refused, written into the run's bundle (``report.py``).
"""

from ansible_collections.kaiops.runbooks.plugins.module_utils.bundle import report as B
from ansible_collections.kaiops.runbooks.plugins.module_utils.evidence.report import run_facts
from ansible_collections.kaiops.runbooks.plugins.module_utils.request import report, rules


def run_request(module, now=None):
    params = module.params
    playbook = params["playbook"]
    if params.get("refusals") is not None and not params.get("evidence_dir"):
        # No bundle (the evidence store could not hold one): the refusal says so itself.
        module.exit_json(changed=False, evidence_dir=None, files=[], decision="refused")
    if params.get("refusals") is not None:
        document = report.build(
            playbook,
            {
                host: rules.as_problems(
                    (found.get("problems") if isinstance(found, dict) else found) or [], playbook
                )
                for host, found in params["refusals"].items()
            },
            B.stamp(now),
            run_facts(params.get("evidence_dir")),
        )
        # Every cluster refused: the run's report is this one. Otherwise the playbook writes its
        # own for the others, and the refusals are request.json/.md next to it.
        name = (
            rules.PLAYBOOKS.get(playbook, {}).get("report") or "report"
            if params.get("all_refused")
            else "request"
        )
        files = B.report_files(name, document, params.get("template_dir"), report.render_markdown)
        root, files = B.write_report(module, files)
        module.exit_json(changed=False, evidence_dir=root, files=files, decision="refused")
    for text, version in rules.deprecations(params.get("given")):
        module.deprecate(text, version=version, collection_name="kaiops.runbooks")
    result = rules.check(
        playbook,
        params.get("given") or {},
        raw=params.get("raw") or {},
        names=params.get("names") or [],
        paths=params.get("paths") or {},
        evidence={"problem": params.get("evidence_problem")},
        errors=params.get("errors") or {},
        role_options=params.get("role_options"),
    )
    module.exit_json(
        changed=False,
        passed=result["passed"],
        problems=result["problems"],
        request=result["request"],
        message=rules.message(params.get("cluster") or "the cluster", result["problems"])
        if result["problems"]
        else "",
    )
