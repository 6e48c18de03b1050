# Copyright: (c) 2026, kaiops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""GPU utilisation and cost for a time window, from recorded workload lifetimes.

Pure functions over plain data; nothing happens at import. All arithmetic is Decimal so
that the release article's worked example comes out exactly (32, 19.2, 14.4, 45 %, 96,
5.00, 6.67).

Definitions (the report section repeats them):

- *available GPU-hours*: number of GPUs in the pool x window length.
- *busy GPU-hours*: for each GPU, the integral over the window of the sum of the GPU
  portions of the workloads running on it. Workloads that share a GPU add up. The sum is
  **capped at 1.0 per GPU**: a GPU cannot be more than fully busy, so oversubscription
  (portions adding up to more than one, which time-slicing permits) is not counted as
  extra busy time; it is reported separately as ``oversubscribed_gpu_hours`` so it is
  not hidden either.
- *utilisation*: busy / available. A window of zero or negative length is an error
  (``CostError``), not a zero: there is no capacity to divide by. A pool of zero GPUs
  gives ``None``.
- *window cost*: available GPU-hours x rate (the rate is per *available* GPU-hour:
  idle GPUs cost the same).
- *cost per busy GPU-hour*: window cost / busy GPU-hours; ``None`` when nothing was
  busy (undefined, not a division error).
- *failure loss*: busy GPU-hours lost because submitted work could not start. Each
  workload that started after it was submitted (or never started) is given, in a
  counterfactual, the busy time it would have had between submission and actual start
  (restricted to the failure window when one is given); loss = counterfactual busy
  GPU-hours - actual busy GPU-hours, with the same per-GPU cap, so delays overlapping
  on one GPU are not double counted.

Times are either all numbers (hours on any common axis; floats are read through
``str`` so 0.6 means exactly 0.6) or all timezone-aware ``datetime`` objects (or ISO
8601 strings, which are parsed); mixing the two is an error. Busy time is not useful
throughput: completed valid jobs are a separate figure passed to the renderer.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from datetime import datetime
from decimal import ROUND_HALF_UP, Decimal, InvalidOperation

__all__ = [
    "CostError",
    "CostReport",
    "Window",
    "Workload",
    "article_scenario",
    "available_gpu_hours",
    "busy_gpu_hours",
    "compute_report",
    "failure_loss",
    "q",
    "render_markdown",
    "scenario",
    "workload_from_dict",
]

ZERO = Decimal(0)
ONE = Decimal(1)
SECONDS_PER_HOUR = Decimal(3600)


class CostError(Exception):
    """Base error; messages read "Failed to <verb> <object>: <reason>"."""


# --------------------------------------------------------------------------- inputs


def _dec(value, what):
    """A Decimal from int, Decimal, float (via str) or a numeric string."""
    if isinstance(value, bool):
        raise CostError(f"Failed to read {what}: {value!r} is not a number")
    if isinstance(value, Decimal):
        result = value
    elif isinstance(value, (int, str)):
        try:
            result = Decimal(value)
        except InvalidOperation as exc:
            raise CostError(f"Failed to read {what}: {value!r} is not a number") from exc
    elif isinstance(value, float):
        result = Decimal(str(value))
    else:
        raise CostError(f"Failed to read {what}: {value!r} is not a number")
    if not result.is_finite():
        raise CostError(f"Failed to read {what}: {value!r} is not finite")
    return result


def _parse_time(value, what):
    if isinstance(value, str):
        text = value.strip()
        if text.endswith("Z"):
            text = text[:-1] + "+00:00"
        try:
            value = datetime.fromisoformat(text)
        except ValueError:
            return _dec(value, what)
    if isinstance(value, datetime):
        if value.tzinfo is None or value.utcoffset() is None:
            raise CostError(f"Failed to read {what}: {value.isoformat()} has no time zone")
        return value
    return _dec(value, what)


def _hours(value, origin):
    """Hours from origin to value (both Decimal hours or both datetimes)."""
    if isinstance(value, datetime):
        delta = value - origin
        micro = (delta.days * 86400 + delta.seconds) * 1_000_000 + delta.microseconds
        return Decimal(micro) / Decimal(1_000_000) / SECONDS_PER_HOUR
    return value - origin


@dataclass(frozen=True)
class Window:
    """The accounting window: a pool of GPUs between start and end.

    ``gpus`` is a count (the GPUs are then named "0".."n-1") or a list of GPU names
    (node/UUID/index: whatever the workloads use).
    """

    start: object
    end: object
    gpus: object

    def gpu_ids(self):
        if isinstance(self.gpus, bool):
            raise CostError("Failed to read window GPUs: a boolean is not a GPU count")
        if isinstance(self.gpus, int):
            if self.gpus < 0:
                raise CostError(f"Failed to read window GPUs: negative count {self.gpus}")
            return tuple(str(i) for i in range(self.gpus))
        ids = tuple(str(g) for g in self.gpus)
        if len(set(ids)) != len(ids):
            raise CostError(f"Failed to read window GPUs: duplicate names in {list(ids)}")
        return ids


