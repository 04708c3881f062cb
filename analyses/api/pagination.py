"""Pagination of the analysis list (pages) and of an analysis's evaluations (cursor)."""

from __future__ import annotations

from rest_framework.pagination import CursorPagination, PageNumberPagination


class AnalysisPagination(PageNumberPagination):
    """Numbered pages: a mirror of a few thousand resources counts in milliseconds."""

    # Rows per page unless the client asks for another size.
    page_size = 50
    # ?page_size= lets tooling fetch bigger pages...
    page_size_query_param = "page_size"
    # ...but never unbounded ones.
    max_page_size = 500


class EvaluationPagination(CursorPagination):
    """Newest first; a cursor stays stable while the operator keeps adding rows at the top."""

    # Served by the (analysis, -started_at, -id) index; id breaks ties between equal times.
    ordering = ("-started_at", "-id")
    # Rows per page unless the client asks for another size.
    page_size = 50
    # ?page_size= lets tooling fetch bigger pages...
    page_size_query_param = "page_size"
    # ...but never unbounded ones.
    max_page_size = 500
