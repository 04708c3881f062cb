"""The repository explains itself: no reference to a document outside it, no broken doc link.

The product (its packages and templates, the CRD, ``deploy/``, ``docs/``, the README) and the
OpenAPI schema the REST API serves must never cite "SPEC" (the team's working contract, which
is not in the repository) or one of its sections ("§3.1"): a reader could not follow the
reference. Every ``docs/<file>.md#<anchor>`` they cite, and every link between the docs, must
name a file that exists and, with an anchor, one of its headings (GitHub's anchors).
"""

from __future__ import annotations

import functools
import re
import unicodedata
from collections.abc import Iterator
from pathlib import Path

import pytest
from drf_spectacular.generators import SchemaGenerator

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"

# The product's own places; tests, benchmarks, the demo and the clusters are development tools.
PLACES = [
    "sentinel_core",
    "sentinel_cluster",
    "sentinel_operator",
    "analyses",
    "notifications",
    "sentinel_site",
    "crds",
    "deploy",
    "docs",
    "README.md",
]
_TEXT_SUFFIXES = {".py", ".html", ".txt", ".md", ".yaml", ".yml", ".json", ".js", ".css", ""}
_SKIPPED_DIRS = {"__pycache__"}

# The contract by name (upper case only: Kubernetes' ``spec`` is everywhere), or a section sign
# followed by a number, which is how its sections were cited.
FOREIGN = re.compile(r"\bSPEC\b|§\s*\d")
# docs/<file>.md, optionally with an anchor, wherever it is written (code, YAML, Markdown).
DOC_REFERENCE = re.compile(r"(?<![\w/.-])docs/([\w.-]+\.md)(?:#([\w-]+))?")
# A relative Markdown link to a page, optionally with an anchor, or an anchor on the same page.
MARKDOWN_LINK = re.compile(r"\]\((?!https?:|mailto:)([\w./-]*?\.md)?(?:#([\w-]+))?\)")
_FENCE = re.compile(r"^\s*(```|~~~)")
_HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")


def _files(place: str) -> Iterator[Path]:
    path = ROOT / place
    if path.is_file():
        yield path
        return
    for file in sorted(path.rglob("*")):
        relative = file.relative_to(path)
        if (
            file.is_file()
            and file.suffix in _TEXT_SUFFIXES
            and not (_SKIPPED_DIRS & set(relative.parts[:-1]))
        ):
            yield file


def _product_files() -> list[Path]:
    return [file for place in PLACES for file in _files(place)]


def _lines(file: Path) -> list[str]:
    return file.read_text(encoding="utf-8", errors="replace").splitlines()


