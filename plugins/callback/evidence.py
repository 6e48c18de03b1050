# Copyright: kaiops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

DOCUMENTATION = r"""
name: evidence
type: notification
short_description: Leave a hashed evidence bundle for every playbook run
version_added: 0.1.0
author:
  - kaiops contributors (@kaiops)
description:
  - Creates one folder per run, C(<root>/<UTC timestamp>-<playbook>-<id>/), never reused, and
    points C(<root>/latest) at it.
  - Writes C(run.json) (who, when, where, versions, inventory sources, extra vars with secrets
    redacted, checksums of the playbook and the collection's files, and at the end per-host
    stats), appends every task result per host to C(tasks.jsonl) as it arrives (each C(until)
    retry, loop items, failures, skips, unreachable hosts, with start and end times), and at the
    end writes C(status) and C(manifest.sha256) over every file, modules' files included.
  - C(status) is V(complete) when the playbook reached its end with its report, whether hosts
    failed or not (C(run.json) C(outcome) says V(succeeded) or V(failed)); V(refused) when the
    request was refused before any cluster was read (its report says C(refused_by=request), as
    kai_request's does and the rollout's when every cluster was refused on its request);
    V(incomplete) when one of the collection's playbooks reached its end without
    its report; and V(interrupted) when the run was stopped (SIGINT/Ctrl-C, SIGTERM, SIGHUP) or
    ended early; the bundle is hashed either way.
  - An evidence root that cannot hold the run's bundle (a file, a folder this user cannot write)
    is registered as the run's context with the reason; the request check of every playbook then
    refuses before any cluster is read, with the fix.
  - Registers the run's folder for every play as it starts (the run's context on the controller,
    C(plugins/plugin_utils/run_context.py)); the collection's action plugins find it from the
    task's play and give it to the modules that write evidence as their C(evidence_dir) option.
    Nothing is exported into the environment.
  - Results of C(no_log) tasks are never written. Everything else written (C(run.json), every
    line of C(tasks.jsonl)) passes through the collection's one redaction policy, the one the
    modules' files pass through (C(plugins/module_utils/bundle/policy.py), the rules of
    C(plugins/module_utils/evidence/redact.py)) - values of keys
    that look secret, secrets in any value (secret-looking flags in args and command, URL
    passwords, bearer tokens, JWTs, PEM blocks, long high-entropy strings), env values with
    secret-looking names, Secret C(data) and C(stringData), the last-applied annotation, and
    the values of ConfigMaps outside GPU sharing. A replaced value reads
    C(<redacted len~N sha256:XXXXXXXX>), its length class and a short hash, so runs compare.
  - A notification callback, not a stdout one, so the screen output (and Molecule's
    idempotence check) is unchanged.
requirements:
  - enable in ansible.cfg with C(callbacks_enabled = kaiops.runbooks.evidence)
options:
  root:
    description:
      - Folder that holds the run folders.
      - A relative path is relative to the folder of the ansible.cfg in use (the project root),
        or to the current directory when there is no ansible.cfg.
    type: str
    default: evidence
    env:
      - name: KAIOPS_EVIDENCE_ROOT
    ini:
      - section: kaiops_evidence
        key: root
  redact_pattern:
    description:
      - Regular expression (Python, searched in each key, flag and env name) of names whose
        values are replaced in C(run.json) and C(tasks.jsonl); names that hold a reference
        (C(secretName), C(token_file), a bare C(key) as in tolerations) are not. The value
        rules apply whatever this says. The modules' files use the default.
    type: str
    default: >-
      (?i)(token|passw(or)?d|passphrase|secret|credential|(^|[_.-])key$|private[_.-]?key|api[_.-]?key|access[_.-]?key|client[_.-]?key|auth(orization)?$|bearer|cookie|certificate[_.-]?authority[_.-]?data|client[_.-]?certificate[_.-]?data)
    env:
      - name: KAIOPS_EVIDENCE_REDACT_PATTERN
    ini:
      - section: kaiops_evidence
        key: redact_pattern
  max_result_bytes:
    description:
      - A task result larger than this (as JSON) is recorded in C(tasks.jsonl) as its size,
        SHA-256, top-level keys and C(msg) only; modules such as kai_snapshot write the full data
        as files.
    type: int
    default: 262144
    env:
      - name: KAIOPS_EVIDENCE_MAX_RESULT_BYTES
    ini:
      - section: kaiops_evidence
        key: max_result_bytes
"""

