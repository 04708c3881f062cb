"""The replay engine against a real Prometheus whose past was written in (testkit.backfill).

Four rollouts an hour ago: one before Prometheus held anything (no data, no verdict guessed),
a good one, a latency regression a person rolled back, a good one again. The threshold and the
``beforeRollout`` baseline metrics are measured at the instants the operator would have used
and judged by the same decision core: the regression pauses at its third evaluation with the
live sentence, the others pass every evaluation.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from sentinel_core.backtest import PastRollout, instants
from sentinel_core.kinds import no_old_side
from sentinel_core.spec import parse_spec
from sentinel_operator.backtest import BacktestError, Pace, Replayer
from sentinel_operator.prometheus import PrometheusClient
from sentinel_operator.providers import Providers
from testkit.backfill import backfilled

pytestmark = pytest.mark.server

NOW = datetime.now(UTC).replace(microsecond=0)
T = NOW - timedelta(minutes=5)
MINUTE = timedelta(minutes=1)
SECOND = timedelta(seconds=1)


def _value(moment: datetime) -> float:
    # The regression: from ten seconds into the rollout starting at T-50m until T-40m.
    bad = T - 50 * MINUTE + timedelta(seconds=10) <= moment < T - 40 * MINUTE
    return 0.5 if bad else 0.1


SAMPLES = [
    ("lat", {"app": "web"}, _value(T - timedelta(seconds=s)), T - timedelta(seconds=s))
    for s in range(0, 60 * 60 + 1, 5)
]
# New pods against old ones during the regression: the new template's pods ("ccc") report
# 0.5 and more, the old ones' ("bbb") 0.1 and more, until the old ones are gone at T-45m.
SAMPLES += [
    ("lat2", {"app": "web", "pod_template_hash": side}, base + 0.01 * (s % 7), T - s * SECOND)
    for s in range(0, 60 * 60 + 1, 5)
    for side, base in (("ccc", 0.5), ("bbb", 0.1))
    if (side == "ccc" and 40 * 60 <= s <= 50 * 60) or (side == "bbb" and s >= 45 * 60)
]
# Requests counted per pod: the new pods ("ccc") fail one request in four from T-50m, the old
# ones ("bbb") one in a hundred; ten requests a second each.
SAMPLES += [
    (
        "http_requests_total",
        {"app": "web", "pod": f"web-{side}", "pod_template_hash": side, "code": code},
        rate * (s - start),
        T - (60 * 60 - s) * SECOND,
    )
    for side, start, bad in (("bbb", 0, 0.01), ("ccc", 10 * 60, 0.25))
    for code, rate in (("500", 10 * bad), ("200", 10 * (1 - bad)))
    for s in range(start, 20 * 60 + 1, 5)
]
SPEC = {
    "target": {"kind": "Deployment", "name": "web"},
    "interval": "30s",
    "failureLimit": 3,
    "metrics": [
        {"name": "latency", "query": 'max(lat{app="web"})', "maxValue": 0.3},
        {
            "name": "increase",
            "query": 'max(lat{app="web"})',
            "maxIncrease": {"percent": 50},
            "baseline": {"beforeRollout": True},
        },
    ],
}


def _period(start: int, end: int, key: str, *, back: bool = False) -> PastRollout:
    return PastRollout(
        revision=start,
        key=key,
        started_at=T - start * MINUTE,
        ended_at=T - end * MINUTE,
        rolled_back=back,
    )


PERIODS = (
    _period(75, 65, "aaa"),
    _period(60, 50, "bbb"),
    _period(50, 40, "ccc", back=True),
    _period(40, 30, "ddd"),
)


@pytest.fixture(scope="module")
def providers(tmp_path_factory: pytest.TempPathFactory) -> Providers:
    server = backfilled(Path(tmp_path_factory.mktemp("backfilled")), SAMPLES)
    with server:
        yield Providers.single(PrometheusClient(server.url))


def test_instants_follow_the_interval_from_the_rollout_start() -> None:
    moments = instants(PERIODS[1], 30.0)
    assert len(moments) == 19
    assert moments[0] == PERIODS[1].started_at + timedelta(seconds=30)
    # The end is where the next rollout begins: its template is the one running then.
    assert moments[-1] == PERIODS[1].ended_at - timedelta(seconds=30)


def test_replay_pauses_the_regression_only(providers: Providers) -> None:
    seen: list[tuple[int, int]] = []
    result = Replayer(providers).replay(
        "shop", "web", parse_spec(SPEC), PERIODS, progress=lambda d, t: seen.append((d, t))
    )
    nothing, good, bad, again = result.replays
    assert nothing.no_data and nothing.would_pause_at is None
    assert nothing.verdicts.inconclusive == 19 and nothing.verdicts.passed == 0
    for replay in (good, again):
        assert replay.would_pause_at is None and not replay.no_data
        assert replay.verdicts.passed == 19 and replay.verdicts.failed == 0
    assert bad.evaluation == 3
    assert bad.would_pause_at == bad.rollout.started_at + timedelta(seconds=90)
    assert bad.metric == "latency" and bad.value == "0.5" and bad.limit == 0.3
    assert bad.message.startswith(
        "paused Deployment web: 3 consecutive failed evaluations reached failureLimit 3"
    )
    # Both metrics failed: the live sentence names the baseline's limit too.
    assert "increase" in bad.message
    # After the pause the count goes on as it would live (the target held by this analysis).
    assert bad.verdicts.failed == 19
    assert [s.paused for s in bad.steps].count(True) == 1
    assert bad.steps[2].metrics[1]["limit"] == pytest.approx(0.15)
    assert result.summary["caught"] == [
        {"revision": 50, "pausedAfterSeconds": 90.0, "beforeEndSeconds": 510.0}
    ]
    assert result.summary["missed"] == [] and result.summary["pausedNotRolledBack"] == []
    assert result.exit_code == 0
    # Per evaluation: each metric's query, and the baseline's (asked once the query answered).
    assert result.queries == 76 * 3
    assert seen[-1] == (76, 76)


def test_a_pause_nobody_rolled_back_fails_the_exit_code(providers: Providers) -> None:
    periods = (PERIODS[1], PERIODS[2].__class__(**{**PERIODS[2].__dict__, "rolled_back": False}))
    result = Replayer(providers).replay("shop", "web", parse_spec(SPEC), periods)
    assert result.summary["pausedNotRolledBack"] == [50]
    assert result.exit_code == 1


def test_prometheus_down_is_one_line(tmp_path: Path) -> None:
    with backfilled(tmp_path, SAMPLES) as server:
        url = server.url
    with pytest.raises(BacktestError, match=r"^Prometheus is unavailable: "):
        Replayer(Providers.single(PrometheusClient(url))).replay(
            "shop", "web", parse_spec(SPEC), PERIODS[1:2]
        )


def test_the_query_bound_stops_the_backtest(providers: Providers) -> None:
    backtest = Replayer(providers, max_queries=10)
    with pytest.raises(BacktestError, match="bound of 10 queries"):
        backtest.replay("shop", "web", parse_spec(SPEC), PERIODS[1:2])


def test_queries_to_one_provider_are_spaced(providers: Providers) -> None:
    slept: list[float] = []
    replayer = Replayer(
        providers, queries_per_second=4, clock=lambda: 100.0, sleep=slept.append, pace=Pace()
    )
    result = replayer.replay("shop", "web", parse_spec(SPEC), PERIODS[1:2])
    # The clock stands still, so each query waits a quarter second more than the one before.
    assert result.queries == 19 * 3
    assert slept == [0.25 * k for k in range(1, 19 * 3)]


# The new pods' latency against the old pods', over five minutes, at least 5 samples a side.
COMPARE_SPEC = {
    **SPEC,
    "metrics": [
        {
            "name": "new-vs-old",
            "query": 'lat2{app="web"}',
            "compare": {"lookback": "5m", "minSamples": 5},
        }
    ],
}


def test_compare_judges_the_new_revision_against_the_one_it_replaced(
    providers: Providers,
) -> None:
    period = PastRollout(
        revision=3,
        key="ccc",
        started_at=T - 50 * MINUTE,
        ended_at=T - 40 * MINUTE,
        previous_key="bbb",
    )
    (replay,) = (
        Replayer(providers).replay("shop", "web", parse_spec(COMPARE_SPEC), (period,)).replays
    )
    # The new pods' samples of the range ending at each instant: too few for the first three.
    assert [step.outcome for step in replay.steps[:4]] == ["Inconclusive"] * 3 + ["Fail"]
    assert "under minSamples 5 per side" in replay.steps[0].metrics[0]["message"]
    assert replay.evaluation == 6 and replay.metric == "new-vs-old"
    assert "new pods' median" in replay.message and "above old pods'" in replay.message


def test_compare_has_no_old_side_where_the_old_pods_were_gone(providers: Providers) -> None:
    # The old pods ("bbb") report until T-45m; Prometheus holds that sample as the series' value
    # for its lookback of five minutes. Then live the old ReplicaSet had no replicas: no old side
    # to compare with, whatever the range over lookback still holds of it.
    period = PastRollout(
        revision=3,
        key="ccc",
        started_at=T - 50 * MINUTE,
        ended_at=T - 30 * MINUTE,
        older_keys=("bbb", "aaa"),
    )
    (replay,) = (
        Replayer(providers).replay("shop", "web", parse_spec(COMPARE_SPEC), (period,)).replays
    )
    gone = T - 40 * MINUTE
    before = [step for step in replay.steps if step.at < gone]
    after = [step for step in replay.steps if step.at > gone]
    assert len(before) == 19 and len(after) == 19
    # Judged against "bbb" while its pods served ("aaa" never reported: not an old side).
    assert [step.outcome for step in before[:4]] == ["Inconclusive"] * 3 + ["Fail"]
    assert all(step.outcome == "Fail" for step in before[3:])
    # Then Inconclusive with live's sentence, never judged against samples of pods gone.
    assert {step.outcome for step in after} == {"Inconclusive"}
    assert {step.metrics[0]["message"] for step in after} == {no_old_side("Deployment")}
    assert replay.evaluation == 6


def test_sequential_counts_the_new_pods_errors_against_the_old(providers: Providers) -> None:
    spec = {
        **SPEC,
        "metrics": [
            {
                "name": "errors",
                "sequential": {
                    "bad": 'http_requests_total{app="web", code="500"}',
                    "total": 'http_requests_total{app="web"}',
                    "minEvents": 50,
                },
            }
        ],
    }
    period = PastRollout(
        revision=3,
        key="ccc",
        started_at=T - 50 * MINUTE,
        ended_at=T - 40 * MINUTE,
        previous_key="bbb",
    )
    (replay,) = Replayer(providers).replay("shop", "web", parse_spec(spec), (period,)).replays
    messages = [step.metrics[0]["message"] for step in replay.steps]
    assert replay.steps[0].outcome == "Inconclusive" and "under minEvents 50" in messages[0]
    # Each evaluation counts the steps since the last one, the evidence carried in the status
    # from one replayed evaluation to the next, as live.
    assert "(75 of 300 vs 3 of 300 requests" in messages[1]
    assert "(150 of 600 vs 6 of 600 requests" in messages[2]
    assert replay.evaluation == 4 and replay.metric == "errors"
    assert "error rate is 25 \u00d7 the old pods'" in replay.message
