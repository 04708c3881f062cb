"""Carry out a soak plan's faults on the running stack and record each as it really happened.

``run_lane`` runs one lane of ``bench.soak_plan``'s schedule in its own thread (the Prometheus
lane and the cluster lane run at once), one fault after the other, each recorded as a
``FaultRecord`` with its real start, end and how long it may delay a due evaluation
(``blocks_until``, see ``docs/reliability.md``). kubectl edits and deletes are recorded as
actions too, because they change what the invariants expect of that analysis.
"""

from __future__ import annotations

import json
import os
import random
import signal
import threading
import time
from collections.abc import Callable
from typing import Any

import requests

from bench.soak_plan import (
    MAX_VALUE,
    SAMPLES_MIN,
    AnalysisPlan,
    FaultKind,
    FaultPlan,
    samples_case,
)
from bench.soak_record import FaultRecord, History
from bench.soak_stack import LEASE_SECONDS, ClusterApi, Replica, Stack
from sentinel_site.config import DEFAULT_CLAIM_TIMEOUT
from testkit.manifests import analysis_manifest, deployment_manifest, gauge_metric, to_yaml
from testkit.processes import descendants, holding_sockets

# The operator's dispatch claim (SENTINEL_CLAIM_TIMEOUT: the shipped default, which soak_stack
# gives the replicas): a queued reconcile lost with its process is dispatched again when its
# claim runs out.
CLAIM_SECONDS = float(DEFAULT_CLAIM_TIMEOUT)
# Longer than the operator's Prometheus timeout (SENTINEL_PROMETHEUS_TIMEOUT, default 5 s).
SLOW_SECONDS = 8.0


def scripted_metric(plan: AnalysisPlan, max_value: float = MAX_VALUE) -> dict[str, Any]:
    """Return the analysis' one metric as its truth scripts it, minSamples guard included."""
    metric = gauge_metric(plan.name, max_value)
    if plan.truth.guarded:
        # Too little traffic: the guard's own series (soak_plan.Truth.samples_at).
        guard = gauge_metric(samples_case(plan.name), 0.0)["query"]
        metric["minSamples"] = {"query": guard, "min": int(SAMPLES_MIN)}
    return metric


def analysis_object(plan: AnalysisPlan, namespace: str, max_value: float = MAX_VALUE) -> Any:
    metric = scripted_metric(plan, max_value)
    manifest = analysis_manifest(
        plan.name,
        namespace,
        target=plan.name,
        metrics=[metric],
        interval=f"{plan.interval}s",
        failure_limit=plan.failure_limit,
        dry_run=plan.dry_run,
    )
    if plan.truth.window:
        manifest["spec"]["failureWindow"] = plan.truth.window
    return manifest


