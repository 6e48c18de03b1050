# Copyright: kaiops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The change request as the rollout reads it, before any gate judges it. Pure.

``normalize_request`` strips text, reads numbers from numeric text (``" 300 "`` is 300, as ``-e``
gives it), a Helm revision given as text as a number, and each waiver (regression, rehearsal) as a
mapping ``{reason, approved_by}``; what it cannot read it keeps as given, for the gate to say why
(``rollout/gates.py``). ``read_threshold`` and ``read_waiver`` are the rules the gates use.
``option_path`` reads a module's evidence folder option the same way for both runners
(``rollout/runner.py``, ``rollout/change_runner.py``), which never import each other.
"""

import os

from ansible_collections.kaiops.runbooks.plugins.module_utils.vocabulary import (
    KIND_BOUNDS,
    KIND_TEXT,
    THRESHOLDS,
    WAIVER_FIELDS,
    as_number,
    type_name,
)

NOT_FINITE = ("nan", "inf", "infinity")


def option_path(option):
    """An evidence folder option as an absolute path, or None when not given."""
    return os.path.abspath(os.path.expanduser(option)) if option else None


def read_threshold(name, value):
    """(number or the value as given, problem or None) for one threshold value."""
    kind = THRESHOLDS[name]["kind"]
    if value is None or value == "":
        return value, "missing"
    number, ok = as_number(value)
    if isinstance(value, float) and not ok:  # NaN, infinity: kept as text (a report is JSON)
        value = repr(value)
    if isinstance(value, str) and value.strip().lower().lstrip("+-") in NOT_FINITE:
        return value, "must be %s, got %s (not a finite number)" % (KIND_TEXT[kind], value)
    if not ok:
        return value, "must be %s, got %s" % (KIND_TEXT[kind], type_name(value))
    bounds = KIND_BOUNDS[kind]
    if bounds.get("whole") and number != int(number):
        return number, "%s must be a whole number" % number
    if not bounds["min"] <= number <= bounds["max"]:
        text = KIND_TEXT[kind]  # the bounds, when the kind's text does not already say them
        if not all(str(bounds[end]) in text for end in ("min", "max")):
            text += ", from %s to %s" % (bounds["min"], bounds["max"])
        return number, "%s must be %s" % (number, text)
    return number, None


def read_waiver(waiver, what="regression waiver"):
    """(waiver {reason, approved_by} or None, problem or None); ``what`` names it in a problem
    (the regression waiver, the rehearsal waiver)."""
    if waiver in (None, "", {}):
        return None, None
    if not isinstance(waiver, dict):
        return None, "%s must be a mapping {reason, approved_by}, got %s" % (
            what,
            type_name(waiver),
        )
    out, missing = {}, []
    for field in WAIVER_FIELDS:
        value = waiver.get(field)
        if not isinstance(value, str) or not value.strip():
            missing.append(field)
        else:
            out[field] = value.strip()
    unknown = sorted(set(waiver) - set(WAIVER_FIELDS))
    if missing:
        return None, "%s has no %s (both reason and approved_by are needed)" % (
            what,
            " and no ".join(missing),
        )
    if unknown:
        return None, "%s has unknown keys %s (only reason and approved_by)" % (
            what,
            ", ".join(unknown),
        )
    return out, None


def read_rollback(rollback):
    """A Helm revision (a number, numeric text read as one) or the text as given."""
    if isinstance(rollback, str) and rollback.strip().isdigit():
        return int(rollback.strip())
    return rollback


def normalize_request(raw):
    """The change request as the report records it: text stripped, numbers as numbers.

    ``raw``: change_owner, kai_version, thresholds, rollback_target, regression_waiver,
    rehearsal_waiver (approves without a rollback rehearsal on record), variables (the kaiops_*
    names set for the host), stray_extra_vars. Values that cannot be read are kept as given;
    their gates say why.
    """
    owner = raw.get("change_owner")
    thresholds = raw.get("thresholds")
    if isinstance(thresholds, dict):
        thresholds = {
            name: read_threshold(name, value)[0] if name in THRESHOLDS else value
            for name, value in thresholds.items()
        }
    waiver, _problem = read_waiver(raw.get("regression_waiver"))
    rehearsal_waiver, _problem = read_waiver(raw.get("rehearsal_waiver"), "rehearsal waiver")
    return {
        "change_owner": owner.strip() if isinstance(owner, str) else owner,
        "kai_version": raw.get("kai_version"),
        "thresholds": thresholds,
        "rollback_target": read_rollback(raw.get("rollback_target")),
        "regression_waiver": waiver if waiver else raw.get("regression_waiver") or None,
        "rehearsal_waiver": rehearsal_waiver
        if rehearsal_waiver
        else raw.get("rehearsal_waiver") or None,
        "variables": sorted(raw.get("variables") or []),
        "stray_extra_vars": list(raw.get("stray_extra_vars") or []),
    }
