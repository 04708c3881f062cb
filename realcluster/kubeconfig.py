"""Kubeconfig files for the real control plane.

``realcluster.__main__`` writes one for kube-controller-manager before starting it and the
admin one (``--kubeconfig``) once ``/readyz`` answers ``ok``. Written atomically with
owner-only permissions, so a poller never reads half a file.
"""

from __future__ import annotations

import base64
import os
from pathlib import Path

import yaml

NAME = "realcluster"


def render(server_url: str, ca_pem: bytes, token: str, user: str = "admin") -> str:
    """Return a kubeconfig YAML whose only context talks to ``server_url`` with ``token``."""
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {
                "name": NAME,
                "cluster": {
                    "server": server_url,
                    "certificate-authority-data": base64.b64encode(ca_pem).decode(),
                },
            }
        ],
        "users": [{"name": user, "user": {"token": token}}],
        "contexts": [
            {"name": NAME, "context": {"cluster": NAME, "user": user, "namespace": "default"}}
        ],
        "current-context": NAME,
        "preferences": {},
    }
    return yaml.safe_dump(config, sort_keys=False)


def write(path: Path, server_url: str, ca_pem: bytes, token: str, user: str = "admin") -> None:
    """Write the kubeconfig to ``path`` atomically (rename over it), mode 0600."""
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(descriptor, "w") as handle:
        handle.write(render(server_url, ca_pem, token, user))
    os.replace(temporary, path)
