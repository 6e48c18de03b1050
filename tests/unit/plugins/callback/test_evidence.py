"""plugins/callback/evidence.py: the bundle, the hooks, and interruption (real ansible-playbook)."""

import json
import os
import signal
import subprocess
import sys
import time
from types import SimpleNamespace

import pytest
from conftest import REPO

from ansible_collections.kaiops.runbooks.plugins.callback import evidence
from ansible_collections.kaiops.runbooks.plugins.module_utils.bundle.policy import (
    DEFAULT_POLICY,
    Redactor,
)
from ansible_collections.kaiops.runbooks.plugins.module_utils.evidence.manifest import (
    verify_manifest,
)
from ansible_collections.kaiops.runbooks.plugins.module_utils.evidence.redact import marker
from ansible_collections.kaiops.runbooks.plugins.plugin_utils import run_context

ENV_EVIDENCE_DIR = "KAIOPS_EVIDENCE_DIR"  # the variable of old: never set any more

BIN = os.path.dirname(sys.executable)


def make_bundle(tmp_path, max_bytes=10_000):
    return evidence.Bundle(
        str(tmp_path / "evidence"), "/x/playbooks/inventory.yml", Redactor(), max_bytes
    )


def read_events(bundle):
    with open(os.path.join(bundle.path, "tasks.jsonl")) as handle:
        return [json.loads(line) for line in handle]


def test_bundle_folder_name_latest_link_and_running_status(tmp_path):
    bundle = make_bundle(tmp_path)
    name = os.path.basename(bundle.path)
    assert name.endswith("-inventory-" + bundle.id) and name[8] == "T" and name[15] == "Z"
    assert os.readlink(tmp_path / "evidence" / "latest") == name
    assert (tmp_path / "evidence" / name / "status").read_text() == "running\n"
    second = make_bundle(tmp_path)
    assert second.path != bundle.path
    assert os.readlink(tmp_path / "evidence" / "latest") == os.path.basename(second.path)


def test_bundle_appends_then_finalizes_once_with_a_valid_manifest(tmp_path):
    bundle = make_bundle(tmp_path)
    bundle.append({"event": "ok", "host": "h"})
    bundle.append({"event": "failed", "host": "h"})
    assert [e["seq"] for e in read_events(bundle)] == [1, 2]  # written as they arrive
    os.makedirs(os.path.join(bundle.path, "snapshots", "s"))
    with open(os.path.join(bundle.path, "snapshots", "s", "a.json"), "w") as handle:
        handle.write("{}")
    assert bundle.finalize("complete", outcome="succeeded") is True
    assert bundle.finalize("interrupted") is False
    bundle.append({"event": "late"})
    assert len(read_events(bundle)) == 2
    assert open(os.path.join(bundle.path, "status")).read() == "complete\n"
    run = json.load(open(os.path.join(bundle.path, "run.json")))
    assert (run["status"], run["outcome"], run["tasks_recorded"]) == ("complete", "succeeded", 2)
    assert verify_manifest(bundle.path) == []
    manifest = open(os.path.join(bundle.path, "manifest.sha256")).read()
    assert "snapshots/s/a.json" in manifest and "status" in manifest


def test_every_file_of_a_bundle_has_one_mode_whatever_the_umask(tmp_path):
    from ansible_collections.kaiops.runbooks.plugins.module_utils.evidence.writer import (
        FILE_MODE,
        EvidenceWriter,
    )
    from ansible_collections.kaiops.runbooks.plugins.module_utils.recovery.apply import (
        InterventionJournal,
    )

    old = os.umask(0o077)
    try:
        bundle = make_bundle(tmp_path)
        bundle.append({"event": "ok", "host": "h"})
        writer = EvidenceWriter(bundle.path, DEFAULT_POLICY)
        writer.write_json("verify/lab/figures.json", {"p50": 1})
        writer.write_text("report.md", "# report\n")
        InterventionJournal(writer).append({"event": "recorded", "id": "a:b"})
        bundle.finalize("complete", outcome="succeeded")
    finally:
        os.umask(old)
    modes = {}
    for folder, _dirs, files in os.walk(bundle.path):
        for name in files:
            rel = os.path.relpath(os.path.join(folder, name), bundle.path)
            modes[rel] = os.stat(os.path.join(folder, name)).st_mode & 0o777
    assert len(modes) == 7, modes
    assert set(modes.values()) == {FILE_MODE}, modes