import atexit
import datetime
import getpass
import hashlib
import json
import os
import platform
import secrets
import signal
import socket
import subprocess
import sys
import threading

from ansible import constants as C
from ansible import context
from ansible.module_utils.common.text.converters import to_text
from ansible.plugins.callback import CallbackBase
from ansible.release import __version__ as ANSIBLE_CORE_VERSION

from ansible_collections.kaiops.runbooks.plugins.module_utils.bundle.policy import (
    KaiRedactionPolicy,
)
from ansible_collections.kaiops.runbooks.plugins.module_utils.evidence.manifest import (
    MANIFEST,
    STATUS_FILE,
    build_manifest,
    sha256_file,
)
from ansible_collections.kaiops.runbooks.plugins.module_utils.evidence.redact import (
    DEFAULT_SECRET_KEY_PATTERN,
)
from ansible_collections.kaiops.runbooks.plugins.module_utils.evidence.writer import (
    FILE_MODE,
    canonical_json,
    finite,
    safe_name,
)
from ansible_collections.kaiops.runbooks.plugins.plugin_utils import run_context

try:
    from importlib import metadata as importlib_metadata
except ImportError:  # pragma: no cover - Python < 3.8
    importlib_metadata = None

SCHEMA = "kaiops.evidence/v1"
# The documented default of redact_pattern; tests keep the two in step.
DEFAULT_PATTERN = DEFAULT_SECRET_KEY_PATTERN
COLLECTION = "kaiops.runbooks"
PACKAGES = (
    "ansible",
    "ansible-core",
    "kubernetes",
    "jmespath",
    "PyYAML",
    "molecule",
    "ansible-lint",
    "urllib3",
)
# Collection content hashed into run.json (relative to the collection root).
CONTENT_DIRS = ("plugins", "roles", "playbooks", "meta")
CONTENT_FILES = ("rollout.yml", "galaxy.yml", "requirements.txt", "ansible.cfg")
SIGNALS = ("SIGINT", "SIGTERM", "SIGHUP")

COLLECTION_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def utcnow():
    return datetime.datetime.now(datetime.timezone.utc)


def iso(moment):
    return moment.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def to_jsonable(value):
    """Native JSON types out of Ansible's tagged/unsafe values."""
    return finite(json.loads(json.dumps(value, default=to_text)))


