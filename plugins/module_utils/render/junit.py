# Copyright: kaiops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The one JUnit XML writer of the collection's reports.

A report turns its judgement into suites of cases (data); this writes them. The counts
(``tests``, ``failures``, ``errors``, ``skipped``) are computed here from the cases, so a
report cannot print a total that disagrees with its own cases.

A suite is ``{"name", "cases": [case]}``; a case is ``{"classname", "name"}`` with optional
``time`` (seconds), and at most one of ``failure`` or ``error`` (``{"message", "type", "text"}``)
or ``skipped`` (its message).
"""

from xml.sax.saxutils import escape, quoteattr

OUTCOMES = ("failure", "error")


def _case(case):
    attrs = "classname=%s name=%s" % (quoteattr(case["classname"]), quoteattr(case["name"]))
    if case.get("time") is not None:
        attrs += ' time="%.3f"' % case["time"]
    body = ""
    for outcome in OUTCOMES:
        detail = case.get(outcome)
        if detail:
            body = "<%s message=%s type=%s>%s</%s>" % (
                outcome,
                quoteattr(detail.get("message") or outcome),
                quoteattr(detail.get("type") or outcome),
                escape(detail.get("text") or ""),
                outcome,
            )
    if case.get("skipped") is not None:
        body = "<skipped message=%s/>" % quoteattr(case["skipped"] or "not run")
    return "    <testcase %s>%s</testcase>" % (attrs, body)


def counts(cases):
    return {
        "tests": len(cases),
        "failures": sum(1 for c in cases if c.get("failure")),
        "errors": sum(1 for c in cases if c.get("error")),
        "skipped": sum(1 for c in cases if c.get("skipped") is not None),
    }


def _attrs(n):
    return 'tests="%(tests)d" failures="%(failures)d" errors="%(errors)d" skipped="%(skipped)d"' % n


def render(name, suites):
    """The document: ``<testsuites name=name>`` holding each suite (a list of dicts, above)."""
    parts = []
    total = counts([])
    for suite in suites:
        n = counts(suite["cases"])
        for key in total:
            total[key] += n[key]
        parts.append(
            "  <testsuite name=%s %s>\n%s\n  </testsuite>"
            % (quoteattr(suite["name"]), _attrs(n), "\n".join(_case(c) for c in suite["cases"]))
        )
    return (
        '<?xml version="1.0" encoding="UTF-8"?>\n<testsuites name=%s %s>\n%s\n</testsuites>\n'
        % (
            quoteattr(name),
            _attrs(total),
            "\n".join(parts),
        )
    )
