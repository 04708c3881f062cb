"""Query-string filters: ``namespace``, ``verdict``, ``paused`` on the analysis list (``search``
is DRF's ``SearchFilter``), and the ``since``/``until`` window on evaluations.

A malformed value is the client's error: 400 with the parameter as the field, never ignored.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import Any

from django.db.models import QuerySet
from django.utils.dateparse import parse_datetime
from rest_framework.exceptions import ValidationError
from rest_framework.filters import BaseFilterBackend
from rest_framework.request import Request

from sentinel_core.conditions import Verdict

_TRUE = frozenset({"true", "1", "yes"})
_FALSE = frozenset({"false", "0", "no"})
# A "+01:00" offset arrives as " 01:00" when the client did not percent-encode the "+".
_UNENCODED_OFFSET = re.compile(r" (\d{2}:?\d{2})$")


def _parameter(name: str, description: str, schema: dict[str, Any]) -> dict[str, Any]:
    return {
        "name": name,
        "required": False,
        "in": "query",
        "description": description,
        "schema": schema,
    }


class AnalysisFilter(BaseFilterBackend):
    """Filter the analysis list by exact namespace, last verdict and paused state."""

    def filter_queryset(self, request: Request, queryset: QuerySet, view: Any) -> QuerySet:
        params = request.query_params
        errors: dict[str, list[str]] = {}
        if namespace := params.get("namespace"):
            queryset = queryset.filter(namespace=namespace)
        if (verdict := params.get("verdict")) is not None:
            if verdict not in {v.value for v in Verdict}:
                errors["verdict"] = [f"must be one of {', '.join(Verdict)}"]
            else:
                queryset = queryset.filter(last_verdict=verdict)
        if (paused := params.get("paused")) is not None:
            if paused.lower() in _TRUE:
                queryset = queryset.filter(paused=True)
            elif paused.lower() in _FALSE:
                queryset = queryset.filter(paused=False)
            else:
                errors["paused"] = ["must be true or false"]
        if errors:
            raise ValidationError(errors)
        return queryset

    def get_schema_operation_parameters(self, view: Any) -> list[dict[str, Any]]:
        return [
            _parameter("namespace", "Only analyses in this namespace.", {"type": "string"}),
            _parameter(
                "verdict",
                "Only analyses whose last verdict is this one.",
                {"type": "string", "enum": [v.value for v in Verdict]},
            ),
            _parameter(
                "paused",
                "Only analyses that have (true) or have not (false) paused their target.",
                {"type": "boolean"},
            ),
        ]


class EvaluationWindowFilter(BaseFilterBackend):
    """Keep evaluations started at or after ``since`` and strictly before ``until``."""

    def filter_queryset(self, request: Request, queryset: QuerySet, view: Any) -> QuerySet:
        errors: dict[str, list[str]] = {}
        bounds: dict[str, datetime] = {}
        for name in ("since", "until"):
            raw = request.query_params.get(name)
            if raw is None:
                continue
            moment = _datetime(raw)
            if moment is None:
                errors[name] = ["must be an ISO 8601 date-time such as 2026-11-29T10:00:00Z"]
            else:
                bounds[name] = moment
        if errors:
            raise ValidationError(errors)
        if "since" in bounds:
            queryset = queryset.filter(started_at__gte=bounds["since"])
        if "until" in bounds:
            queryset = queryset.filter(started_at__lt=bounds["until"])
        return queryset

    def get_schema_operation_parameters(self, view: Any) -> list[dict[str, Any]]:
        moment = {"type": "string", "format": "date-time"}
        return [
            _parameter("since", "Only evaluations started at or after this time.", moment),
            _parameter("until", "Only evaluations started before this time.", moment),
        ]


def _datetime(raw: str) -> datetime | None:
    """Return the aware datetime in ``raw`` (UTC when it names no zone), None if malformed."""
    try:
        moment = parse_datetime(_UNENCODED_OFFSET.sub(r"+\1", raw.strip()))
    except ValueError:
        return None
    if moment is None:
        return None
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)
