"""Write the admin kubeconfig devcluster hands to kubectl and clients.

Called by __main__.py once the server listens; written atomically so a poller never
reads half a file.
"""

from __future__ import annotations

import base64
import os
from pathlib import Path

import yaml

NAME = "devcluster"


def render(server_url: str, ca_pem: bytes, token: str) -> str:
    """Return the kubeconfig YAML for the admin user."""
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
        "users": [{"name": "admin", "user": {"token": token}}],
        "contexts": [
            {
                "name": NAME,
                "context": {"cluster": NAME, "user": "admin", "namespace": "default"},
            }
        ],
        "current-context": NAME,
        "preferences": {},
    }
    return yaml.safe_dump(config, sort_keys=False)


def write(path: Path, server_url: str, ca_pem: bytes, token: str) -> None:
    """Write the kubeconfig to ``path`` atomically with owner-only permissions."""
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(path.name + ".tmp")
    descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(descriptor, "w") as handle:
        handle.write(render(server_url, ca_pem, token))
    os.replace(temporary, path)
