"""The multiprocess ``/metrics`` collector and a worker's file still being created.

A django-q2 worker forked a moment ago has created its sample file but not yet sized it; the
stock ``MultiProcessCollector`` failed the whole scrape on that empty file (``struct.error``),
and the operator's ``/metrics`` closed the connection without an answer.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from prometheus_client import generate_latest
from prometheus_client.mmap_dict import MmapedDict, mmap_key

from sentinel_operator.metrics import MULTIPROC_ENV, scrape_registry


@pytest.mark.django_db
def test_a_file_still_being_created_does_not_fail_the_scrape(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    written = MmapedDict(str(tmp_path / "gauge_all_101.db"))
    written.write_value(mmap_key("sentinel_probe", "sentinel_probe", [], [], "probe"), 7.0, 0.0)
    written.close()
    # The next worker's file, created and not yet sized.
    (tmp_path / "gauge_all_102.db").touch()
    monkeypatch.setenv(MULTIPROC_ENV, str(tmp_path))

    text = generate_latest(scrape_registry()).decode()

    assert 'sentinel_probe{pid="101"} 7.0' in text
