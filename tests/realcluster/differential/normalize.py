"""Mask what differs between any two API servers by design, so the rest can be compared.

Two correct servers still answer with different uids, resourceVersions, creation times,
generated names, tokens and certificates, and kubectl prints ages that depend on when the
command ran. This module replaces those with placeholders, keeping their *shape* checked: a
masked uid must still look like a uid, a resourceVersion must still be a decimal string, so a
server that answered with garbage there would still show up as a difference.

Masking is by key (``uid``, ``resourceVersion``, ...) rather than by every string that looks
like a timestamp, because times the script writes itself (an Event's ``lastTimestamp``, a
Lease's ``renewTime``) must come back unchanged from both servers and are compared.
``managedFields`` is dropped: devcluster does not track field managers (documented in
docs/devcluster.md), and the product never reads them.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any, TypeVar

UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
TIME = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)")
JWT = re.compile(r"eyJ[\w-]+\.eyJ[\w-]+\.[\w-]+")
# A PEM certificate, base64-encoded once more (as in kubeconfigs and Secret data).
PEM_B64 = re.compile(r"LS0tLS1CRUdJTi[A-Za-z0-9+/=]+")
DECIMAL = re.compile(r"\d+")
# kubectl describe prints an object's resourceVersion.
DESCRIBED_RV = re.compile(r"(Resource Version:\s+)\d+")
# A failed delete precondition names the stored resourceVersion in its message.
# The field of a cause about no field: field.Invalid(nil, ...) in kube-apiserver.
NO_FIELD = "<nil>"
_T = TypeVar("_T")
RECORD_RV = re.compile(r"(ResourceVersion in record \()\d+\)")

# Key -> (placeholder, the shape the value must have to be masked). A value of another shape
# is left alone so that it is compared, and differs.
MASKED_KEYS: dict[str, tuple[str, re.Pattern[str]]] = {
    "uid": ("<uid>", UUID),
    "resourceVersion": ("<rv>", DECIMAL),
    "creationTimestamp": ("<time>", TIME),
    "deletionTimestamp": ("<time>", TIME),
    "expirationTimestamp": ("<time>", TIME),
    "token": ("<jwt>", JWT),
    # Where each server listens (/api's serverAddressByClientCIDRs).
    "serverAddress": ("<address>", re.compile(r"[\w.:\[\]-]+:\d+")),
    # An opaque paging token; each server encodes its own position its own way.
    "continue": ("<continue>", re.compile(r".+")),
}
DROPPED_KEYS = frozenset({"managedFields"})


class Normalizer:
    """Normalizes the answers of one server; remembers the names that server generated.

    A name completed from ``generateName`` gets a random suffix; once seen it is replaced by
    ``<generateName><generated>`` in every later answer of the same server too (kubectl prints
    the name in its text output).
    """

    def __init__(self) -> None:
        self.aliases: dict[str, str] = {}

    def json(self, value: Any) -> Any:
        """Return a masked copy of a decoded JSON answer."""
        self._collect_aliases(value)
        return self._walk(value)

    def text(self, value: str) -> str:
        """Mask uids, times, tokens, certificates and generated names in kubectl's text."""
        value = DESCRIBED_RV.sub(r"\1<rv>", self.string(value))
        return TIME.sub("<time>", value)

    def string(self, value: str) -> str:
        """Mask what no server can reproduce inside a JSON string; times are masked by key
        instead, so that times the script wrote are compared."""
        for real, alias in self.aliases.items():
            value = value.replace(real, alias)
        value = RECORD_RV.sub(r"\1<rv>)", value)
        value = UUID.sub("<uid>", value)
        value = JWT.sub("<jwt>", value)
        return PEM_B64.sub("<cert>", value)

    def _collect_aliases(self, value: Any) -> None:
        if isinstance(value, dict):
            meta = value.get("metadata")
            if isinstance(meta, dict):
                prefix, name = meta.get("generateName"), meta.get("name")
                generated = isinstance(prefix, str) and isinstance(name, str) and name != prefix
                if generated and prefix and name.startswith(prefix):
                    self.aliases[name] = f"{prefix}<generated>"
            for item in value.values():
                self._collect_aliases(item)
        elif isinstance(value, list):
            for item in value:
                self._collect_aliases(item)

    def _walk(self, value: Any) -> Any:
        if isinstance(value, dict):
            out: dict[str, Any] = {}
            for key, item in value.items():
                if key in DROPPED_KEYS:
                    continue
                masked = MASKED_KEYS.get(key)
                if masked and isinstance(item, str) and masked[1].fullmatch(item):
                    out[key] = masked[0]
                else:
                    out[key] = self._walk(item)
            return _mask_kind_specific(out)
        if isinstance(value, list):
            return [self._walk(item) for item in value]
        if isinstance(value, str):
            return self.string(value)
        return value