class Bundle:
    """One run folder; writes are incremental, finalize() runs once."""

    def __init__(self, root, playbook_path, redactor, max_result_bytes, clock=utcnow):
        self._clock = clock
        self._redactor = redactor
        self._max = max_result_bytes
        self._lock = threading.RLock()
        self._fd = None
        self._seq = 0
        self._pid = os.getpid()
        self.finalized = False
        self.started = clock()
        self.root = root
        self.id = secrets.token_hex(4)
        stem = safe_name(os.path.splitext(os.path.basename(playbook_path))[0], "playbook")
        name = "%s-%s-%s" % (self.started.strftime("%Y%m%dT%H%M%SZ"), stem, self.id)
        self.path = os.path.join(root, name)
        os.makedirs(root, exist_ok=True)
        os.makedirs(self.path)  # exist_ok=False: a run folder is never reused
        self.run = {
            "schema": SCHEMA,
            "id": self.id,
            "folder": name,
            "started_at": iso(self.started),
            "status": "running",
        }
        tasks = os.path.join(self.path, "tasks.jsonl")
        self._fd = os.open(tasks, os.O_WRONLY | os.O_CREAT | os.O_APPEND, FILE_MODE)
        os.fchmod(self._fd, FILE_MODE)
        self._write_file(STATUS_FILE, "running\n")
        self._point_latest(name)

    # ---------------------------------------------------------------- files

    def _write_file(self, rel, text):
        target = os.path.join(self.path, rel)
        tmp = "%s.%s.tmp" % (target, os.getpid())
        with open(tmp, "w") as handle:
            os.fchmod(handle.fileno(), FILE_MODE)
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, target)

    def _point_latest(self, name):
        link = os.path.join(self.root, "latest")
        tmp = os.path.join(self.root, ".latest-%s" % self.id)
        try:
            os.symlink(name, tmp)
            os.replace(tmp, link)
        except OSError:
            pass  # a filesystem without symlinks still gets the bundle

    def write_run(self):
        with self._lock:
            self._write_file(
                "run.json", canonical_json(self._redactor.redact(to_jsonable(self.run)))
            )

    def append(self, event):
        """One line of tasks.jsonl, written with a single os.write (never half a line)."""
        with self._lock:
            if self.finalized or self._fd is None:
                return
            self._seq += 1
            event = self._redactor.redact(to_jsonable(dict(event, seq=self._seq)))
            line = json.dumps(event, sort_keys=True) + "\n"
            try:
                os.write(self._fd, line.encode("utf-8"))
            except OSError:
                pass

    def record_result(self, result):
        """Redact, then cap the size of a task result dict."""
        clean = self._redactor.redact(to_jsonable(result))
        text = json.dumps(clean, sort_keys=True)
        if len(text) <= self._max:
            return clean
        return {
            "truncated": True,
            "bytes": len(text),
            "sha256": hashlib.sha256(text.encode("utf-8")).hexdigest(),
            "keys": sorted(clean),
            "msg": clean.get("msg"),
            "changed": clean.get("changed"),
            "failed": clean.get("failed"),
        }

    def finalize(self, status, **fields):
        """Write run.json, status and manifest.sha256 once; later calls do nothing."""
        with self._lock:
            if self.finalized or os.getpid() != self._pid:
                return False
            self.finalized = True
            fd, self._fd = self._fd, None
            if fd is not None:
                try:
                    os.fsync(fd)
                finally:
                    os.close(fd)
            finished = self._clock()
            self.run.update(fields)
            self.run.update(
                {
                    "status": status,
                    "finished_at": iso(finished),
                    "duration_s": round((finished - self.started).total_seconds(), 3),
                    "tasks_recorded": self._seq,
                }
            )
            self.write_run()
            self._write_file(STATUS_FILE, status + "\n")
            self._write_file(MANIFEST, build_manifest(self.path))
            return True


