"""module_utils/render/junit.py: the one JUnit writer every report uses."""

import xml.etree.ElementTree as ET

from ansible_collections.kaiops.runbooks.plugins.module_utils.render import junit


def test_junit_counts_come_from_the_cases():
    suites = [
        {
            "name": "s1",
            "cases": [
                {"classname": "c", "name": "ok", "time": 1.5},
                {"classname": "c", "name": "bad", "failure": {"message": "m<", "text": "t&"}},
                {"classname": "c", "name": "later", "skipped": "not run: x"},
            ],
        },
        {"name": "s2", "cases": [{"classname": "d", "name": "e", "error": {"message": "boom"}}]},
    ]
    root = ET.fromstring(junit.render("kaiops x", suites))
    assert root.get("name") == "kaiops x"
    assert [root.get(k) for k in ("tests", "failures", "errors", "skipped")] == ["4", "1", "1", "1"]
    s1 = root.find("testsuite[@name='s1']")
    assert [s1.get(k) for k in ("tests", "failures", "errors", "skipped")] == ["3", "1", "0", "1"]
    bad = s1.find("testcase[@name='bad']/failure")
    assert bad.get("message") == "m<" and bad.text == "t&" and bad.get("type") == "failure"
    assert s1.find("testcase[@name='ok']").get("time") == "1.500"
    assert s1.find("testcase[@name='later']/skipped").get("message") == "not run: x"
    assert root.find("testsuite[@name='s2']/testcase/error").get("message") == "boom"


def test_junit_with_no_suites_is_a_valid_empty_document():
    root = ET.fromstring(junit.render("empty", []))
    assert root.get("tests") == "0" and list(root) == []
