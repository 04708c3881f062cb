"""The differential test: one script, both servers, same answers (docs/devcluster.md).

The script (tests/realcluster/differential/script.py, 218 operations with the real kubectl
and the official ``kubernetes`` client) runs against devcluster and against the real
kube-apiserver at the same time; their answers are normalized (uids, times,
resourceVersions, generated names, tokens and certificates masked; managedFields dropped)
and compared path by path. Every difference must be allowed by an entry of
differential/allowlist.py, which docs/devcluster.md lists with its reason; an entry that
matches nothing fails the test too.

The real cluster runs *with* its controllers: devcluster plays the controllers the product
meets (a namespace's default ServiceAccount, namespace deletion, a Deployment's, StatefulSet's
and DaemonSet's rollout, their pods on the real cluster's kwok node), so that is the
like-for-like comparison. What the controllers own and write later, a workload's status in the
answers to writes and a Deployment's revision annotation, is masked
(differential/normalize.py); the StatefulSet's and DaemonSet's status is compared once their
controllers finished (differential/ops_kinds.py).
"""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from testkit.devcluster import DevCluster
from testkit.realcluster import RealCluster
from tests.realcluster.differential import allowlist
from tests.realcluster.differential.compare import Difference, compare_runs
from tests.realcluster.differential.runner import Run, Session, run_script
from tests.realcluster.differential.script import OPS


def _report(unexpected: list[Difference], unused: list[allowlist.Allowed]) -> str:
    lines = [f"{len(unexpected)} difference(s) not in the allow-list:"]
    lines += [str(difference) for difference in unexpected]
    if unused:
        lines.append(f"{len(unused)} allow-list entr(ies) matched nothing (remove them):")
        lines += [f"  {entry.ops} :: {entry.path}" for entry in unused]
    return "\n".join(lines)


def test_script_is_long_enough() -> None:
    names = [op.name for op in OPS]
    assert len(names) >= 60
    assert len(set(names)) == len(names)


def test_docs_list_the_allow_list() -> None:
    """docs/devcluster.md carries exactly the table generated from the allow-list."""
    documented = allowlist.documented_table(allowlist.DOC.read_text())
    assert documented == allowlist.render_table(), (
        "docs/devcluster.md is out of date: run "
        "`python -m tests.realcluster.differential.allowlist --write`"
    )


@pytest.mark.realcluster
@pytest.mark.slow
def test_devcluster_answers_like_the_real_server(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    started = time.monotonic()
    with (
        RealCluster(tmp_path / "real", controllers=True) as real,
        DevCluster(tmp_path / "dev") as dev,
        ThreadPoolExecutor(max_workers=2) as pool,
    ):
        # The two servers are independent; running the script on both at once halves the time.
        real_run = pool.submit(run_script, Session(real, "real"), OPS)
        dev_run = pool.submit(run_script, Session(dev, "devcluster"), OPS)
        runs: tuple[Run, Run] = (real_run.result(), dev_run.result())
    found = compare_runs(runs[0].answers, runs[1].answers)
    unexpected = [d for d in found if allowlist.allowance(d) is None]
    used = {allowlist.allowance(d) for d in found}
    unused = [entry for entry in allowlist.ALLOWED if entry not in used]
    slowest = sorted(runs[0].seconds.items(), key=lambda item: -item[1])[:3]
    with capsys.disabled():
        print(
            f"\ndifferential: {len(runs[0].answers)} operations compared, "
            f"{len(found)} differences ({len(found) - len(unexpected)} allowed by "
            f"{len(allowlist.ALLOWED) - len(unused)} documented entries, "
            f"{len(unexpected)} not allowed) in {time.monotonic() - started:.0f} s; "
            f"slowest on the real server: "
            + ", ".join(f"{name} {seconds:.1f} s" for name, seconds in slowest)
        )
    assert len(runs[0].answers) == len(runs[1].answers) == len(OPS)
    # An operation that raised on both servers alike would compare equal and prove nothing.
    crashed = {
        f"{run.label}: {name}: {answer['exception']}"
        for run in runs
        for name, answer in run.answers.items()
        if isinstance(answer, dict) and "exception" in answer
    }
    assert not crashed, crashed
    assert not unexpected and not unused, _report(unexpected, unused)
