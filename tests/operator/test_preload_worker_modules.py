"""The operator imports what its workers send notifications with before it forks them.

Found by the chaos soak (docs/reliability.md): each django-q2 worker imported Apprise and
matplotlib on its first message, a private copy per worker, and the two replicas of the ``ha``
overlay went from at most 363 MB to 717 MB (PSS), over SPEC §13's 600 MB. Imported in the parent,
the pages are shared by every forked worker.
"""

from __future__ import annotations

import subprocess
import sys

from testkit.paths import REPO_ROOT


def test_preload_imports_apprise_and_matplotlib_in_the_parent() -> None:
    code = (
        "import django, sys; django.setup()\n"
        "assert 'matplotlib' not in sys.modules\n"
        "from sentinel_operator.runtime import preload_worker_modules\n"
        "preload_worker_modules()\n"
        "assert 'apprise' in sys.modules and 'matplotlib.font_manager' in sys.modules\n"
    )
    env = {
        "DJANGO_SETTINGS_MODULE": "sentinel_site.settings",
        "SENTINEL_DEBUG": "true",
        "PATH": "/usr/bin:/bin",
    }
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO_ROOT, env=env, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr[-2000:]


def test_run_preloads_before_it_forks_the_workers() -> None:
    import inspect

    from sentinel_operator import runtime

    source = inspect.getsource(runtime.OperatorRuntime.run)
    assert source.index("preload_worker_modules()") < source.index("self._start_cluster()")


def test_runoperator_shares_apprise_s_plugins_and_freezes_the_collector_before_forking() -> None:
    # Measured with bench/soak_memory.py: each worker's private memory after 100 messages,
    # 100 MB without these, 11 MB with them and the chart drawn in a child (docs/reliability.md).
    code = (
        "import django, gc; django.setup()\n"
        "import sys\n"
        "assert 'apprise.plugins.custom_json' not in sys.modules and gc.get_freeze_count() == 0\n"
        "from sentinel_operator.management.commands.runoperator import share_with_workers\n"
        "share_with_workers()\n"
        "assert 'apprise.plugins.custom_json' in sys.modules, 'plugins not loaded'\n"
        "assert 'apprise.attachment.memory' in sys.modules\n"
        "assert gc.get_freeze_count() > 10000, gc.get_freeze_count()\n"
    )
    env = {
        "DJANGO_SETTINGS_MODULE": "sentinel_site.settings",
        "SENTINEL_DEBUG": "true",
        "PATH": "/usr/bin:/bin",
    }
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO_ROOT, env=env, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr[-2000:]
