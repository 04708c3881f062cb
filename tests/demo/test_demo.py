"""``python -m demo`` end to end: banner, UI login, status, a real pause, and a clean Ctrl-C.

The demo runs as a subprocess with its story shortened through its environment knobs (regression
after 5 s, a 5 s interval over a 20 s rate window), on free ports and in a scratch directory,
against real devcluster, Prometheus, operator, runserver and kubectl. ``make demo CLUSTER=real``
runs once more, on the real control plane (docs/realcluster.md): it comes up with the checkout
pods running on kwok's node and discovered by Prometheus 3, rolls out the slower release, is
paused mid-rollout by ``compare`` while the sequential metric counts both sides' errors, and
stops on a terminal's Ctrl-C.
"""

from __future__ import annotations

import contextlib
import json
import os
import queue
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import requests

from demo import manifests
from testkit.kubectl import run_kubectl
from testkit.paths import REPO_ROOT
from testkit.ports import free_port, port_is_free
from testkit.processes import alive, descendants
from testkit.waiting import wait_until

# The demo starts its servers (docs/testkit.md#tiers).
pytestmark = pytest.mark.server

# How long the tests wait for the banner: the demo bounds every step of its start itself
# (demo/runner.py: migrate 120 s, createsuperuser 60 s, the cluster 60 s or 120 s, each kubectl
# 60 s, the web UI 60 s) and exits naming the step that overran, so a slow start on a loaded
# machine is waited out and a broken one still fails with the demo's own message. This bound
# only stops a demo that hangs without saying so.
UP_TIMEOUT = 600.0
# The story the fixture sets up (SENTINEL_DEMO_*): the regression starts 5 s in, before the
# banner on any machine; the 20 s rate window then shows it, and failureLimit 3 at a 5 s interval
# pauses. Counted from the banner, so the start's duration is not part of it; the last term is
# one more interval for the first evaluation and each attempt's own time.
RATE_WINDOW, INTERVAL = 20.0, 5.0
PAUSE_AFTER_UP = RATE_WINDOW + (manifests.FAILURE_LIMIT + 1) * INTERVAL + 2 * INTERVAL

# The demo runs with the venv's bin directory off PATH, as after a plain `make demo`, so its
# banner must say how to reach the venv's kubectl.
_USER_PATH = os.pathsep.join(
    entry
    for entry in os.environ.get("PATH", "").split(os.pathsep)
    if entry and Path(entry) != Path(sys.executable).parent
)


class DemoProcess:
    """The demo subprocess with its output collected line by line."""

    def __init__(
        self,
        env: dict[str, str],
        argv: list[str] | None = None,
        *,
        new_session: bool = False,
    ) -> None:
        self.process = subprocess.Popen(
            argv or [sys.executable, "-m", "demo"],
            cwd=REPO_ROOT,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            # Its own process group, for a Ctrl-C sent as a terminal sends it: to the group.
            start_new_session=new_session,
        )
        self.lines: list[str] = []
        self._queue: queue.Queue[str] = queue.Queue()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.lines.append(line.rstrip("\n"))
            self._queue.put(line)

    @property
    def output(self) -> str:
        return "\n".join(self.lines)

    def wait_for_line(self, pattern: str, timeout: float) -> re.Match[str]:
        """Return the first match of ``pattern`` in the output, waiting up to ``timeout``."""
        deadline = time.monotonic() + timeout
        while True:
            for line in list(self.lines):
                match = re.search(pattern, line)
                if match:
                    return match
            if self.process.poll() is not None and self._queue.empty():
                self._reader.join(timeout=2)
                raise AssertionError(f"the demo exited before {pattern!r}:\n{self.output}")
            if time.monotonic() > deadline:
                raise AssertionError(f"no {pattern!r} within {timeout} s:\n{self.output}")
            with contextlib.suppress(queue.Empty):
                self._queue.get(timeout=0.2)


