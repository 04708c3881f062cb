"""The operator imports what its workers send notifications with before it forks them, and
nothing heavy that it does not need.

Found by the chaos soak (docs/reliability.md): each django-q2 worker imported Apprise and matplotlib
on its first message, a private copy per worker, and the two replicas of the ``ha`` overlay went
from at most 363 MB to 717 MB (PSS), over the 600 MB of docs/operations.md#memory. Imported in the
parent, the pages are shared by every forked worker. Without a channel nothing is ever sent, so
neither is imported; SciPy (``compare`` only) is imported on the first comparison.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from testkit.paths import REPO_ROOT

CHANNELS = "channels:\n  - name: ops\n    url: json://127.0.0.1:9/hook\n    default: true\n"


def _run(code: str, **env: str) -> None:
    environment = {
        "DJANGO_SETTINGS_MODULE": "sentinel_site.settings",
        "SENTINEL_DEBUG": "true",
        "PATH": "/usr/bin:/bin",
        **env,
    }
    done = subprocess.run(
        [sys.executable, "-c", code],
        cwd=REPO_ROOT,
        env=environment,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr[-2000:]


def _channels(tmp_path: Path) -> str:
    path = tmp_path / "notify.yaml"
    path.write_text(CHANNELS)
    return str(path)


def test_preload_imports_apprise_and_matplotlib_in_the_parent(tmp_path: Path) -> None:
    code = (
        "import django, sys; django.setup()\n"
        "assert 'matplotlib' not in sys.modules\n"
        "from sentinel_operator.runtime import preload_worker_modules\n"
        "preload_worker_modules()\n"
        "assert 'apprise' in sys.modules and 'matplotlib.font_manager' in sys.modules\n"
    )
    _run(code, SENTINEL_NOTIFY_CONFIG=_channels(tmp_path))


def test_run_preloads_before_it_forks_the_workers() -> None:
    import inspect

    from sentinel_operator import runtime

    source = inspect.getsource(runtime.OperatorRuntime.run)
    assert source.index("preload_worker_modules()") < source.index("self._start_cluster()")


def test_runoperator_shares_apprise_s_plugins_and_freezes_the_collector_before_forking(
    tmp_path: Path,
) -> None:
    # Measured with bench/soak_memory.py: each worker's private memory after 100 messages,
    # 100 MB without these, 11 MB with them and the chart drawn in a child (docs/reliability.md).
    code = (
        "import django, gc; django.setup()\n"
        "import sys\n"
        "assert gc.get_freeze_count() == 0\n"
        "from sentinel_operator.management.commands.runoperator import share_with_workers\n"
        "share_with_workers()\n"
        "assert sum(m.startswith('apprise.plugins.') for m in sys.modules) > 100\n"
        "assert 'apprise.attachment.memory' in sys.modules\n"
        "assert gc.get_freeze_count() > 10000, gc.get_freeze_count()\n"
    )
    _run(code, SENTINEL_NOTIFY_CONFIG=_channels(tmp_path))


def test_without_channels_or_comparisons_the_operator_imports_neither_matplotlib_nor_scipy() -> (
    None
):
    # docs/operations.md "Memory": about 35 MB (matplotlib, Apprise's plugins) and 45 MB
    # (scipy.stats) of private memory per replica that an operator without them never needs.
    code = (
        "import django, gc, sys; django.setup()\n"
        "import sentinel_operator.tasks, sentinel_operator.reconcile\n"
        "from sentinel_operator.management.commands.runoperator import share_with_workers\n"
        "share_with_workers()\n"
        "assert gc.get_freeze_count() > 1000, gc.get_freeze_count()\n"
        "heavy = [m for m in ('matplotlib', 'scipy', 'apprise.plugins.custom_json')"
        " if m in sys.modules]\n"
        "assert not heavy, heavy\n"
        # Only judging a comparison imports it (tests/core/test_compare.py judges with it).
        "import sentinel_core.metric_kinds.compare\n"
        "assert 'scipy' not in sys.modules\n"
    )
    _run(code)