class CallbackModule(CallbackBase):
    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = "notification"
    CALLBACK_NAME = "kaiops.runbooks.evidence"
    CALLBACK_NEEDS_ENABLED = True

    def __init__(self, display=None):
        super(CallbackModule, self).__init__(display=display)
        self._bundle = None
        self._root_problem = None
        self._play = None
        self._starts = {}
        self._previous_handlers = {}

    # ---------------------------------------------------------------- hooks

    def v2_playbook_on_start(self, playbook):
        self._open(playbook)

    def v2_playbook_on_play_start(self, play):
        self._play = play.get_name()
        self._register(play)

    def v2_runner_on_start(self, host, task):
        self._starts[(host.get_name(), task._uuid)] = utcnow()

    def v2_runner_on_ok(self, result):
        self._record("ok", result)

    def v2_runner_on_failed(self, result, ignore_errors=False):
        self._record("failed", result, ignore_errors=ignore_errors)

    def v2_runner_on_skipped(self, result):
        self._record("skipped", result)

    def v2_runner_on_unreachable(self, result):
        self._record("unreachable", result)

    def v2_runner_retry(self, result):
        self._record("retry", result)

    def v2_runner_item_on_ok(self, result):
        self._record("item_ok", result)

    def v2_runner_item_on_failed(self, result):
        self._record("item_failed", result)

    def v2_runner_item_on_skipped(self, result):
        self._record("item_skipped", result)

    def v2_runner_on_async_failed(self, result):
        self._record("async_failed", result)

    def v2_playbook_on_stats(self, stats):
        self._finish(stats)

    # ---------------------------------------------------------------- private

    def _open(self, playbook):
        path = os.path.abspath(playbook._file_name)
        if self._bundle is not None:  # several playbooks on one command line: one bundle
            self._bundle.run["playbooks"].append(_file_entry(path))
            self._bundle.write_run()
            return
        redactor = KaiRedactionPolicy(self.get_option("redact_pattern"))
        root = _resolve_root(self.get_option("root"))
        try:
            self._bundle = Bundle(root, path, redactor, self.get_option("max_result_bytes"))
        except OSError as exc:
            # No bundle, no run: the request check of every playbook refuses before any
            # cluster is read, with the fix (plugins/module_utils/request/rules.py).
            self._root_problem = (root, _root_problem(root, exc))
            self._display.warning("kaiops evidence: %s" % self._root_problem[1])
            return
        self._bundle.run.update(_describe_run(playbook, path, redactor))
        self._bundle.run["evidence"] = {
            "root": root,
            "dir": self._bundle.path,
            "context": "registered per play for the collection's action plugins",
        }
        self._bundle.write_run()
        atexit.register(self._at_exit)
        self._install_signal_handlers()
        self._display.display("kaiops evidence: %s" % self._bundle.path)

    def _register(self, play):
        """The run's context: the collection's action plugins find the bundle from the play."""
        if self._bundle is not None:
            run_context.register(
                getattr(play, "_uuid", None), self._bundle.root, self._bundle.path, self._bundle.id
            )
        elif self._root_problem:
            root, problem = self._root_problem
            run_context.register(getattr(play, "_uuid", None), root, None, None, problem=problem)

    def _record(self, event, result, ignore_errors=False):
        if self._bundle is None:
            return
        task, host = result.task, result.host.get_name()
        data = result.result
        start = self._starts.get((host, task._uuid))
        end = utcnow()
        if task.no_log or data.get("_ansible_no_log"):
            recorded = {"censored": "no_log: true; result not recorded"}
        else:
            recorded = self._bundle.record_result(data)
        self._bundle.append(
            {
                "event": event,
                "host": host,
                "play": self._play,
                "task": task.get_name(),
                "task_uuid": task._uuid,
                "task_path": task.get_path(),
                "action": task.action,
                "role": task._role.get_name() if task._role else None,
                "start": iso(start) if start else None,
                "end": iso(end),
                "duration_s": round((end - start).total_seconds(), 3) if start else None,
                "changed": bool(data.get("changed", False)),
                "failed": event in ("failed", "item_failed", "async_failed"),
                "ignore_errors": bool(ignore_errors),
                "attempt": data.get("attempts"),
                "retries": data.get("retries"),
                "result": recorded,
            }
        )

    def _finish(self, stats):
        if self._bundle is None:
            return
        hosts = sorted(stats.processed.keys())
        summary = {h: stats.summarize(h) for h in hosts}
        failed = sorted(h for h, s in summary.items() if s["failures"] or s["unreachable"])
        status, report = _end_status(self._bundle.path, self._bundle.run.get("playbook"))
        finished = self._bundle.finalize(
            status,
            outcome="failed" if failed else "succeeded",
            hosts_failed=failed,
            stats=summary,
            report=report,
        )
        if finished:
            self._display.display(
                "kaiops evidence: %s (%s, %s)"
                % (self._bundle.path, status, "failed" if failed else "succeeded")
            )

    def _interrupt(self, reason):
        if self._bundle is not None and self._bundle.finalize(
            "interrupted", outcome=None, interrupted_by=reason
        ):
            try:
                self._display.warning(
                    "kaiops evidence: %s (interrupted: %s)" % (self._bundle.path, reason)
                )
            except Exception:  # noqa: BLE001 - the terminal may be gone (SIGHUP)
                pass

    def _at_exit(self):
        self._interrupt("the run ended before the playbook's end")

    def _install_signal_handlers(self):
        for name in SIGNALS:
            signum = getattr(signal, name, None)
            if signum is None:
                continue
            self._previous_handlers[signum] = signal.getsignal(signum)
            signal.signal(signum, self._on_signal)

    def _on_signal(self, signum, frame):
        """Finalize as interrupted (in the controller process only), then chain."""
        if self._bundle is not None and os.getpid() == self._bundle._pid:
            self._interrupt(signal.Signals(signum).name)
        previous = self._previous_handlers.get(signum)
        if callable(previous):
            previous(signum, frame)
        elif previous == signal.SIG_IGN:
            return
        elif signum == signal.SIGINT:
            raise KeyboardInterrupt()
        else:
            signal.signal(signum, signal.SIG_DFL)
            os.kill(os.getpid(), signum)


