"""One notification worker's memory per message sent: what invariant 7 of the soak sums up.

    .venv/bin/python -m bench.soak_memory [--messages 100] [--before]

Prepares a process the way ``runoperator`` does before it forks its django-q2 workers, forks
one "worker", and has it draw and send ``--messages`` messages (the real ``render.chart_png``
and ``channels.send``, a chart of 60 samples, to the kit's webhook receiver); it prints the
worker's RSS, PSS and private memory (``/proc/PID/smaps_rollup``) after 0, 1, 2, 5, 10, 20,
50, ... messages. ``--before`` reproduces the operator before the fix (only
``preload_worker_modules`` in the parent, the chart drawn in the worker itself) so both can be
compared on one machine (docs/reliability.md).
"""

from __future__ import annotations

import argparse
import os
import time
from datetime import UTC, datetime, timedelta

REPORT_AT = {0, 1, 2, 5, 10, 20, 50, 100, 200, 500, 1000}


def memory_mb(pid: int) -> dict[str, float]:
    fields: dict[str, float] = {}
    with open(f"/proc/{pid}/smaps_rollup") as rollup:
        for line in rollup:
            parts = line.split()
            if parts[0] in ("Rss:", "Pss:", "Private_Clean:", "Private_Dirty:"):
                fields[parts[0][:-1]] = int(parts[1]) / 1024
    return {
        "rss": fields["Rss"],
        "pss": fields["Pss"],
        "private": fields["Private_Clean"] + fields["Private_Dirty"],
    }


def worker(url: str, messages: int, before: bool, report: int) -> None:
    from notifications import channels, render
    from notifications.config import Channel

    draw = render.draw_png if before else render.chart_png
    channel = Channel(name="bench", url=url)
    lines = []
    started = time.monotonic()
    for sent in range(messages + 1):
        if sent:
            now = datetime.now(UTC)
            points = [(now - timedelta(seconds=10 * k), 0.1 + (k % 7) / 10) for k in range(60)]
            series = [render.Series("max(sentinel_test_value)", 0.5, points)]
            # A different title per message, as each analysis' name differs.
            png = draw(f"soak/s{sent:04d}: the last hour", series, [now], now)
            message = channels.Message(f"Paused soak/s{sent:04d}", "text " * 40, png=png)
            result = channels.send(channel, message, timeout=5)
            if not result.ok:
                raise SystemExit(f"message {sent} not sent: {result.error}")
        if sent in REPORT_AT or sent == messages:
            mem = memory_mb(os.getpid())
            lines.append(
                f"after {sent:4d} messages: RSS {mem['rss']:6.1f} MB  PSS {mem['pss']:6.1f} MB  "
                f"private {mem['private']:6.1f} MB  ({time.monotonic() - started:5.1f} s)"
            )
    os.write(report, ("\n".join(lines) + "\n").encode())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=100)
    parser.add_argument("--before", action="store_true", help="the operator before the fix")
    args = parser.parse_args()
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "sentinel_site.settings")
    os.environ.setdefault("SENTINEL_DEBUG", "true")
    import django

    django.setup()
    from sentinel_operator import runtime
    from sentinel_operator.management.commands.runoperator import share_with_workers
    from testkit.webhook import WebhookReceiver

    if args.before:
        runtime.preload_worker_modules()
    else:
        share_with_workers()
    receiver = WebhookReceiver().start()
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            os.close(read_end)
            worker(receiver.apprise_url, args.messages, args.before, write_end)
            code = 0
        finally:
            os._exit(code)
    os.close(write_end)
    out = b""
    while chunk := os.read(read_end, 1 << 16):
        out += chunk
    status = os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])
    receiver.stop()
    print("before the fix" if args.before else "after the fix", f"(parent pid {os.getpid()})")
    print(out.decode(), end="")
    print(f"receiver got {len(receiver.messages)} messages; worker exit code {status}")
    raise SystemExit(status)


if __name__ == "__main__":
    main()
