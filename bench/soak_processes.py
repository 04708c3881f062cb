"""Invariant 7: no crash loop, no 'database is locked', no traceback, memory bounded.

Registered by ``bench.soak_invariants`` (imported at its end); definitions in
``docs/reliability.md``.
"""

from __future__ import annotations

import statistics
from collections import Counter, defaultdict

from bench.soak_invariants import (
    OPERATOR_RSS_LIMIT_MB,
    RSS_SLOPE_LIMIT,
    RSS_SLOPE_MIN_MINUTES,
    STARTUP_SECONDS,
    Finding,
    invariant,
)
from bench.soak_plan import (
    FaultKind,
)
from bench.soak_record import History


@invariant(7, "no crash loop, no 'database is locked', no traceback, memory bounded")
def processes_healthy(history: History, finding: Finding) -> None:
    for at, component, code in history.unexpected_exits:
        finding.checked += 1
        finding.violate(
            f"{component} exited on its own at {at - history.started:.1f} s (code {code})"
        )
    kills = sum(
        1 for f in history.faults if f.kind == FaultKind.WORKER_KILL.value and not f.skipped
    )
    reincarnated = 0
    for component, text in sorted(history.logs.items()):
        finding.checked += 1
        locked = text.count("database is locked")
        if locked:
            finding.violate(f"{component}: 'database is locked' {locked} times")
        reincarnated += text.count("reincarnated worker")
        # No traceback for the user. A dependency gone is one line (the operator's
        # sentinel_operator.transient, the API's 503); a traceback left is a bug to look at.
        errors = _traceback_errors(text)
        if errors:
            kinds = Counter(errors).most_common(3)
            finding.violate(
                f"{component}: {len(errors)} tracebacks in the log; "
                + "; ".join(f"{n} x {line[:200]}" for line, n in kinds)
            )
    if reincarnated > kills:
        finding.violate(
            f"{reincarnated} django-q2 workers reincarnated, {kills} of them killed by the run"
        )
    finding.notes.append(f"{reincarnated} worker reincarnations ({kills} workers killed)")
    minutes = (history.ended - history.started) / 60.0
    for component, slope in sorted(rss_slopes(history).items()):
        finding.notes.append(f"RSS slope {component}: {slope:+.2f} MB/min")
        if component.startswith(("operator", "web")) and minutes >= RSS_SLOPE_MIN_MINUTES:
            finding.checked += 1
            if slope > RSS_SLOPE_LIMIT:
                finding.violate(f"{component}: RSS grows {slope:.2f} MB/min")
    finding.notes += process_growth(history)
    for sample in history.rss:
        # PSS: the forked workers share most pages with their parent.
        total = sum(mb for name, mb in sample.pss.items() if name.startswith("operator"))
        finding.checked += 1
        if total > OPERATOR_RSS_LIMIT_MB:
            finding.violate(
                f"operators use {total:.0f} MB at {sample.at - history.started:.1f} s "
                f"(limit {OPERATOR_RSS_LIMIT_MB:.0f} MB)"
            )


def _traceback_errors(text: str) -> list[str]:
    """Return the exception line that ends each traceback of ``text`` (chained ones once)."""
    errors = []
    lines = text.splitlines()
    index = 0
    while index < len(lines):
        # Also inside a line: django-q2 logs a failed task's traceback as text after its error.
        if "Traceback (most recent call last)" not in lines[index]:
            index += 1
            continue
        index += 1
        while index < len(lines) and (not lines[index] or lines[index][0].isspace()):
            index += 1
        ending = lines[index] if index < len(lines) else ""
        # The next line that is neither blank nor the exception message's continuation.
        following = next((x for x in lines[index + 1 :] if x and not x[0].isspace()), "")
        # "The above exception was the direct cause...": one record, judged by its last error.
        if not following.startswith(("The above exception", "During handling")):
            errors.append(ending)
    return errors