def github_anchor(heading: str) -> str:
    """Return the anchor GitHub gives a Markdown heading (before de-duplication)."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link counts by its text
    text = text.replace("`", "").replace("*", "").strip().lower()
    kept = "".join(
        char for char in text if char in " -_" or unicodedata.category(char)[0] in {"L", "M", "N"}
    )
    return kept.replace(" ", "-")


def anchors(markdown: Path) -> set[str]:
    """Return every heading anchor of a Markdown file, duplicates numbered as GitHub does."""
    found: set[str] = set()
    seen: dict[str, int] = {}
    in_code = False
    for line in _lines(markdown):
        if _FENCE.match(line):
            in_code = not in_code
            continue
        match = None if in_code else _HEADING.match(line)
        if match is None:
            continue
        anchor = github_anchor(match.group(2))
        count = seen.get(anchor, 0)
        seen[anchor] = count + 1
        found.add(anchor if count == 0 else f"{anchor}-{count}")
    return found


@functools.cache
def _anchors_of(markdown: Path) -> frozenset[str]:
    return frozenset(anchors(markdown))


def _shown(path: Path) -> str:
    return str(path.relative_to(ROOT)) if ROOT in path.parents else str(path)


def _references(file: Path) -> Iterator[tuple[int, Path, str | None]]:
    for number, line in enumerate(_lines(file), start=1):
        for match in DOC_REFERENCE.finditer(line):
            yield number, DOCS / match.group(1), match.group(2)
        if file.suffix == ".md":
            for match in MARKDOWN_LINK.finditer(line):
                target = (file.parent / match.group(1)).resolve() if match.group(1) else file
                yield number, target, match.group(2)


def _rendered_schema_text() -> str:
    # The document the REST API serves at /api/v1/schema/, rendered in-process.
    schema = SchemaGenerator().get_schema(request=None, public=True)
    return repr(schema)


def test_anchor_rule_matches_github() -> None:
    assert github_anchor("Channels: `SENTINEL_NOTIFY_CONFIG`") == "channels-sentinel_notify_config"
    assert github_anchor("`Ready`: is the analysis able to do its job?") == (
        "ready-is-the-analysis-able-to-do-its-job"
    )
    assert github_anchor("Rollouts (`status.rollout`)") == "rollouts-statusrollout"
    assert github_anchor("Interval, failure limit and dry run") == (
        "interval-failure-limit-and-dry-run"
    )
    assert github_anchor("Calibration (`bench/compare_calibration.py`)") == (
        "calibration-benchcompare_calibrationpy"
    )


def test_the_rules_see_what_they_are_for() -> None:
    # The patterns catch the contract's citations and nothing of Kubernetes' own vocabulary.
    assert FOREIGN.search("As in the custom resource (SPEC §3)")
    assert FOREIGN.search("judges the new pods against the old ones (SPEC 3.2)")
    assert FOREIGN.search("the targets of §13")
    for innocent in ("spec.target", "the Spec of a Deployment", "INVALID_SPEC", "SPEC_CASES"):
        assert not FOREIGN.search(innocent), innocent
    assert [m.groups() for m in DOC_REFERENCE.finditer("see docs/status.md#conditions.")] == [
        ("status.md", "conditions")
    ]
    assert [m.groups() for m in MARKDOWN_LINK.finditer("[a](status.md#fields) [b](#verdict)")] == [
        ("status.md", "fields"),
        (None, "verdict"),
    ]


# One case per file, named by its path, so that a failure says where and ``-k`` can pick a part.
_PRODUCT = [pytest.param(file, id=str(file.relative_to(ROOT))) for file in _product_files()]


@pytest.mark.parametrize("file", _PRODUCT)
def test_no_reference_to_a_document_outside_the_repository(file: Path) -> None:
    found = [
        f"{file.relative_to(ROOT)}:{number}: {line.strip()}"
        for number, line in enumerate(_lines(file), start=1)
        if FOREIGN.search(line)
    ]
    assert not found, "cite docs/*.md instead:\n" + "\n".join(found)


@pytest.mark.parametrize("file", _PRODUCT)
def test_every_doc_reference_resolves(file: Path) -> None:
    broken = []
    for number, target, anchor in _references(file):
        where = f"{file.relative_to(ROOT)}:{number}"
        if not target.is_file():
            broken.append(f"{where}: no file {_shown(target)}")
        elif anchor is not None and anchor not in _anchors_of(target):
            broken.append(f"{where}: no heading #{anchor} in {_shown(target)}")
    assert not broken, "\n".join(broken)


def test_the_places_are_scanned() -> None:
    # A renamed package or an empty walk would make the two tests above pass vacuously.
    files = _product_files()
    assert {file.relative_to(ROOT).parts[0] for file in files} == set(PLACES)
    assert ROOT / "analyses/api/serializers.py" in files
    assert ROOT / "crds/rolloutanalysis.yaml" in files
    assert any(file.suffix == ".html" for file in files)


def test_the_openapi_schema_cites_only_the_repository() -> None:
    text = _rendered_schema_text()
    # The help texts are there (so the scan is not vacuous) and point at the docs.
    assert "docs/resource.md" in text
    assert not FOREIGN.search(text), FOREIGN.findall(text)
    missing = [
        match.group(0)
        for match in DOC_REFERENCE.finditer(text)
        if not (DOCS / match.group(1)).is_file()
        or (match.group(2) is not None and match.group(2) not in _anchors_of(DOCS / match.group(1)))
    ]
    assert not missing, missing