@dataclass(frozen=True)
class Workload:
    """One workload's lifetime on one or more GPUs.

    ``portion`` is the share of each listed GPU it holds (0 < portion <= 1; 1 for a
    whole-GPU workload). ``start`` None means it never started; ``end`` None means it
    was still running when the window closed. ``submitted`` (optional) is when it was
    submitted; it only matters for the failure loss.
    """

    name: str
    gpus: object
    portion: object
    start: object = None
    end: object = None
    submitted: object = None

    def gpu_ids(self):
        if isinstance(self.gpus, (str, int)):
            return (str(self.gpus),)
        return tuple(str(g) for g in self.gpus)


def workload_from_dict(record):
    """A Workload from a recorded dict (keys as the dataclass; ``gpu`` for one GPU)."""
    if not isinstance(record, dict):
        raise CostError(f"Failed to read workload: {record!r} is not a mapping")
    name = str(record.get("name", "?"))
    gpus = record.get("gpus", record.get("gpu"))
    if gpus is None or "portion" not in record:
        raise CostError(f"Failed to read workload {name}: 'gpus' and 'portion' are required")
    return Workload(
        name=name,
        gpus=gpus,
        portion=record["portion"],
        start=record.get("start"),
        end=record.get("end"),
        submitted=record.get("submitted"),
    )


@dataclass(frozen=True)
class _Interval:
    gpu: str
    start: Decimal  # hours from window start, already clipped
    end: Decimal
    portion: Decimal


@dataclass(frozen=True)
class _Prepared:
    length: Decimal
    gpus: tuple
    actual: tuple  # of _Interval
    delays: tuple  # of (workload name, gpu, raw delay start, raw delay end, portion)


def _prepare(window, workloads):
    """Validate everything and turn times into Decimal hours from the window start."""
    w_start = _parse_time(window.start, "window start")
    w_end = _parse_time(window.end, "window end")
    if isinstance(w_start, datetime) != isinstance(w_end, datetime):
        raise CostError("Failed to read window: start and end mix datetimes and numbers")
    is_dt = isinstance(w_start, datetime)
    length = _hours(w_end, w_start)
    if length <= 0:
        raise CostError(
            f"Failed to compute window length: end must be after start (length {length} h)"
        )
    gpus = window.gpu_ids()
    known = set(gpus)

    def rel(value, what):
        t = _parse_time(value, what)
        if isinstance(t, datetime) != is_dt:
            raise CostError(f"Failed to read {what}: mixes datetimes and numbers with the window")
        return _hours(t, w_start)

    actual, delays = [], []
    for item in workloads:
        wl = workload_from_dict(item) if isinstance(item, dict) else item
        portion = _dec(wl.portion, f"workload {wl.name} portion")
        if not ZERO < portion <= ONE:
            raise CostError(
                f"Failed to account workload {wl.name}: portion {portion} is not in (0, 1]"
            )
        ids = wl.gpu_ids()
        unknown = [g for g in ids if g not in known]
        if unknown or not ids:
            raise CostError(
                f"Failed to account workload {wl.name}: GPUs {unknown or '[]'} are not "
                f"in the window's pool"
            )
        start = None if wl.start is None else rel(wl.start, f"workload {wl.name} start")
        end = length if wl.end is None else rel(wl.end, f"workload {wl.name} end")
        if start is not None and end < start:
            raise CostError(f"Failed to account workload {wl.name}: it ends before it starts")
        if start is not None:
            lo, hi = max(start, ZERO), min(end, length)
            if hi > lo:
                actual.extend(_Interval(g, lo, hi, portion) for g in ids)
        if wl.submitted is not None:
            sub = rel(wl.submitted, f"workload {wl.name} submitted")
            waited_until = length if start is None else start
            if waited_until > sub:
                delays.extend((wl.name, g, sub, waited_until, portion) for g in ids)
    return _Prepared(length, gpus, tuple(actual), tuple(delays))


# ----------------------------------------------------------------------- arithmetic


def _per_gpu(intervals):
    """(busy, oversubscribed) GPU-hours: portions summed per GPU, capped at 1.0."""
    by_gpu = {}
    for iv in intervals:
        by_gpu.setdefault(iv.gpu, []).append(iv)
    busy = over = ZERO
    for ivs in by_gpu.values():
        events = sorted({t for iv in ivs for t in (iv.start, iv.end)})
        for lo, hi in itertools.pairwise(events):
            load = sum((iv.portion for iv in ivs if iv.start <= lo and iv.end >= hi), ZERO)
            busy += min(load, ONE) * (hi - lo)
            over += max(load - ONE, ZERO) * (hi - lo)
    return busy, over