@pytest.fixture
def demo_env(tmp_path: Path) -> dict[str, str]:
    return dict(
        os.environ,
        SENTINEL_DEMO_DIR=str(tmp_path / "demo"),
        SENTINEL_DEMO_PORT=str(free_port()),
        SENTINEL_DEMO_CLUSTER_PORT="0",
        SENTINEL_DEMO_REGRESSION_AFTER="5",
        SENTINEL_DEMO_INTERVAL=f"{INTERVAL:.0f}s",
        SENTINEL_DEMO_RATE_WINDOW=f"{RATE_WINDOW:.0f}s",
        PATH=_USER_PATH,
    )


@pytest.fixture
def demo(demo_env: dict[str, str]) -> Iterator[DemoProcess]:
    running = DemoProcess(demo_env)
    yield running
    if running.process.poll() is None:  # the test failed before its own Ctrl-C
        running.process.send_signal(signal.SIGINT)
        try:
            running.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            running.process.kill()
            running.process.wait()


def _kubectl_json(kubeconfig: str, *args: str) -> dict[str, Any]:
    result = run_kubectl([*args, "-o", "json"], kubeconfig=Path(kubeconfig), timeout=30)
    return dict(json.loads(result.stdout))


def _banner(demo: DemoProcess) -> list[str]:
    """Return the banner's lines, from "demo is up" to its closing rule."""
    start = next(i for i, line in enumerate(demo.lines) if "Rollout Sentinel demo is up" in line)
    end = next(i for i in range(start, len(demo.lines)) if demo.lines[i].startswith("=" * 72))
    return demo.lines[start:end]


def _messages(kubeconfig: str, *metrics: str) -> tuple[str, ...] | None:
    """Return the messages of the demo's ``metrics`` results; None before each has one."""
    status = _kubectl_json(kubeconfig, "get", "ra", "checkout").get("status") or {}
    results = {r["name"]: r for r in status.get("metricResults") or ()}
    messages = tuple(str(results.get(metric, {}).get("message", "")) for metric in metrics)
    return messages if all(messages) else None