def rss_slopes(history: History) -> dict[str, float]:
    """Return each component's RSS slope (MB/min) over the second half of the run.

    The first half holds start-up (imports, caches, connection pools); a leak shows in the rest.
    The slope is Theil-Sen's (the median of the slopes between every two samples), not least
    squares': a worker's chart child, forked for a notification and gone a second later, adds
    its ~130 MB of pages shared with the worker to the one sample that sees it, and one such
    sample near the end made a flat tree read +7.8 MB/min (docs/reliability.md). A leak moves
    every sample; the median follows it.
    Only the component's last incarnation counts, from a minute after it was first seen: a
    process the run restarted starts afresh.
    "operators (all)" sums both replicas over the samples where both are in their last one.
    """
    middle = history.started + (history.ended - history.started) / 2.0
    last_pid = history.rss[-1].pids if history.rss else {}
    # When each incarnation was first seen: its first minute is start-up (forking workers).
    born: dict[tuple[str, int | None], float] = {}
    for sample in history.rss:
        for component, pid in sample.pids.items():
            born.setdefault((component, pid), sample.at)
    series: dict[str, list[tuple[float, float]]] = defaultdict(list)
    for sample in history.rss:
        if sample.at < middle:
            continue
        minute = (sample.at - middle) / 60.0
        current = [
            component
            for component, mb in sample.mb.items()
            if mb > 0
            and sample.pids.get(component) == last_pid.get(component)
            and sample.at >= born[(component, sample.pids.get(component))] + STARTUP_SECONDS
        ]
        for component in current:
            series[component].append((minute, sample.mb[component]))
        operators = [name for name in sample.mb if name.startswith("operator-")]
        if operators and all(name in current for name in operators):
            series["operators (all)"].append((minute, sum(sample.mb[n] for n in operators)))
    slopes = {}
    for component, points in series.items():
        if len(points) < 3:
            continue
        pairwise = [
            (y2 - y1) / (x2 - x1)
            for index, (x1, y1) in enumerate(points)
            for x2, y2 in points[index + 1 :]
            if x2 > x1
        ]
        if pairwise:
            slopes[component] = statistics.median(pairwise)
    return slopes


ROLES = ("operator", "django-q2 sentinel", "django-q2 worker, monitor or pusher")


def process_growth(history: History) -> list[str]:
    """Say, for each operator process alive at the end, how its private memory changed.

    A tree's sum hides which process grows; each one's private pages (not shared with the
    process it was forked from) do not.
    """
    seen: dict[tuple[str, int], list[tuple[float, float, float, int]]] = defaultdict(list)
    for sample in history.rss:
        for component, processes in sample.processes.items():
            for process in processes:
                seen[(component, process.pid)].append(
                    (sample.at, process.private, process.pss, process.depth)
                )
    last = history.rss[-1].processes if history.rss else {}
    lines = []
    peak = max(
        history.rss,
        key=lambda sample: sum(
            mb for name, mb in sample.pss.items() if name.startswith("operator")
        ),
        default=None,
    )
    if peak is not None and peak.processes:
        lines.append(
            f"at the operators' PSS peak ({peak.at - history.started:.0f} s): "
            + "; ".join(
                f"{component} "
                + ", ".join(
                    f"{process.pid}/{process.depth}: PSS {process.pss:.0f} private "
                    f"{process.private:.0f}"
                    for process in processes
                )
                for component, processes in sorted(peak.processes.items())
            )
        )
    for component, processes in sorted(last.items()):
        for process in processes:
            series = seen[(component, process.pid)]
            first_at, first_private, _, depth = series[0]
            minutes = (series[-1][0] - first_at) / 60.0
            lines.append(
                f"{component} pid {process.pid} ({ROLES[depth]}): private "
                f"{first_private:.0f} -> {process.private:.0f} MB over {minutes:.1f} min, "
                f"PSS {process.pss:.0f} MB"
            )
    return lines
