"""The launcher's own HTTPS client for the API server (stdlib only, a bearer token, our CA).

``realcluster.__main__`` polls readiness with it and ``realcluster.nodes`` creates and patches
the simulated Nodes. Errors are answers, not exceptions: a probe that cannot connect yet gets
status 0 and polls again.
"""

from __future__ import annotations

import json
import ssl
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any


class ApiClient:
    """GET, POST and PATCH against one API server as one bearer token."""

    def __init__(self, url: str, token: str, ca_file: Path) -> None:
        self.url = url
        self.token = token
        self.context = ssl.create_default_context(cafile=str(ca_file))

    def request(
        self,
        method: str,
        path: str,
        body: object = None,
        content_type: str = "application/json",
    ) -> tuple[int, str]:
        """Return (HTTP status, body); status 0 when nothing answers."""
        headers = {"Authorization": f"Bearer {self.token}", "Accept": "application/json"}
        data = None
        if body is not None:
            data = json.dumps(body).encode()
            headers["Content-Type"] = content_type
        request = urllib.request.Request(self.url + path, data=data, headers=headers, method=method)
        try:
            with urllib.request.urlopen(request, context=self.context, timeout=5) as response:
                return int(response.status), response.read().decode(errors="replace")
        except urllib.error.HTTPError as exc:
            return int(exc.code), exc.read().decode(errors="replace")
        except (OSError, ssl.SSLError):
            return 0, ""

    def status(self, path: str) -> int:
        """The HTTP status of GET ``path`` (0 when nothing answers)."""
        return self.request("GET", path)[0]

    def text(self, path: str) -> str:
        """The body of GET ``path`` when it answers 200, else an empty string."""
        code, body = self.request("GET", path)
        return body if code == 200 else ""

    def get_json(self, path: str) -> dict[str, Any] | None:
        """The decoded body of GET ``path`` when it answers 200, else None."""
        text = self.text(path)
        if not text:
            return None
        decoded = json.loads(text)
        return decoded if isinstance(decoded, dict) else None
