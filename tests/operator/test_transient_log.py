"""A dependency gone for a while is one log line; a bug keeps its traceback (docs/reliability.md).

The soak counted 25-70 tracebacks in the operators' logs per PostgreSQL restart: every loop
(dispatcher, pump, watch, reconcile, django-q2's monitor) logging the same expected transient.
The errors here are real: a PostgreSQL connection to a port where nothing listens.
"""

from __future__ import annotations

import io
import logging
import traceback

import psycopg
from django.db import utils as db_utils
from kubernetes import client as k8s

from sentinel_cluster import kube
from sentinel_operator import transient
from testkit.ports import free_port


def _logger() -> tuple[logging.Logger, io.StringIO]:
    out = io.StringIO()
    handler = logging.StreamHandler(out)
    handler.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))
    logger = logging.getLogger(f"test-transient-{id(out)}")
    logger.propagate = False
    logger.addHandler(handler)
    transient.install(logger)
    return logger, out


def _refused() -> psycopg.OperationalError:
    try:
        psycopg.connect(f"host=127.0.0.1 port={free_port()} dbname=x user=x connect_timeout=5")
    except psycopg.OperationalError as exc:
        return exc
    raise AssertionError("a connection to a free port succeeded")


def test_a_database_gone_is_one_line_with_what_and_why() -> None:
    logger, out = _logger()
    error = _refused()
    try:
        try:
            raise error
        except psycopg.OperationalError as exc:
            # As a loop sees it: Django's wrapper, caused by psycopg's error.
            raise RuntimeError("pass failed") from exc
    except RuntimeError:
        logger.exception("dispatcher: pass %s", "failed")
    text = out.getvalue()
    assert "Traceback" not in text
    assert text.count("\n") == 1, text
    assert (
        text.startswith("ERROR ") and "dispatcher: pass failed: the database is unavailable" in text
    )
    assert "OperationalError" in text and "refused" in text.lower()


def test_django_s_wrapped_database_error_is_transient_too() -> None:
    logger, out = _logger()
    error = _refused()
    try:
        # What django.db.utils.DatabaseErrorWrapper raises around psycopg's error.
        raise db_utils.OperationalError(*error.args) from error
    except db_utils.OperationalError:
        logger.exception("notifications: pump pass failed")
    assert "Traceback" not in out.getvalue()
    assert "pump pass failed: the database is unavailable" in out.getvalue()


def test_a_bug_keeps_its_traceback() -> None:
    logger, out = _logger()
    try:
        {}["missing"]
    except KeyError:
        logger.exception("reconcile soak/a failed unexpectedly")
    assert "Traceback (most recent call last)" in out.getvalue()
    assert "KeyError: 'missing'" in out.getvalue()


def _django_q_failure(logger: logging.Logger, error: BaseException) -> None:
    # django_q.worker stores f"{e} : {traceback.format_exc()}"; its monitor logs it as text.
    try:
        raise error
    except BaseException as exc:
        result = f"{exc} : {traceback.format_exc()}"
    logger.error("Failed '%s' (%s) - %s", "reconcile_task", "reconcile soak/s0006", result)


def test_a_task_failure_django_q2_logs_as_text_is_one_line_when_transient() -> None:
    logger, out = _logger()
    error = _refused()
    _django_q_failure(logger, db_utils.OperationalError(*error.args))
    text = out.getvalue()
    assert "Traceback" not in text and text.count("\n") == 1, text
    assert "Failed 'reconcile_task' (reconcile soak/s0006) - " in text
    assert "the database is unavailable (OperationalError: " in text
    # A bug's traceback stays, text or not.
    logger, out = _logger()
    _django_q_failure(logger, KeyError("missing"))
    assert "Traceback (most recent call last)" in out.getvalue()


def test_the_api_server_gone_during_a_periodic_resync_is_one_line() -> None:
    # The 30-minute soak's one traceback: resync_task's list failed while the API server was
    # restarting, and django-q2 printed the task's traceback. The error here is real: a
    # request to a port where nothing listens.
    configuration = k8s.Configuration()
    configuration.host = f"https://127.0.0.1:{free_port()}"
    client = kube.KubeClient(k8s.ApiClient(configuration), timeout=5.0)
    logger, out = _logger()
    try:
        client.list_all(kube.analyses_path("soak"))
    except kube.Unavailable as exc:
        result = f"{exc} : {traceback.format_exc()}"
    else:
        raise AssertionError("a list from a port where nothing listens succeeded")
    logger.error("Failed '%s' (%s) - %s", "resync_task", "full resync", result)
    text = out.getvalue()
    assert "Traceback" not in text and text.count("\n") == 1, text
    assert "the Kubernetes API server is unavailable (Unavailable: " in text