@pytest.mark.slow
def test_demo_tells_the_story_and_stops_cleanly(
    demo: DemoProcess, demo_env: dict[str, str]
) -> None:
    demo.wait_for_line(r"Rollout Sentinel demo is up", timeout=UP_TIMEOUT)
    up = time.monotonic()
    password = demo.wait_for_line(r"user admin, password (\S+)", timeout=1)[1]
    kubeconfig = demo.wait_for_line(r"export KUBECONFIG=(\S+)", timeout=1)[1]
    assert kubeconfig == str(Path(demo_env["SENTINEL_DEMO_DIR"]) / "kubeconfig")
    demo.wait_for_line(r"Cluster: +devcluster .* at https://127\.0\.0\.1:\d+$", timeout=1)
    for command in ("kubectl get ra -w", "kubectl describe ra checkout", "rollout resume"):
        assert command in demo.output
    banner = _banner(demo)
    assert not [line for line in banner if "SPEC" in line], banner
    # The lines to paste work as printed, in a shell like the user's (the venv off PATH).
    pasted = [line.strip() for line in banner if line.startswith("   export ")]
    described = subprocess.run(
        ["sh", "-c", "\n".join([*pasted, "command -v kubectl", "kubectl describe ra checkout"])],
        env={
            **{key: value for key, value in demo_env.items() if key != "KUBECONFIG"},
            # Not the user's ~/.kube: the discovery cache of this run stays in its directory.
            "KUBECACHEDIR": str(Path(demo_env["SENTINEL_DEMO_DIR"]) / "pasted-kube-cache"),
        },
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert described.returncode == 0, [*pasted, described.stderr]
    assert described.stdout.splitlines()[0] == str(Path(sys.executable).parent / "kubectl")
    assert re.search(r"^Name:\s+checkout$", described.stdout, re.M), described.stdout

    # The UI answers, serves its static files, and the printed password logs admin in.
    base = f"http://127.0.0.1:{demo_env['SENTINEL_DEMO_PORT']}"
    with requests.Session() as session:
        login = session.get(f"{base}/admin/login/", timeout=10)
        assert login.status_code == 200
        assert session.get(f"{base}/static/admin/css/base.css", timeout=10).status_code == 200
        token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', login.text)
        assert token is not None
        answer = session.post(
            f"{base}/admin/login/?next=/admin/",
            data={"username": "admin", "password": password, "csrfmiddlewaretoken": token[1]},
            headers={"Referer": f"{base}/admin/login/"},
            timeout=10,
        )
        assert answer.status_code == 200
        assert answer.url == f"{base}/admin/", answer.url

    # kubectl sees the analysis, and the operator gives it a status.
    def verdict() -> object:
        analysis = _kubectl_json(kubeconfig, "get", "ra", "checkout")
        return (analysis.get("status") or {}).get("lastVerdict")

    assert wait_until(verdict, timeout=30, interval=0.5) in {"Pass", "Fail", "Inconclusive"}
    # The third metric (``compare``) and the fourth (``sequential``) say why devcluster cannot
    # compare new pods with old ones.
    messages = wait_until(
        lambda: _messages(kubeconfig, manifests.COMPARE_METRIC, manifests.SEQUENTIAL_METRIC),
        timeout=15,
        interval=0.5,
    )
    for message in messages:
        assert "no comparison: the target has no ReplicaSet yet" in message, messages

    # After the regression the operator pauses the Deployment, and the log says so.
    def paused() -> object:
        deployment = _kubectl_json(kubeconfig, "get", "deployment", "checkout")
        return (deployment.get("spec") or {}).get("paused")

    wait_until(
        paused,
        timeout=max(10.0, PAUSE_AFTER_UP - (time.monotonic() - up)),
        interval=0.5,
        what="the pause",
    )
    demo.wait_for_line(r"latency regresses now", timeout=1)
    demo.wait_for_line(r"verdict=Fail\s+failures=3/3 .*deployment=PAUSED", timeout=10)
    # The pause reaches the demo's local webhook, with its picture written under the demo dir.
    picture = demo.wait_for_line(
        r"notification #\d+: Rollout Sentinel: Paused — default/checkout \(picture: (\S+)\)",
        timeout=20,
    )[1]
    assert picture.startswith(str(Path(demo_env["SENTINEL_DEMO_DIR"]) / "notifications"))
    assert Path(picture).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    print(f"the demo's Paused picture: {picture}")

    # Ctrl-C: everything it started exits within a few seconds, without a traceback.
    children = descendants(demo.process.pid)
    assert len(children) >= 4, children  # devcluster, Prometheus, operator (+workers), web
    demo.process.send_signal(signal.SIGINT)
    # The operator and the web server get 4 s together, then are SIGKILLed (demo/children.py):
    # measured 4.3-5.0 s in all at a load average of 13 on two cores, where waiting for the
    # operator's running notification took 10.4 s.
    stopping = time.monotonic()
    assert demo.process.wait(timeout=15) == 0
    print(f"the demo stopped {time.monotonic() - stopping:.1f} s after Ctrl-C")
    deadline = time.monotonic() + 5
    while any(alive(pid) for pid in children) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not [pid for pid in children if alive(pid)]
    demo.wait_for_line(r"demo: stopped\.", timeout=2)
    assert "Traceback" not in demo.output


def test_a_busy_web_port_is_one_clear_line(demo_env: dict[str, str]) -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        result = subprocess.run(
            [sys.executable, "-m", "demo"],
            cwd=REPO_ROOT,
            env=dict(demo_env, SENTINEL_DEMO_PORT=str(port)),
            capture_output=True,
            text=True,
            timeout=30,
        )
    assert result.returncode == 1
    [line] = result.stdout.splitlines()
    assert line.startswith(f"demo: port {port} is already in use"), line
    assert "Traceback" not in result.stdout + result.stderr
    assert not Path(demo_env["SENTINEL_DEMO_DIR"]).exists()  # nothing started, nothing made


def test_an_unbuilt_real_control_plane_is_one_clear_line(
    demo_env: dict[str, str], tmp_path: Path
) -> None:
    # An empty binary cache: `python -m demo` cannot build (make demo CLUSTER=real does).
    result = subprocess.run(
        [sys.executable, "-m", "demo"],
        cwd=REPO_ROOT,
        env=dict(demo_env, SENTINEL_DEMO_CLUSTER="real", REALCLUSTER_CACHE=str(tmp_path / "empty")),
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert result.returncode == 1
    [line] = result.stdout.splitlines()
    assert line.startswith("demo: the real control plane is not built: "), line
    assert line.endswith("run `make realcluster` first."), line
    assert "Traceback" not in result.stdout + result.stderr
    assert not Path(demo_env["SENTINEL_DEMO_DIR"]).exists()  # nothing started, nothing made


@pytest.mark.slow
def test_a_child_dying_early_stops_the_demo_with_its_log(demo: DemoProcess) -> None:
    demo.wait_for_line(r"Rollout Sentinel demo is up", timeout=UP_TIMEOUT)
    children = descendants(demo.process.pid)
    operator = [
        pid
        for pid in children
        if "runoperator" in Path(f"/proc/{pid}/cmdline").read_text(errors="replace")
        and int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
        == demo.process.pid
    ]
    assert len(operator) == 1, operator
    os.kill(operator[0], signal.SIGKILL)  # no clean-up of its own: the demo must sweep
    assert demo.process.wait(timeout=20) == 1
    demo.wait_for_line(r"demo: operator exited with code -9; last lines of", timeout=2)
    demo.wait_for_line(r"demo: stopped\.", timeout=2)
    deadline = time.monotonic() + 5
    while any(alive(pid) for pid in children) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not [pid for pid in children if alive(pid)]


def test_make_demo_runs_on_devcluster_unless_cluster_is_real() -> None:
    def recipe(*variables: str) -> list[str]:
        # -n prints the commands without running them; the venv and apt steps are no-ops here.
        dry = subprocess.run(
            ["make", "--no-print-directory", "-n", "demo", *variables],
            cwd=REPO_ROOT,
            capture_output=True,
            text=True,
            timeout=30,
            check=True,
        )
        return dry.stdout.splitlines()

    default = recipe()
    assert default[-1].endswith("SENTINEL_DEMO_CLUSTER=dev .venv/bin/python -m demo"), default
    assert not [line for line in default if "realcluster" in line], default
    real = recipe("CLUSTER=real")
    # The build (a no-op once built) comes before the demo, which it would otherwise refuse.
    assert real[-2:] == [
        "bash realcluster/build.sh",
        "SENTINEL_DEMO_CLUSTER=real .venv/bin/python -m demo",
    ], real


def _executable(pid: int) -> str:
    try:
        return Path(os.readlink(f"/proc/{pid}/exe")).name
    except OSError:
        return ""


@pytest.mark.realcluster
@pytest.mark.slow
def test_make_demo_cluster_real_pauses_a_rollout_of_running_pods_mid_way(
    demo_env: dict[str, str],
) -> None:
    started = time.monotonic()
    make = DemoProcess(
        demo_env, ["make", "--no-print-directory", "demo", "CLUSTER=real"], new_session=True
    )
    try:
        make.wait_for_line(r"Rollout Sentinel demo is up", timeout=UP_TIMEOUT)
        print(f"make demo CLUSTER=real up in {time.monotonic() - started:.1f} s")
        kubeconfig = make.wait_for_line(r"export KUBECONFIG=(\S+)", timeout=1)[1]
        assert kubeconfig == str(Path(demo_env["SENTINEL_DEMO_DIR"]) / "kubeconfig")
        make.wait_for_line(r"user admin, password \S+", timeout=1)
        port = int(
            make.wait_for_line(
                r"Cluster: +Kubernetes v1\.37\.2 \(realcluster.* at https://127\.0\.0\.1:(\d+)$",
                timeout=1,
            )[1]
        )

        # The real control plane answers (devcluster calls itself v1.37.0-devcluster), and its
        # controller manager made the checkout Deployment's ReplicaSet.
        version = json.loads(
            run_kubectl(["version", "-o", "json"], kubeconfig=Path(kubeconfig)).stdout
        )
        assert version["serverVersion"]["gitVersion"] == "v1.37.2"

        assert f"kubectl --kubeconfig {kubeconfig} get rs,pods -w" in make.output
        prometheus = make.wait_for_line(r"Prometheus: +(http://\S+)/api/v1/targets", timeout=1)[1]
        components = {_executable(pid) for pid in descendants(make.process.pid)}
        assert {"etcd", "kube-apiserver", "kube-scheduler", "kwok", "prometheus"} <= components

        # The pods run, and Prometheus 3 discovered each with its ReplicaSet's hash.
        def discovered() -> set[str]:
            answer = requests.get(f"{prometheus}/api/v1/targets", timeout=5).json()
            return {
                target["labels"].get("pod_template_hash", "")
                for target in answer["data"]["activeTargets"]
                if target["health"] == "up" and target["labels"].get("namespace") == "default"
            }

        first = _kubectl_json(kubeconfig, "get", "rs", "-l", "app=checkout")["items"]
        assert wait_until(discovered, timeout=30, interval=0.5) >= {
            rs["metadata"]["labels"]["pod-template-hash"] for rs in first
        }

        # The slower release rolls out; compare pauses it while old and new pods both serve.
        make.wait_for_line(r"rolling out registry\.example\.com/shop/checkout:2\.5\.0", timeout=30)

        def paused() -> dict[str, Any] | None:
            analysis = _kubectl_json(kubeconfig, "get", "ra", "checkout")
            conditions = (analysis.get("status") or {}).get("conditions") or []
            reasons = {c["type"]: c.get("reason") for c in conditions}
            return analysis if reasons.get("RolloutPaused") == "FailureLimitReached" else None

        analysis = wait_until(paused, timeout=120, interval=0.5, what="the pause")
        results = {r["name"]: r for r in analysis["status"]["metricResults"]}
        assert results[manifests.COMPARE_METRIC]["verdict"] == "Fail"
        sizes = {
            rs["metadata"]["labels"]["pod-template-hash"]: rs["spec"]["replicas"]
            for rs in _kubectl_json(kubeconfig, "get", "rs", "-l", "app=checkout")["items"]
        }
        comparison = results[manifests.COMPARE_METRIC]["comparison"]
        assert sizes[comparison["newHash"]] > 0 and sizes[comparison["oldHashes"][0]] > 0, sizes
        # The sequential metric counted both sides of the same rollout, step by step; every pod
        # fails the same share of its requests, so it found no evidence of harm.
        judged = results[manifests.SEQUENTIAL_METRIC]
        state = judged["sequential"]
        assert state["key"].split("/")[0] == comparison["newHash"], state
        assert state["steps"] >= 1 and state["newTotal"] > 0 and state["oldTotal"] > 0, state
        assert state["evidence"] < state["needed"], state
        assert judged["verdict"] == "Pass", judged
        assert judged["message"].endswith("no evidence of harm so far"), judged
        print(f"{manifests.SEQUENTIAL_METRIC} at the pause: {judged['message']}")
        assert _kubectl_json(kubeconfig, "get", "deployment", "checkout")["spec"]["paused"]
        print(run_kubectl(["get", "rs", "-o", "wide"], kubeconfig=Path(kubeconfig)).stdout)
        children = descendants(make.process.pid)
    finally:
        # Ctrl-C in a terminal: SIGINT to the foreground process group, make and the demo.
        stopping = time.monotonic()
        if make.process.poll() is None:
            os.killpg(make.process.pid, signal.SIGINT)
        try:
            make.process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(make.process.pid, signal.SIGKILL)
            make.process.wait()
            raise AssertionError(f"make demo did not stop on Ctrl-C:\n{make.output}") from None
    make.wait_for_line(r"demo: stopped\.", timeout=2)
    print(f"Ctrl-C to make's exit: {time.monotonic() - stopping:.1f} s")
    deadline = time.monotonic() + 5
    while any(alive(pid) for pid in children) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not [(pid, _executable(pid)) for pid in children if alive(pid)]
    assert "Traceback" not in make.output
    # kube-apiserver's port is closed again: nothing of the control plane is left.
    wait_until(lambda: port_is_free(port), timeout=5, what=f"port {port} to close")