def _sort_causes(status: dict[str, Any]) -> None:
    """Put a Status's causes, and the message that lists them, in one order.

    The real server validates a custom resource's properties in Go map order, which is random
    from one request to the next, so only the set of field causes is an answer to compare. The
    causes without a field (``<nil>``: the note that the CEL rules were not checked) keep their
    place: the server appends them after its validation, in a fixed order.
    """
    details = status.get("details")
    causes = details.get("causes") if isinstance(details, dict) else None
    if not isinstance(causes, list) or len(causes) < 2:
        return
    if not all(isinstance(cause, dict) for cause in causes):
        return

    def joined(items: list[dict[str, Any]]) -> str:
        return ", ".join(f"{c.get('field')}: {c.get('message')}" for c in items)

    ordered = _sorted_in_place(
        causes,
        is_fixed=lambda c: c.get("field") in (None, NO_FIELD),
        key=lambda c: (str(c.get("field")), str(c.get("message"))),
    )
    message = status.get("message")
    if isinstance(message, str) and message.endswith(f"[{joined(causes)}]"):
        status["message"] = message[: -len(joined(causes)) - 2] + f"[{joined(ordered)}]"
    details["causes"] = ordered


def sort_bullets(lines: list[str]) -> list[str]:
    """Sort each run of kubectl's ``* field: message`` lines (see ``_sort_causes``)."""
    out: list[str] = []
    run: list[str] = []
    for line in [*lines, ""]:
        if line.startswith("* "):
            run.append(line)
            continue
        out += _sorted_in_place(run, is_fixed=lambda b: b.startswith(f"* {NO_FIELD}:"), key=str)
        run = []
        out.append(line)
    return out[:-1]


def _sorted_in_place(
    items: list[_T], *, is_fixed: Callable[[_T], bool], key: Callable[[_T], Any]
) -> list[_T]:
    """Return ``items`` sorted by ``key``, except that those ``is_fixed`` keep their index."""
    movable = iter(sorted((item for item in items if not is_fixed(item)), key=key))
    return [item if is_fixed(item) else next(movable) for item in items]


def _mask_kind_specific(obj: dict[str, Any]) -> dict[str, Any]:
    """Mask the fields that controllers, not the API server, own (see docs/devcluster.md)."""
    kind = obj.get("kind")
    if kind == "Status":
        _sort_causes(obj)
    if kind == "Scale" and isinstance(obj.get("status"), dict) and "replicas" in obj["status"]:
        # A Deployment's Scale reports status.replicas, which its controller writes.
        obj["status"]["replicas"] = "<controller-owned>"
    if isinstance(obj.get("metadata"), dict) and isinstance(
        obj["metadata"].get("annotations"), dict
    ):
        # The deployment controller's revision counter (also in a Table row's metadata).
        annotations = obj["metadata"]["annotations"]
        if annotations.pop("deployment.kubernetes.io/revision", None) and not annotations:
            obj["metadata"].pop("annotations")
    if kind in ("Deployment", "StatefulSet", "DaemonSet") and "status" in obj:
        # The workload controllers write status, on the real cluster seconds later, on
        # devcluster at once (it plays controllers that complete every rollout as far as the
        # strategy lets it, as no pods exist there). ops_kinds compares the StatefulSet's and
        # DaemonSet's once the real controllers have finished.
        obj["status"] = "<controller-owned>"
    if kind == "Table" and isinstance(obj.get("rows"), list):
        # Age cells are rendered durations ("4s") and "Created At" cells creation times: they
        # depend on when the object was made and the request came.
        columns = [c.get("name") for c in obj.get("columnDefinitions") or []]
        for row in obj["rows"]:
            cells = row.get("cells") if isinstance(row, dict) else None
            for index, name in enumerate(columns):
                if not isinstance(cells, list) or index >= len(cells):
                    continue
                if name == "Age":
                    cells[index] = "<age>"
                elif name == "Created At" and TIME.fullmatch(str(cells[index])):
                    cells[index] = "<time>"
    if kind == "CustomResourceDefinition" and isinstance(obj.get("status"), dict):
        for condition in obj["status"].get("conditions") or []:
            if isinstance(condition, dict) and "lastTransitionTime" in condition:
                condition["lastTransitionTime"] = "<time>"
    return obj


# kubectl's tables: an upper-case header opens each block of output; columns start where
# their header starts; headers are separated by at least two spaces (tabwriter pads with
# three) and may themselves contain one space ("LAST SEEN").
HEADER_WORD = re.compile(r"\S+(?: \S+)*")
AGE_HEADERS = frozenset({"AGE"})
WIDE_GAP = re.compile(r"\s{2,}")


def parse_table(text: str) -> list[list[str]]:
    """Split kubectl's column output into rows of cells, with the AGE cells masked.

    Ages ("3s" on one server, "4s" on the other) and the padding that follows from their
    width are what differs between two runs; the cells themselves are compared.
    """
    rows: list[list[str]] = []
    starts: list[int] = []
    ages: set[int] = set()
    block_start = True
    for line in text.splitlines():
        if not line.strip():
            block_start = True
            continue
        words = list(HEADER_WORD.finditer(line))
        header = block_start and line == line.upper() and any(c.isalpha() for c in line)
        block_start = False
        if header:
            starts = [w.start() for w in words]
            ages = {i for i, w in enumerate(words) if w.group() in AGE_HEADERS}
            rows.append([w.group() for w in words])
            continue
        if not starts or any(0 < at <= len(line) and line[at - 1] != " " for at in starts):
            # Not a row of the last NAME table (kubectl auth can-i --list, or a row that does
            # not line up): its cells are whatever two or more spaces separate.
            rows.append(WIDE_GAP.split(line.strip()))
            continue
        cells = [
            line[start : starts[i + 1] if i + 1 < len(starts) else None].strip()
            for i, start in enumerate(starts)
        ]
        rows.append(["<age>" if i in ages and cell else cell for i, cell in enumerate(cells)])
    return rows