def available_gpu_hours(window):
    """Number of GPUs x window length, in hours."""
    prepared = _prepare(window, ())
    return len(prepared.gpus) * prepared.length


def busy_gpu_hours(window, workloads):
    """Busy GPU-hours in the window (per-GPU sum of portions, capped at 1.0)."""
    return _per_gpu(_prepare(window, workloads).actual)[0]


def _delay_intervals(prepared, failure):
    """(workload name, interval) for the busy time delayed workloads would have added:
    submission to actual start, clipped to the window and to the failure window."""
    f_lo, f_hi = (ZERO, prepared.length) if failure is None else failure
    out = []
    for name, gpu, sub, waited_until, portion in prepared.delays:
        lo, hi = max(sub, f_lo, ZERO), min(waited_until, f_hi, prepared.length)
        if hi > lo:
            out.append((name, _Interval(gpu, lo, hi, portion)))
    return out


def _failure_bounds(window, failure_window):
    if failure_window is None:
        return None
    f_start, f_end = failure_window
    w_start = _parse_time(window.start, "window start")
    lo_t = _parse_time(f_start, "failure window start")
    hi_t = _parse_time(f_end, "failure window end")
    for t, what in ((lo_t, "failure window start"), (hi_t, "failure window end")):
        if isinstance(t, datetime) != isinstance(w_start, datetime):
            raise CostError(f"Failed to read {what}: mixes datetimes and numbers with the window")
    lo, hi = _hours(lo_t, w_start), _hours(hi_t, w_start)
    if hi < lo:
        raise CostError("Failed to read failure window: end is before start")
    return lo, hi


def failure_loss(window, workloads, failure_window=None):
    """Busy GPU-hours lost to submitted work that could not start.

    Returns a dict: ``lost_busy_gpu_hours``, ``delayed_workloads`` (names),
    ``waiting_gpu_hours`` (sum of portion x attributable delay, uncapped).
    """
    prepared = _prepare(window, workloads)
    failure = _failure_bounds(window, failure_window)
    extra = _delay_intervals(prepared, failure)
    actual_busy = _per_gpu(prepared.actual)[0]
    counterfactual_busy = _per_gpu(prepared.actual + tuple(iv for _unused, iv in extra))[0]
    return {
        "lost_busy_gpu_hours": counterfactual_busy - actual_busy,
        "counterfactual_busy_gpu_hours": counterfactual_busy,
        "delayed_workloads": sorted({name for name, _unused in extra}),
        "waiting_gpu_hours": sum(((iv.end - iv.start) * iv.portion for _unused, iv in extra), ZERO),
    }


@dataclass(frozen=True)
class CostReport:
    """The figures for one window. Decimals throughout; ``None`` where undefined."""

    gpus: int
    window_hours: Decimal
    available_gpu_hours: Decimal
    busy_gpu_hours: Decimal
    oversubscribed_gpu_hours: Decimal
    utilisation: object  # Decimal, or None for a pool of zero GPUs
    rate: Decimal
    window_cost: Decimal
    cost_per_busy_gpu_hour: object  # Decimal or None
    lost_busy_gpu_hours: Decimal = ZERO
    counterfactual_busy_gpu_hours: object = None
    counterfactual_utilisation: object = None
    counterfactual_cost_per_busy_gpu_hour: object = None
    delayed_workloads: tuple = field(default_factory=tuple)

    def as_dict(self):
        """JSON-friendly: Decimals as strings, None kept."""
        out = {}
        for key, value in self.__dict__.items():
            if isinstance(value, Decimal):
                out[key] = str(value)
            elif isinstance(value, tuple):
                out[key] = list(value)
            else:
                out[key] = value
        return out


def _per_busy(cost, busy):
    return None if busy == 0 else cost / busy


def compute_report(window, workloads, rate, failure_window=None):
    """All figures for the window at ``rate`` per available GPU-hour."""
    rate = _dec(rate, "rate")
    if rate < 0:
        raise CostError(f"Failed to read rate: {rate} is negative")
    workloads = tuple(workloads)
    prepared = _prepare(window, workloads)
    available = len(prepared.gpus) * prepared.length
    busy, over = _per_gpu(prepared.actual)
    cost = available * rate
    loss = failure_loss(window, workloads, failure_window)
    cf_busy = loss["counterfactual_busy_gpu_hours"]
    return CostReport(
        gpus=len(prepared.gpus),
        window_hours=prepared.length,
        available_gpu_hours=available,
        busy_gpu_hours=busy,
        oversubscribed_gpu_hours=over,
        utilisation=busy / available if available else None,
        rate=rate,
        window_cost=cost,
        cost_per_busy_gpu_hour=_per_busy(cost, busy),
        lost_busy_gpu_hours=loss["lost_busy_gpu_hours"],
        counterfactual_busy_gpu_hours=cf_busy,
        counterfactual_utilisation=cf_busy / available if available else None,
        counterfactual_cost_per_busy_gpu_hour=_per_busy(cost, cf_busy),
        delayed_workloads=tuple(loss["delayed_workloads"]),
    )