# -------------------------------------------------------------------- run.json parts


# The report each of the collection's playbooks leaves, by the playbook's name: a run of one that
# ends without it is "incomplete", never "complete"; one whose request was refused before any
# cluster was read (kai_request's report) is "refused".
REPORTS = {
    "rollout": "report.json",
    "rollback": "report.json",
    "reproduce": "report.json",
    "recovery": "recovery.json",
    "gpu_access": "gpu_access.json",
    "inventory": "inventory.json",
    "diagnose": "report.json",
}


def _end_status(bundle, playbook):
    """(status, {file, decision} or None) of a run that reached the playbook's end."""
    stem = os.path.splitext(os.path.basename((playbook or {}).get("path") or ""))[0]
    name = REPORTS.get(stem)
    if name is None:
        return "complete", None
    try:
        with open(os.path.join(bundle, name)) as handle:
            document = json.load(handle)
    except (OSError, ValueError):
        return "incomplete", {"file": name, "decision": None, "missing": True}
    refused = isinstance(document, dict) and document.get("refused_by") == "request"
    decision = document.get("decision") if isinstance(document, dict) else None
    return ("refused" if refused else "complete"), {"file": name, "decision": decision}


def _root_problem(root, exc):
    """Why the evidence store cannot hold a bundle, in words."""
    if os.path.isfile(root):
        return "the evidence root %s is a file, not a folder: no bundle can be written" % root
    return "the evidence root %s cannot hold the run's bundle (%s): no bundle can be written" % (
        root,
        exc.strerror or type(exc).__name__,
    )


def _resolve_root(option):
    root = os.path.expanduser(option or "evidence")
    if not os.path.isabs(root):
        base = os.path.dirname(C.CONFIG_FILE) if C.CONFIG_FILE else os.getcwd()
        root = os.path.join(base, root)
    return os.path.abspath(root)


def _file_entry(path):
    try:
        digest = sha256_file(path)
    except OSError:
        digest = None
    return {"path": path, "sha256": digest}


def _package_versions():
    versions = {}
    for name in PACKAGES:
        try:
            versions[name] = importlib_metadata.version(name) if importlib_metadata else None
        except Exception:  # noqa: BLE001 - PackageNotFoundError and broken metadata alike
            versions[name] = None
    return versions