class FaultRunner:
    """Executes faults against ``stack``; one instance shared by every lane."""

    def __init__(
        self,
        stack: Stack,
        history: History,
        plans: dict[str, AnalysisPlan],
        namespace: str,
        seed: int,
        stop: threading.Event,
    ) -> None:
        self.stack, self.history, self.plans = stack, history, plans
        self.namespace = namespace
        self.rng = random.Random(seed * 7919 + 1)
        self.stop = stop
        self._edits: dict[str, int] = {}

    # -- lanes -----------------------------------------------------------------------------

    def run_lane(self, faults: list[FaultPlan], t0: float) -> None:
        for fault in faults:
            if self.stop.wait(max(0.0, t0 + fault.at - time.time())):
                return
            record = FaultRecord(fault.kind.value, time.time(), analysis=fault.analysis)
            try:
                self._carry_out(fault, record)
            # A fault that could not be carried out is recorded, not fatal to the run.
            except Exception as exc:
                record.detail = f"{record.detail} failed: {type(exc).__name__}: {exc}"[:500]
            if not record.ended:
                record.ended = time.time()
            self.history.add_fault(record)

    def _carry_out(self, fault: FaultPlan, record: FaultRecord) -> None:
        handlers: dict[FaultKind, Callable[[FaultPlan, FaultRecord], None]] = {
            FaultKind.PROMETHEUS_502: self._proxy_mode(lambda: self.stack.proxy.fail(502)),
            FaultKind.PROMETHEUS_HTML: self._proxy_mode(self.stack.proxy.html),
            FaultKind.PROMETHEUS_SLOW: self._proxy_mode(
                lambda: self.stack.proxy.slow(SLOW_SECONDS)
            ),
            FaultKind.PROMETHEUS_STOPPED: self._prometheus_stopped,
            FaultKind.API_SERVER_RESTART: self._api_server_restart,
            FaultKind.LEADER_SIGKILL: self._leader(signal.SIGKILL),
            FaultKind.LEADER_SIGTERM: self._leader(signal.SIGTERM),
            FaultKind.WORKER_KILL: self._worker_kill,
            FaultKind.DATABASE_RESTART: self._database_restart,
            FaultKind.EDIT_ANALYSIS: self._edit_analysis,
            FaultKind.DELETE_ANALYSIS: self._delete_analysis,
            FaultKind.DELETE_TARGET: self._delete_target,
            FaultKind.RECEIVER_REFUSED: self._receiver_down("refused"),
            FaultKind.RECEIVER_500: self._receiver_down("error"),
            FaultKind.RECEIVER_HANG: self._receiver_down("hang"),
            FaultKind.RESUME_API: self._resume,
            FaultKind.RESUME_KUBECTL: self._resume,
        }
        handlers[fault.kind](fault, record)

    # -- Prometheus lane -------------------------------------------------------------------

    def _proxy_mode(self, apply: Callable[[], None]) -> Callable[[FaultPlan, FaultRecord], None]:
        def run(fault: FaultPlan, record: FaultRecord) -> None:
            with self.stack.proxy_lock:
                record.started = time.time()
                apply()
                self.stop.wait(fault.duration)
                self.stack.proxy.pass_through()
                record.ended = time.time()

        return run

    def _prometheus_stopped(self, fault: FaultPlan, record: FaultRecord) -> None:
        with self.stack.proxy_lock:
            record.started = time.time()
            self.stack.prometheus.stop()
            self.stop.wait(fault.duration)
            self.stack.prometheus.start(timeout=60)
            record.ended = time.time()

    # -- notification receiver lane --------------------------------------------------------

    def _receiver_down(self, mode: str) -> Callable[[FaultPlan, FaultRecord], None]:
        """Refuse connections (stopped, same port), answer 500 or hang, for the fault's length."""

        def run(fault: FaultPlan, record: FaultRecord) -> None:
            receiver = self.stack.receiver
            assert receiver is not None
            record.started = time.time()
            if mode == "refused":
                receiver.stop()
            else:
                receiver.mode = mode
            try:
                self.stop.wait(fault.duration)
            finally:
                if mode == "refused":
                    receiver.start()
                receiver.mode = "ok"
                record.ended = time.time()

        return run

    # -- cluster lane ----------------------------------------------------------------------

    def _api_server_restart(self, fault: FaultPlan, record: FaultRecord) -> None:
        self.stack.restart_cluster(fault.duration)
        record.ended = time.time()
        record.blocks_until = record.ended

    def _leader(self, sig: int) -> Callable[[FaultPlan, FaultRecord], None]:
        def run(fault: FaultPlan, record: FaultRecord) -> None:
            leader = self._find_leader()
            if leader is None:
                record.skipped, record.detail = True, "no leader found"
                return
            if fault.near_boundary:
                record.analysis, record.detail = self._wait_for_boundary(fault.analysis)
            record.started = time.time()
            code = leader.stop(sig)
            record.detail = f"{record.detail} {leader.name} exited {code}".strip()
            # Its queued and in-flight reconciles come back when their claims run out; a
            # SIGKILLed leader's Lease must expire before the other replica takes over.
            record.blocks_until = record.started + CLAIM_SECONDS + LEASE_SECONDS
            self.stop.wait(fault.duration)
            leader.start()
            record.ended = time.time()

        return run

    def _find_leader(self) -> Replica | None:
        deadline = time.time() + 40
        while time.time() < deadline and not self.stop.is_set():
            for replica in self.stack.replicas:
                if replica.is_leader():
                    return replica
            time.sleep(1)
        return None

    def _wait_for_boundary(self, preferred: str) -> tuple[str, str]:
        """Sleep until 50 ms before a due time; return the analysis aimed at and a note.

        ``preferred`` if it is due within 30 s, else the live analysis due soonest (a claimed
        or backed-off analysis can be minutes away).
        """
        rows = self.stack.db(
            "SELECT name, next_due_at FROM analyses_analysis WHERE namespace = %s"
            " AND deleted_at IS NULL AND next_due_at > now() + interval '0.3 seconds'"
            " ORDER BY name = %s DESC, next_due_at LIMIT 2",
            (self.namespace, preferred),
        )
        choices = [(name, due.timestamp()) for name, due in rows]
        soon = [(name, due) for name, due in choices if due - time.time() < 30]
        if not soon:
            return preferred, "no due time within 30 s to aim at"
        name, due = soon[0]
        self.stop.wait(max(0.0, due - 0.05 - time.time()))
        return name, f"50 ms before {name}'s due time"

    def _worker_kill(self, fault: FaultPlan, record: FaultRecord) -> None:
        """SIGKILL a django-q2 worker while it waits for a (slowed) Prometheus answer."""
        with self.stack.proxy_lock:
            self.stack.proxy.slow(2.0)
            try:
                victim = None
                deadline = time.time() + 20
                while victim is None and time.time() < deadline and not self.stop.is_set():
                    time.sleep(0.5)
                    victim = self._worker_mid_query()
                record.started = time.time()
                if victim is None:
                    record.skipped, record.detail = True, "no worker was mid-query"
                    return
                os.kill(victim, signal.SIGKILL)
                record.detail = f"pid {victim}"
            finally:
                self.stack.proxy.pass_through()
        record.blocks_until = record.started + CLAIM_SECONDS
        record.ended = time.time()

    def _worker_mid_query(self) -> int | None:
        ports = self.stack.proxy.in_flight
        if not ports:
            return None
        candidates = []
        for replica in self.stack.replicas:
            if replica.process.running:
                candidates += holding_sockets(descendants(replica.process.pid), ports)
        return self.rng.choice(sorted(candidates)) if candidates else None

    def _database_restart(self, fault: FaultPlan, record: FaultRecord) -> None:
        self.stack.postgres.restart(fault.duration)
        record.ended = time.time()
        # Reconciles that could not record their outcome keep their claim.
        record.blocks_until = record.ended + CLAIM_SECONDS

    def _edit_analysis(self, fault: FaultPlan, record: FaultRecord) -> None:
        analysis = fault.analysis
        if fault.near_boundary:
            analysis, record.detail = self._wait_for_boundary(fault.analysis)
            record.analysis = analysis
        count = self._edits.get(analysis, 0) + 1
        self._edits[analysis] = count
        # A new maxValue still well clear of both scripted values: a new generation only.
        max_value = MAX_VALUE + (0.05 if count % 2 else 0.0)
        # A merge patch replaces the whole list: the guard must come along (the 30-minute run
        # of 2026-12-02 counted five Fails of an edited low-traffic analysis as invariant 4
        # violations, when the edit itself had dropped its minSamples guard).
        patch = {"spec": {"metrics": [scripted_metric(self.plans[analysis], max_value)]}}
        record.started = time.time()
        self._kubectl(
            "patch",
            "rolloutanalysis",
            analysis,
            "-n",
            self.namespace,
            "--type=merge",
            "-p",
            json.dumps(patch),
        )
        self.history.add_action(time.time(), "edit-analysis", analysis)
        record.ended = time.time()

    def _delete_analysis(self, fault: FaultPlan, record: FaultRecord) -> None:
        self._kubectl("delete", "rolloutanalysis", fault.analysis, "-n", self.namespace)
        self.history.add_action(time.time(), "delete-analysis", fault.analysis)
        self.stop.wait(fault.duration)
        manifest = analysis_object(self.plans[fault.analysis], self.namespace)
        self._kubectl("apply", "-f", "-", input=to_yaml(manifest))
        self.history.add_action(time.time(), "create-analysis", fault.analysis)
        record.ended = time.time()

    def _delete_target(self, fault: FaultPlan, record: FaultRecord) -> None:
        self._kubectl("delete", "deployment", fault.analysis, "-n", self.namespace)
        self.history.add_action(time.time(), "delete-target", fault.analysis)
        self.stop.wait(fault.duration)
        manifest = deployment_manifest(fault.analysis, self.namespace)
        self._kubectl("apply", "-f", "-", input=to_yaml(manifest))
        self.history.add_action(time.time(), "recreate-target", fault.analysis)
        record.ended = time.time()

    # -- person lane -----------------------------------------------------------------------

    def _resume(self, fault: FaultPlan, record: FaultRecord) -> None:
        """Resume one Deployment its analysis paused, as a person would (docs/status.md)."""
        found = ClusterApi(self.stack.cluster).deployments(self.namespace) or {}
        paused = sorted(
            name
            for name, (_uid, is_paused, paused_by) in found.items()
            if is_paused and f"{self.namespace}/{name}" in paused_by.split(",")
        )
        if not paused:
            record.skipped, record.detail = True, "nothing paused"
            return
        name = self.rng.choice(paused)
        record.analysis = name
        record.started = time.time()
        if fault.kind == FaultKind.RESUME_API:
            done = self._resume_api(name)
        else:
            done = self._resume_kubectl(name)
        record.ended = time.time()
        if done:
            self.history.add_action(record.ended, fault.kind.value, name)
        else:
            record.skipped, record.detail = True, f"{name} was deleted or released meanwhile"

    def _resume_api(self, name: str) -> bool:
        url = f"{self.stack.web_url}/api/v1/analyses/{self.namespace}/{name}/resume/"
        deadline = time.time() + 60
        while True:
            try:
                answer = requests.post(
                    url, headers={"Authorization": f"Token {self.stack.token}"}, timeout=30
                )
            except requests.RequestException as exc:
                status, text = 0, f"{type(exc).__name__}: {exc}"
            else:
                status, text = answer.status_code, answer.text[:300]
            if status == 200:
                return True
            if status == 404:
                return False
            if status == 409 and '"nothing_to_release"' in text:
                # Released meanwhile (a kubectl resume in the other lane): nothing of it left
                # to resume, and nothing was changed (docs/api.md#resume-and-evaluate-now).
                return False
            # 409 (the operator wrote meanwhile), 503 (API server restarting): a person retries.
            if time.time() > deadline:
                raise RuntimeError(f"POST {url}: {status} {text}")
            time.sleep(1)

    def _resume_kubectl(self, name: str) -> bool:
        deadline = time.time() + 60
        while True:
            done = self.stack.cluster.kubectl(
                "rollout", "resume", f"deployment/{name}", "-n", self.namespace, check=False
            )
            if done.returncode == 0:
                return True
            if "NotFound" in done.stderr or "not found" in done.stderr:
                return False
            if time.time() > deadline:
                raise RuntimeError(f"kubectl rollout resume {name}: {done.stderr.strip()}")
            time.sleep(1)

    def _kubectl(self, *args: str, input: str | None = None) -> None:
        """Run kubectl, retrying for a while: right after a restart the API server says 429/503."""
        deadline = time.time() + 60
        while True:
            done = self.stack.cluster.kubectl(*args, input=input, check=False, timeout=30)
            if done.returncode == 0:
                return
            if time.time() > deadline:
                raise RuntimeError(f"kubectl {' '.join(args)}: {done.stderr.strip()}")
            time.sleep(1)