def test_bundle_record_result_redacts_and_caps(tmp_path):
    bundle = make_bundle(tmp_path, max_bytes=200)
    assert bundle.record_result({"password": "x", "msg": "ok"}) == {
        "password": marker("x"),
        "msg": "ok",
    }
    big = bundle.record_result({"msg": "big", "objects": ["x" * 50] * 10, "changed": False})
    assert big["truncated"] is True and big["keys"] == ["changed", "msg", "objects"]
    assert big["msg"] == "big" and len(big["sha256"]) == 64


class Task:
    def __init__(self, name, no_log=False):
        self._uuid = "uuid-" + name
        self.name = name
        self.no_log = no_log
        self.action = "kaiops.runbooks.kai_snapshot"
        self._role = None

    def get_name(self):
        return self.name

    def get_path(self):
        return "/x/tasks.yml:1"


class Host:
    def __init__(self, name):
        self.name = name

    def get_name(self):
        return self.name


@pytest.fixture
def callback(tmp_path, monkeypatch):
    monkeypatch.delenv(ENV_EVIDENCE_DIR, raising=False)
    cb = evidence.CallbackModule()
    options = {
        "root": str(tmp_path / "evidence"),
        "redact_pattern": evidence.DEFAULT_PATTERN,
        "max_result_bytes": 100_000,
    }
    monkeypatch.setattr(cb, "get_option", options.__getitem__)
    monkeypatch.setattr(cb, "_install_signal_handlers", lambda: None)
    monkeypatch.setattr(evidence.atexit, "register", lambda fn: None)
    playbook = tmp_path / "site.yml"
    playbook.write_text("- hosts: all\n")
    cb.v2_playbook_on_start(SimpleNamespace(_file_name=str(playbook), _loader=None))
    yield cb
    run_context.forget_all()


def result(task, host="lab", **data):
    return SimpleNamespace(task=task, host=Host(host), result=data)


def test_callback_registers_the_run_per_play_and_records_every_event(callback):
    bundle = callback._bundle
    assert ENV_EVIDENCE_DIR not in os.environ
    task = Task("wait")
    assert run_context.for_play("play-uuid") is None
    callback.v2_playbook_on_play_start(SimpleNamespace(get_name=lambda: "play", _uuid="play-uuid"))
    assert run_context.for_play("play-uuid") == {
        "root": bundle.root,
        "dir": bundle.path,
        "id": bundle.id,
    }
    assert ENV_EVIDENCE_DIR not in os.environ
    callback.v2_runner_on_start(Host("lab"), task)
    callback.v2_runner_retry(result(task, attempts=1, retries=3, msg="not yet"))
    callback.v2_runner_retry(result(task, attempts=2, retries=3, msg="not yet"))
    callback.v2_runner_on_failed(result(task, msg="gave up", api_key="k"), ignore_errors=True)
    callback.v2_runner_on_skipped(result(Task("skip")))
    callback.v2_runner_on_unreachable(result(Task("x"), host="dead", msg="unreachable"))
    callback.v2_runner_on_ok(result(Task("secret", no_log=True), password="p", changed=True))
    callback.v2_runner_item_on_ok(result(task, item="a", changed=False))
    events = read_events(bundle)
    assert [e["event"] for e in events] == [
        "retry",
        "retry",
        "failed",
        "skipped",
        "unreachable",
        "ok",
        "item_ok",
    ]
    assert [e["attempt"] for e in events[:2]] == [1, 2]
    assert events[0]["play"] == "play" and events[0]["start"] and events[0]["end"]
    assert events[2]["ignore_errors"] is True and events[2]["result"]["api_key"] == marker("k")
    assert events[5]["result"] == {"censored": "no_log: true; result not recorded"}
    assert events[5]["changed"] is True
    assert "extra_vars" in json.load(open(os.path.join(bundle.path, "run.json")))


def test_callback_stats_finalize_complete_with_outcome(callback):
    stats = SimpleNamespace(
        processed={"a": 1, "b": 1},
        summarize=lambda h: {
            "ok": 1,
            "changed": 0,
            "failures": int(h == "b"),
            "unreachable": 0,
            "skipped": 0,
            "rescued": 0,
            "ignored": 0,
        },
    )
    callback.v2_playbook_on_stats(stats)
    run = json.load(open(os.path.join(callback._bundle.path, "run.json")))
    assert (run["status"], run["outcome"], run["hosts_failed"]) == ("complete", "failed", ["b"])
    assert run["stats"]["b"]["failures"] == 1
    assert verify_manifest(callback._bundle.path) == []