def _collection_info(root=COLLECTION_ROOT):
    info = {"name": COLLECTION, "path": root, "version": None}
    for meta in ("MANIFEST.json", "galaxy.yml"):
        full = os.path.join(root, meta)
        if not os.path.isfile(full):
            continue
        with open(full) as handle:
            text = handle.read()
        if meta.endswith(".json"):
            info["version"] = json.loads(text).get("collection_info", {}).get("version")
        else:
            for line in text.splitlines():
                if line.startswith("version:"):
                    info["version"] = line.split(":", 1)[1].strip().strip("'\"")
        break
    files = {}
    for top in CONTENT_DIRS:
        for folder, dirs, names in os.walk(os.path.join(root, top)):
            dirs[:] = sorted(d for d in dirs if d != "__pycache__")
            for name in sorted(names):
                if name.endswith((".pyc", ".pyo")):
                    continue
                full = os.path.join(folder, name)
                files[os.path.relpath(full, root)] = sha256_file(full)
    for name in CONTENT_FILES:
        full = os.path.join(root, name)
        if os.path.isfile(full):
            files[name] = sha256_file(full)
    listing = "".join("%s  %s\n" % (files[k], k) for k in sorted(files))
    info["content_sha256"] = hashlib.sha256(listing.encode("utf-8")).hexdigest()
    info["files"] = files
    return info


def _git(root=COLLECTION_ROOT):
    def run(*args):
        return subprocess.run(
            ("git", "-C", root) + args, capture_output=True, text=True, timeout=5, check=True
        ).stdout.strip()

    try:
        return {
            "commit": run("rev-parse", "HEAD"),
            "dirty": bool(run("status", "--porcelain", "--untracked-files=no")),
        }
    except (OSError, subprocess.SubprocessError):
        return None


def _cli():
    args = context.CLIARGS
    return {
        key: to_jsonable(args.get(key))
        for key in (
            "check",
            "diff",
            "limit",
            "tags",
            "skip_tags",
            "forks",
            "verbosity",
            "become",
            "start_at_task",
            "step",
            "subset",
        )
        if key in args
    }


def _extra_vars(playbook, redactor):
    try:
        from ansible.utils.vars import load_extra_vars

        return redactor.redact(to_jsonable(load_extra_vars(playbook._loader)))
    except Exception as exc:  # noqa: BLE001 - evidence must not stop the run
        return {"_unreadable": "extra vars could not be parsed: %s" % type(exc).__name__}


def _inventory_sources():
    sources = context.CLIARGS.get("inventory") or C.DEFAULT_HOST_LIST or []
    if isinstance(sources, str):
        sources = [sources]
    return [
        os.path.abspath(os.path.expanduser(s)) if os.path.exists(os.path.expanduser(s)) else s
        for s in sources
    ]


def _argv(args):
    """sys.argv with extra-vars values left out (they are in extra_vars, redacted)."""
    out, hide = [], False
    for arg in args:
        if hide:
            out.append("<see extra_vars>")
            hide = False
        elif arg in ("-e", "--extra-vars"):
            out.append(arg)
            hide = True
        elif arg.startswith(("--extra-vars=", "-e")) and arg not in ("-e",):
            out.append(arg.split("=", 1)[0] if arg.startswith("--") else "-e<see extra_vars>")
        else:
            out.append(arg)
    return out


def _describe_run(playbook, path, redactor):
    try:
        user = getpass.getuser()
    except Exception:  # noqa: BLE001 - no passwd entry in some containers
        user = None
    return {
        "user": {
            "name": user,
            "uid": os.getuid() if hasattr(os, "getuid") else None,
            "sudo_user": os.environ.get("SUDO_USER"),
        },
        "controller": {
            "hostname": socket.gethostname(),
            "fqdn": socket.getfqdn(),
            "platform": platform.platform(),
        },
        "cwd": os.getcwd(),
        "argv": _argv(sys.argv),
        "cli": _cli(),
        "check_mode": bool(context.CLIARGS.get("check")),
        "ansible_config": C.CONFIG_FILE,
        "playbook": _file_entry(path),
        "playbooks": [_file_entry(path)],
        "versions": {
            "python": sys.version.split()[0],
            "python_executable": sys.executable,
            "ansible_core": ANSIBLE_CORE_VERSION,
            "packages": _package_versions(),
        },
        "collection": _collection_info(),
        "git": _git(),
        "inventory": {"sources": _inventory_sources()},
        "extra_vars": _extra_vars(playbook, redactor),
    }
