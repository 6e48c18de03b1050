# Copyright: kaiops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Release versions and version ranges: pure functions, no I/O.

A range is a comma-separated list of clauses, each an operator and a version:
``>=1.4.0,<1.4.3``. A version is ``[v]MAJOR.MINOR[.PATCH][-PRERELEASE]``; image tags
with a build suffix such as ``-fips`` are read as the release they carry.
"""

import operator
import re

from ansible_collections.kaiops.runbooks.plugins.module_utils.errors import (
    STATUS_INVALID,
    KaiopsError,
)

# The shape of a range, for messages. KAI's affected range is a release fact: it lives in the
# collection's meta/kai_releases.yml and reaches the modules as an option (plugin_utils/action.py).
RANGE_EXAMPLE = ">=1.4.0,<1.4.3"

_VERSION = re.compile(r"^v?(\d+)\.(\d+)(?:\.(\d+))?(?:-([0-9A-Za-z.-]+))?$")
_CLAUSE = re.compile(r"^(>=|<=|==|!=|>|<)\s*(\S+)$")
# Suffixes that name a build of a release rather than a pre-release of it.
_BUILD_SUFFIXES = ("fips",)

_OPERATORS = {
    ">=": operator.ge,
    "<=": operator.le,
    "==": operator.eq,
    "!=": operator.ne,
    ">": operator.gt,
    "<": operator.lt,
}


def parse_version(text):
    """'v1.4.2' -> sortable key; None when the text is not a release version (digest, latest)."""
    match = _VERSION.match((text or "").strip())
    if not match:
        return None
    major, minor, patch, pre = match.groups()
    if pre and pre.lower() in _BUILD_SUFFIXES:
        pre = None
    # A pre-release sorts before its release: (0, 16, 14, 0, 'rc.1') < (0, 16, 14, 1, '').
    return (int(major), int(minor), int(patch or 0), 0 if pre else 1, pre or "")


def parse_range(text):
    """'>=1.4.0,<1.4.3' -> [(op, key, clause)]; raises KaiopsError naming the bad clause."""
    if not isinstance(text, str) or not text.strip():
        raise KaiopsError(
            "Failed to parse version range %r: it is empty; give clauses like %r"
            % (text, RANGE_EXAMPLE),
            status=STATUS_INVALID,
        )
    clauses = []
    for raw in text.split(","):
        clause = raw.strip()
        match = _CLAUSE.match(clause)
        key = parse_version(match.group(2)) if match else None
        if not match or key is None:
            raise KaiopsError(
                "Failed to parse version range %r: clause %r is not <op><version> with op one of "
                ">=, >, <=, <, ==, != (example: %r)" % (text, clause, RANGE_EXAMPLE),
                status=STATUS_INVALID,
            )
        clauses.append((match.group(1), key, clause))
    return clauses


def in_range(version_text, range_text):
    """True/False when the version is/is not in the range; None when the version is unreadable."""
    clauses = parse_range(range_text)
    key = parse_version(version_text)
    if key is None:
        return None
    return all(_OPERATORS[op](key, bound) for op, bound, _clause in clauses)