def test_callback_signal_finalizes_interrupted_then_chains(callback):
    seen = []
    callback._previous_handlers[signal.SIGTERM] = lambda signum, frame: seen.append(signum)
    callback._on_signal(signal.SIGTERM, None)
    assert seen == [signal.SIGTERM]
    run = json.load(open(os.path.join(callback._bundle.path, "run.json")))
    assert (run["status"], run["interrupted_by"]) == ("interrupted", "SIGTERM")
    assert verify_manifest(callback._bundle.path) == []


def test_documented_options_match_code_defaults():
    import yaml

    options = yaml.safe_load(evidence.DOCUMENTATION)["options"]
    assert options["redact_pattern"]["default"] == evidence.DEFAULT_PATTERN
    assert options["root"]["default"] == "evidence"
    assert yaml.safe_load(evidence.DOCUMENTATION)["type"] == evidence.CallbackModule.CALLBACK_TYPE


def test_argv_hides_extra_vars_values():
    assert evidence._argv(
        ["ansible-playbook", "-e", "password=x", "--extra-vars=a=b", "-ek=v", "site.yml"]
    ) == [
        "ansible-playbook",
        "-e",
        "<see extra_vars>",
        "--extra-vars",
        "-e<see extra_vars>",
        "site.yml",
    ]


# ------------------------------------------------------------------ real runs


SLOW_PLAYBOOK = """
- name: Slow
  hosts: localhost
  gather_facts: false
  tasks:
    - name: Quick
      ansible.builtin.debug:
        msg: hello
    - name: Sleep
      ansible.builtin.command: sleep 30
      changed_when: false
"""


def run_env(tmp_path):
    env = dict(os.environ)
    env.pop(ENV_EVIDENCE_DIR, None)
    env.update(
        {
            "ANSIBLE_CONFIG": os.path.join(REPO, "ansible.cfg"),
            "KAIOPS_EVIDENCE_ROOT": str(tmp_path / "evidence"),
            "PATH": BIN + os.pathsep + env.get("PATH", ""),
            "ANSIBLE_PYTHON_INTERPRETER": sys.executable,
            "ANSIBLE_LOCALHOST_WARNING": "false",
            "ANSIBLE_INVENTORY_UNPARSED_WARNING": "false",
        }
    )
    return env


def _command_running(cmdline: bytes) -> bool:
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/cmdline", "rb") as handle:
                    if handle.read() == cmdline:
                        return True
            except OSError:
                continue
    return False


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_interrupted_run_leaves_a_hashed_bundle(tmp_path, signum):
    playbook = tmp_path / "slow.yml"
    playbook.write_text(SLOW_PLAYBOOK)
    proc = subprocess.Popen(
        [
            os.path.join(BIN, "ansible-playbook"),
            "-i",
            "localhost,",
            "-c",
            "local",
            "-e",
            "db_password=hunter2",
            str(playbook),
        ],
        env=run_env(tmp_path),
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    latest = tmp_path / "evidence" / "latest"
    deadline = time.time() + 60
    # the condition: "Quick" is recorded and the Sleep task's command is running
    while time.time() < deadline:
        if (
            latest.exists()
            and b'"Quick"' in (latest / "tasks.jsonl").read_bytes()
            and _command_running(b"sleep\x0030\x00")
        ):
            break
        time.sleep(0.1)
    else:
        proc.kill()
        raise AssertionError("the Sleep task never started")
    proc.send_signal(signum)
    out, _unused = proc.communicate(timeout=60)
    # ansible-playbook exits 99 after Ctrl-C; SIGTERM ends it by the signal itself.
    assert proc.returncode == (99 if signum == signal.SIGINT else -signal.SIGTERM), out
    bundle = os.path.realpath(latest)
    assert open(os.path.join(bundle, "status")).read() == "interrupted\n", out
    run = json.load(open(os.path.join(bundle, "run.json")))
    assert run["interrupted_by"] == signal.Signals(signum).name
    assert run["extra_vars"] == {"db_password": marker("hunter2")}
    assert "hunter2" not in open(os.path.join(bundle, "run.json")).read()
    done = subprocess.run(
        ["sha256sum", "-c", "manifest.sha256"],
        cwd=bundle,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