# ------------------------------------------------------------------------- scenario


def scenario(gpus, hours, busy_fraction, outage_hours, rate):
    """A uniform window: every GPU runs a workload of portion ``busy_fraction``,
    submitted at the window start, kept from starting for ``outage_hours`` by a
    failure. Returns the CostReport (actual = with the outage, counterfactual = without).
    """
    gpus = int(gpus)
    hours = _dec(hours, "scenario hours")
    outage = _dec(outage_hours, "scenario outage hours")
    if not ZERO <= outage <= hours:
        raise CostError(f"Failed to build scenario: outage {outage} h is not within {hours} h")
    workloads = [
        Workload(
            name=f"mix-{i}",
            gpus=str(i),
            portion=busy_fraction,
            submitted=ZERO,
            start=outage if outage < hours else None,
            end=hours,
        )
        for i in range(gpus)
    ]
    window = Window(start=ZERO, end=hours, gpus=gpus)
    return compute_report(window, workloads, rate, failure_window=(ZERO, outage))


def article_scenario():
    """The release article's worked example: 4 GPUs, 8 h, 60 % busy, 2 h outage, 3/GPU-h."""
    return scenario(gpus=4, hours=8, busy_fraction="0.60", outage_hours=2, rate=3)


# ------------------------------------------------------------------------- rendering


def q(value, places="0.01"):
    """Round half up for presentation; None stays None."""
    if value is None:
        return None
    return _dec(value, "value").quantize(Decimal(places), rounding=ROUND_HALF_UP)


def _fmt(value, places="0.01"):
    return "undefined (no busy time)" if value is None else f"{q(value, places)}"


def _pct(value):
    return "n/a" if value is None else f"{q(value * 100, '0.1')} %"


def render_markdown(report, completed_valid_jobs=None, title="Utilisation and cost", currency=""):
    """A report section (markdown) for one CostReport.

    ``completed_valid_jobs`` is counted elsewhere (the evidence) and passed in; the
    section says plainly that busy time is not useful throughput. ``currency`` is a
    prefix for money figures (e.g. "$").
    """
    cur = currency
    jobs = "not recorded" if completed_valid_jobs is None else str(completed_valid_jobs)
    rows = [
        ("GPUs x window", f"{report.gpus} x {q(report.window_hours)} h"),
        ("available GPU-hours", _fmt(report.available_gpu_hours)),
        ("busy GPU-hours", _fmt(report.busy_gpu_hours)),
        ("utilisation", _pct(report.utilisation)),
        ("rate per available GPU-hour", cur + _fmt(report.rate)),
        ("cost of the window", cur + _fmt(report.window_cost)),
        ("allocated cost per busy GPU-hour", cur + _fmt(report.cost_per_busy_gpu_hour)),
        ("busy GPU-hours lost to work that could not start", _fmt(report.lost_busy_gpu_hours)),
        ("busy GPU-hours had that work started", _fmt(report.counterfactual_busy_gpu_hours)),
        ("utilisation had that work started", _pct(report.counterfactual_utilisation)),
        (
            "cost per busy GPU-hour had that work started",
            cur + _fmt(report.counterfactual_cost_per_busy_gpu_hour),
        ),
        (
            "oversubscribed GPU-hours (portions above 1.0, not counted as busy)",
            _fmt(report.oversubscribed_gpu_hours),
        ),
        ("completed valid jobs (counted separately)", jobs),
    ]
    lines = [f"## {title}", "", "| figure | value |", "| --- | --- |"]
    lines += [f"| {name} | {value} |" for name, value in rows]
    lines.append("")
    if report.delayed_workloads:
        names = ", ".join(str(n) for n in report.delayed_workloads)
        lines += [f"Workloads that could not start when submitted: {names}.", ""]
    lines += [
        "Busy time is not useful throughput: a GPU held by a workload counts as busy whether "
        "or not that work completes or is valid. Completed valid jobs are counted separately "
        "(above); compare them, the workload mix and queue age before drawing an economic "
        "conclusion. The window costs the same whether the GPUs are busy or idle: recovering "
        "busy time lowers the cost per busy GPU-hour, not the bill.",
        "",
    ]
    return "\n".join(lines)
