# Copyright: kaiops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The one report writer: every module that leaves files in the run's bundle goes through it.

``write_report(module, files, folder=None)`` resolves the run's folder from the module's
``evidence_dir`` option, writes each ``(relative name, content)`` (text, or data written as
canonical JSON) with :class:`EvidenceWriter` (atomic, never replacing a file, everything through
the collection's redaction policy, ``bundle/policy.py``) and returns
``(evidence_dir, written)``. Without a folder it writes nothing and warns once, naming what
was not written. ``folder`` puts the files in a new folder of that name (``-2``, ``-3``... when
taken); the relative names then start with it.
"""

import datetime
import os

from ansible_collections.kaiops.runbooks.plugins.module_utils.bundle.policy import policy_for
from ansible_collections.kaiops.runbooks.plugins.module_utils.evidence.writer import (
    EvidenceWriter,
    resolve_evidence_dir,
)

NO_EVIDENCE_WARNING = (
    "No evidence folder: enable the kaiops.runbooks.evidence callback (ansible.cfg) or set "
    "evidence_dir; not written: %s"
)


def stamp(now=None):
    """A report's time as every report prints it: UTC to the second; now when not given."""
    return (now or datetime.datetime.now(datetime.timezone.utc)).strftime("%Y-%m-%dT%H:%M:%SZ")


def run_id(evidence_dir):
    """The run's id: the name of its evidence folder; None without one."""
    return os.path.basename(os.path.abspath(evidence_dir)) if evidence_dir else None


def report_files(stem, document, template_dir, markdown, junit=None):
    """A report's files for write_report: <stem>.json, <stem>.md and, given junit, junit.xml."""
    files = [(stem + ".json", document), (stem + ".md", markdown(document, template_dir))]
    return files + [("junit.xml", junit(document))] if junit else files


def no_evidence_warning(what):
    return NO_EVIDENCE_WARNING % what


def evidence_writer(module):
    """(EvidenceWriter, folder) for the module's evidence_dir, or (None, None) when none is set.

    A bad ``evidence_dir`` raises KaiopsError: callers resolve it before any cluster call. The
    writer applies the redaction policy for the module's params (``policy_for``).
    """
    root = resolve_evidence_dir(module.params.get("evidence_dir"))
    return (EvidenceWriter(root, policy_for(module.params)), root) if root else (None, None)


def write_report(module, files, folder=None, what=None, writer=None):
    """Write ``files`` ([(relative name, text or JSON data)]); returns (evidence_dir, written).

    With ``folder``, ``files`` may be a function of the folder actually created (its name can
    end in -2, -3...), for files that refer to it. ``what`` names the files in the warning.
    """
    if writer is None:
        writer, _root = evidence_writer(module)
    if writer is None:
        names = what or ", ".join(name for name, _content in files) or "nothing"
        module.warn(no_evidence_warning(names))
        return None, []
    written = []
    prefix = ""
    if folder:
        created = writer.unique_dir(folder)
        prefix = created + "/"
        if callable(files):
            files = files(created)
    for name, content in files:
        if isinstance(content, str):
            written.append(writer.write_text(prefix + name, content))
        else:
            written.append(writer.write_json(prefix + name, content))
    return writer.root, written
