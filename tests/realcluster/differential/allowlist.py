"""The known differences between devcluster and the real API server, each with its reason.

This is the allow-list of the differential test (tests/realcluster/test_differential.py) and
the source of the table in docs/devcluster.md: ``python -m
tests.realcluster.differential.allowlist`` prints the table (``--write`` puts it into the doc),
and a test fails when the doc and this list disagree. A difference the real server is right
about and the product could notice is fixed in devcluster instead of being listed here.

An entry matches a difference by the operation's name (``fnmatch`` pattern) and the path
inside its answer (a regular expression that must match the whole path). An entry that
matches nothing in a run fails the test too, so the list cannot outlive the differences.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from fnmatch import fnmatchcase
from pathlib import Path

from tests.realcluster.differential.compare import Difference

DOC = Path(__file__).resolve().parents[3] / "docs" / "devcluster.md"
BEGIN = (
    "<!-- differential allow-list: generated from tests/realcluster/differential/allowlist.py -->"
)
END = "<!-- end of the differential allow-list -->"


@dataclass(frozen=True)
class Allowed:
    """A known difference: where it shows, what each server does, why it does not matter."""

    ops: str
    path: str
    real: str
    dev: str
    reason: str

    def matches(self, difference: Difference) -> bool:
        return (
            fnmatchcase(difference.op, self.ops)
            and re.fullmatch(self.path, difference.path) is not None
        )


ALLOWED: tuple[Allowed, ...] = (
    Allowed(
        ops="discovery: aggregated discovery (apidiscovery.k8s.io/v2)",
        path=r"\.(kind|apiVersion)",
        real="answers an `APIGroupDiscoveryList` (apidiscovery.k8s.io/v2)",
        dev="answers the legacy `APIGroupList` (v1): it has no aggregated discovery",
        reason="kubectl and client-go ask for v2 with the legacy documents as the fallback in "
        "the same Accept header, and use those: every kubectl command of the script ran on "
        "them. The product reads no discovery; it uses fixed paths.",
    ),
    Allowed(
        ops="version: kubectl version -o json (server)",
        path=r"\.server\.(gitVersion|gitCommit|buildDate|goVersion)",
        real="`v1.37.2`, with the commit, date and Go of its build",
        dev="`v1.37.0-devcluster`, with placeholder commit and date",
        reason="devcluster names itself so that `kubectl version` tells the double from a real "
        "server; major and minor (1.37), what clients compare, are the same. The product "
        "never reads the server version.",
    ),
    Allowed(
        ops="can-i: --list (token)",
        path=r"\.stdout\.rules\.clustertrustbundles\.certificates\.k8s\.io",
        real="lists `clustertrustbundles.certificates.k8s.io [get list watch]`: its bootstrap "
        "policy grants it to every ServiceAccount (system:cluster-trust-bundle-discovery)",
        dev="does not list it: it serves no ClusterTrustBundles and has no such role",
        reason="The product never reads ClusterTrustBundles, and deploy/ grants nothing on "
        "them. tests/deploy/test_rbac.py pins the exact `can-i --list` of the operator's "
        "token on devcluster; run against a real cluster it must allow this row, and "
        "devcluster can then add the role.",
    ),
)


def allowance(difference: Difference) -> Allowed | None:
    """The entry that allows ``difference``, if any."""
    return next((entry for entry in ALLOWED if entry.matches(difference)), None)


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def render_table() -> str:
    """The Markdown table of ALLOWED, as docs/devcluster.md carries it between the markers."""
    lines = [
        BEGIN,
        "",
        "| operations | path in the answer | real kube-apiserver | devcluster "
        "| why it does not matter |",
        "| --- | --- | --- | --- | --- |",
    ]
    for entry in ALLOWED:
        cells = [f"`{entry.ops}`", f"`{entry.path}`", entry.real, entry.dev, entry.reason]
        lines.append("| " + " | ".join(_cell(cell) for cell in cells) + " |")
    lines += ["", END]
    return "\n".join(lines)


def documented_table(text: str) -> str:
    """The generated section of docs/devcluster.md (empty when the markers are missing)."""
    start, end = text.find(BEGIN), text.find(END)
    if start < 0 or end < 0:
        return ""
    return text[start : end + len(END)]


def write_doc() -> None:
    """Replace the generated section of docs/devcluster.md with the current table."""
    text = DOC.read_text()
    start, end = text.index(BEGIN), text.index(END) + len(END)
    DOC.write_text(text[:start] + render_table() + text[end:])


if __name__ == "__main__":
    import sys

    if sys.argv[1:] == ["--write"]:
        write_doc()
    else:
        print(render_table())
