"""Client CPU of reading an analysis: the attempt's GET against a read of its mirror row.

Issue 28's cut 2 (docs/performance.md, "Cut 2: the premise measured") would have the worker read
the analysis from its mirror row instead of a GET. The steady-state attempt reads nothing from
the mirror today (cut 4's bookkeeping is one UPDATE and two INSERTs), so the row's read would be
a statement more, not one saved; this measures what each read costs where it is spent, so the
trade can be judged: the GET through ``KubeClient``'s lean path, the row through the ORM
(``values_list``) and through one plain SQL statement, each followed by the attempt's one parse
(``AnalysisResource.read``), and the parse alone. Two neighbours of the choice are measured
too: the watch's check of one event against the row (``mirror.watch_can_skip``, one ORM read
per status write, in the leader), and django-q2's signing of a batch task of eight members with
and without each member's row in it (the other place the row could come from: the dispatcher,
which reads the due rows anyway). Client CPU is the thread's
(``time.thread_time``), the API server's the devcluster process tree's, both per read, in
alternating rounds against one devcluster and a migrated SQLite file (the shipped settings:
WAL, a persistent connection).

    .venv/bin/python -m bench.analysis_read_cost [--reads 1000] [--rounds 3]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import time
from collections.abc import Callable
from typing import Any

from bench.cpu import tree_cpu
from bench.harness import stack
from bench.kube_request_cost import evaluation_status, two_metric_analysis
from sentinel_cluster import kube
from testkit.site_env import with_defaults

_NAMESPACE = "bench-read"
# The columns an attempt needs, in one statement with its text built once, as cut 4 writes.
_ROW_SQL = (
    'SELECT "namespace", "name", "uid", "resource_version", "generation", "created_at",'
    ' "spec", "status" FROM "analyses_analysis" WHERE "uid" = %s AND "deleted_at" IS NULL'
)
_COLUMNS = ("namespace", "name", "uid", "resource_version", "generation", "created_at")


def _setup_django(database: str) -> None:
    os.environ.update(with_defaults({"DATABASE_URL": f"sqlite:///{database}"}))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "sentinel_site.settings")
    import django

    django.setup()


def _object(meta: tuple[Any, ...], spec: Any, status: Any) -> dict[str, Any]:
    """Return the API server's shape of a mirrored analysis (what ``AnalysisResource`` reads)."""
    namespace, name, uid, version, generation, created = meta
    return {
        "metadata": {
            "namespace": namespace,
            "name": name,
            "uid": uid,
            "resourceVersion": version,
            "generation": generation,
            "creationTimestamp": created if isinstance(created, str) else created.isoformat(),
        },
        "spec": spec,
        "status": status,
    }


def _batch(obj: dict[str, Any], *, with_rows: bool) -> dict[str, Any]:
    """Return a django-q2 task of eight members as the dispatcher queues it, maybe with rows."""
    meta = obj["metadata"]
    members = []
    for index in range(8):
        member: list[Any] = [meta["namespace"], f"{meta['name']}-{index}", meta["uid"]]
        member.append("2026-12-03T16:00:00.123456+00:00")
        if with_rows:
            # Copies, as eight rows read from the database are: pickle would share one object.
            row = json.loads(json.dumps([obj["spec"], obj["status"]]))
            member += [meta["resourceVersion"], meta["generation"], *row]
        members.append(member)
    return {
        "id": "0" * 32,
        "name": "reconcile",
        "func": "sentinel_operator.tasks.reconcile_batch_task",
        "args": (members, "2026-12-03T16:02:00+00:00"),
        "kwargs": {},
    }


def _signed(task: dict[str, Any]) -> Any:
    """Sign ``task`` as the broker stores it and read it back as a worker does."""
    from django_q.signing import SignedPackage  # needs the settings: imported after setup

    return SignedPackage.loads(SignedPackage.dumps(task))


def _per_read(read: Callable[[], Any], count: int, server_pid: int) -> tuple[float, float]:
    """Return (client, API server) CPU milliseconds per call of ``read``."""
    server = tree_cpu(server_pid)
    started = time.thread_time()
    for _ in range(count):
        read()
    client = time.thread_time() - started
    return client * 1000 / count, (tree_cpu(server_pid) - server) * 1000 / count


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reads", type=int, default=1000, help="per path and round")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args(argv)
    with stack() as running:
        database = running.workdir / "read.sqlite3"
        shutil.copy(running.database_template, database)
        _setup_django(str(database))
        from django.db import connection
        from django_q.signing import SignedPackage

        from analyses import mirror
        from analyses.models import Analysis
        from sentinel_core.resource import AnalysisResource

        client = kube.KubeClient(running.cluster.api_client())
        created = two_metric_analysis(client, _NAMESPACE)
        path = kube.analysis_path(_NAMESPACE, "ra")
        # A status the size of a two-metric evaluation's, mirrored as the worker would.
        written = client.request(
            "PUT", f"{path}/status", body={**created, "status": evaluation_status(1)}
        )
        mirror.upsert_from_resource(written)
        uid = written["metadata"]["uid"]

        def get() -> AnalysisResource:
            return AnalysisResource.read(client.request("GET", path))

        def row_orm() -> AnalysisResource:
            rows = Analysis.objects.filter(uid=uid, deleted_at__isnull=True).order_by()
            found = rows.values_list(*_COLUMNS, "spec", "status")[:1]
            *meta, spec, status = next(iter(found))
            return AnalysisResource.read(_object(tuple(meta), spec, status))

        def row_sql() -> AnalysisResource:
            with connection.cursor() as cursor:
                cursor.execute(_ROW_SQL, [uid])
                *meta, spec, status = cursor.fetchone()
            return AnalysisResource.read(_object(tuple(meta), json.loads(spec), json.loads(status)))

        raw = client.request("GET", path)

        def parse() -> AnalysisResource:
            return AnalysisResource.read(raw)

        def watch_check() -> bool:
            return mirror.watch_can_skip(written)

        paths = {
            "get": get,
            "row_orm": row_orm,
            "row_sql": row_sql,
            "parse_only": parse,
            "watch_check": watch_check,
        }
        same = {get().status == read().status for read in (row_orm, row_sql, parse)}
        assert same == {True}, "a path reads a different status"
        assert watch_check(), "the watch would write the row"
        with_rows = _batch(written, with_rows=True)
        paths["sign_batch"] = lambda: _signed(_batch(written, with_rows=False))
        paths["sign_batch_with_rows"] = lambda: _signed(with_rows)
        for read in paths.values():  # warm the connection, the caches, the SQL texts
            _per_read(read, 100, running.cluster.pid)
        rows = []
        for round_ in range(1, args.rounds + 1):
            row: dict[str, Any] = {"round": round_}
            for label, read in paths.items():
                client_ms, server_ms = _per_read(read, args.reads, running.cluster.pid)
                row[f"{label}_ms"] = round(client_ms, 3)
                row[f"{label}_server_ms"] = round(server_ms, 3)
            rows.append(row)
            print(json.dumps(row), flush=True)
        sizes = {key: len(json.dumps(raw.get(key) or {})) for key in ("spec", "status")}
        sizes["batch_task"] = len(SignedPackage.dumps(_batch(written, with_rows=False)))
        sizes["batch_task_with_rows"] = len(SignedPackage.dumps(with_rows))
        print(
            json.dumps(
                {
                    "rounds": rows,
                    "bytes": sizes,
                    "load_avg": [round(x, 2) for x in os.getloadavg()],
                }
            )
        )


if __name__ == "__main__":
    main()
