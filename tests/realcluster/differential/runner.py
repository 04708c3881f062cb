"""Run the differential script against one server and record its normalized answers.

An operation is a named function of a ``Session``; it does one thing with kubectl or the
official ``kubernetes`` client and returns what the server answered (exit code and output,
or HTTP status and body). Operations run in script order, because later ones build on the
objects earlier ones made; a value a later operation needs (a resourceVersion, a token) is
kept in ``Session.memo``, while the returned answer is normalized before it is recorded.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
import traceback
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import kubernetes.client
from kubernetes.client.exceptions import ApiException

from tests.realcluster.differential.normalize import Normalizer, parse_table, sort_bullets

JSON = "application/json"
MERGE = "application/merge-patch+json"
JSON_PATCH = "application/json-patch+json"
STRATEGIC = "application/strategic-merge-patch+json"
TABLE = "application/json;as=Table;v=v1;g=meta.k8s.io, application/json"
# A klog line: severity, date and time ("I1201 22:20:14.906641 ...").
KLOG = re.compile(r"^[IWEF]\d{4} \d\d:\d\d:\d\d")


class Cluster(Protocol):
    """What DevCluster and RealCluster both offer."""

    kubeconfig: Path
    workdir: Path

    def api_client(self, token: str | None = None) -> kubernetes.client.ApiClient: ...

    def kubectl(
        self,
        *args: str,
        input: str | None = None,
        check: bool = True,
        token: str | None = None,
        timeout: float = 60,
    ) -> Any: ...


@dataclass(frozen=True)
class Op:
    """One compared operation of the script."""

    name: str
    run: Callable[[Session], Any]


class Script:
    """An ordered list of operations; ``@script.op("name")`` appends one."""

    def __init__(self) -> None:
        self.ops: list[Op] = []

    def op(self, name: str) -> Callable[[Callable[[Session], Any]], Callable[[Session], Any]]:
        def register(function: Callable[[Session], Any]) -> Callable[[Session], Any]:
            if any(existing.name == name for existing in self.ops):
                raise ValueError(f"duplicate operation name {name!r}")
            self.ops.append(Op(name, function))
            return function

        return register


@dataclass
class Session:
    """One server under test, the clients for it, and what the script has left for itself."""

    cluster: Cluster
    label: str
    memo: dict[str, Any] = field(default_factory=dict)
    normalizer: Normalizer = field(default_factory=Normalizer)
    _clients: dict[str | None, kubernetes.client.ApiClient] = field(default_factory=dict)

    def client(self, token: str | None = None) -> kubernetes.client.ApiClient:
        """The official client as admin, or as the bearer ``token``."""
        if token not in self._clients:
            self._clients[token] = self.cluster.api_client(token=token)
        return self._clients[token]

    def close(self) -> None:
        for client in self._clients.values():
            client.close()

    # -- kubectl ---------------------------------------------------------------------------

    def kubectl(
        self, *args: str, input: str | None = None, token: str | None = None, out: str = "text"
    ) -> dict[str, Any]:
        """Run kubectl; ``out`` says how to read stdout: text lines, ``json`` or ``table``."""
        done = self.cluster.kubectl(*args, input=input, token=token, check=False)
        stdout: Any = done.stdout
        if out == "json" and stdout.strip():
            stdout = self.normalizer.json(json.loads(stdout))
        elif out == "table":
            stdout = parse_table(self.normalizer.text(stdout))
        else:
            stdout = sort_bullets(self.normalizer.text(stdout).splitlines())
        return {
            "exit": done.returncode,
            "stdout": stdout,
            "stderr": sort_bullets(self.normalizer.text(done.stderr).splitlines()),
        }

    def kubectl_watch(self, *args: str, during: Callable[[], Any], seconds: int = 4) -> Any:
        """Run ``kubectl get -w`` on ``args``; once its watch request is answered, call
        ``during`` (the writes to watch); return what it printed before ``seconds`` ran out.

        kubectl GETs the object, prints it, then watches from resourceVersion 0 ("now"), so
        writes sent before the server answered the watch would be missed: its ``-v=6`` log
        line for that answer is the signal to write.
        """
        binary = Path(sys.executable).parent / "kubectl"
        command = [
            str(binary if binary.exists() else shutil.which("kubectl")),
            f"--cache-dir={self.cluster.workdir / 'kube-cache'}",
            "get", *args, "--watch", "--output-watch-events", "-o", "json",
            f"--request-timeout={seconds}s", "-v=6",
        ]  # fmt: skip
        env = dict(os.environ, KUBECONFIG=str(self.cluster.kubeconfig))
        with subprocess.Popen(
            command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env
        ) as watcher:
            assert watcher.stdout is not None and watcher.stderr is not None
            log: list[str] = []
            for line in watcher.stderr:
                log.append(line)
                if "watch=true" in line and "Response" in line:
                    break
            during()
            out, errors = watcher.communicate(timeout=seconds + 30)
        decoder, text, events = json.JSONDecoder(), out.strip(), []
        while text:
            event, end = decoder.raw_decode(text)
            events.append(self.normalizer.json(event))
            text = text[end:].strip()
        # The -v=6 log differs run to run; whatever kubectl says beyond it is compared.
        said = [line for line in (*log, *errors.splitlines()) if not KLOG.match(line)]
        return {"exit": watcher.returncode, "events": events, "stderr": said}

    def kubectl_raw(self, *args: str, input: str | None = None) -> str:
        """Run kubectl for a value the script needs later (not compared); it must succeed."""
        return str(self.cluster.kubectl(*args, input=input).stdout)

    # -- the official Python client --------------------------------------------------------

    def call(self, method: Callable[..., Any], *args: Any, **kwargs: Any) -> dict[str, Any]:
        """Call a typed API method (``CoreV1Api(...).read_namespace``) for its raw answer."""
        try:
            response = method(*args, _preload_content=False, **kwargs)
        except ApiException as error:
            return self._answer(error.status, error.body)
        return self._answer(response.status, response.data)

    def api(self, cls: type[Any], token: str | None = None) -> Any:
        """An API class (``kubernetes.client.CoreV1Api``) bound to this server."""
        return cls(self.client(token))

    def raw(
        self,
        method: str,
        path: str,
        *,
        body: Any = None,
        query: Mapping[str, Any] | Sequence[tuple[str, Any]] = (),
        content_type: str = JSON,
        accept: str = JSON,
        token: str | None = None,
        keep: bool = False,
    ) -> dict[str, Any]:
        """Send one request the way sentinel_cluster.kube does (param_serialize + call_api).

        ``keep`` also stores the raw decoded body in ``memo["last"]`` for the script's use.
        """
        client = self.client(token)
        headers = {"Accept": accept}
        if body is not None:
            headers["Content-Type"] = content_type
        params = list(query.items()) if isinstance(query, Mapping) else list(query)
        prepared = client.param_serialize(
            method=method,
            resource_path=path,
            query_params=params,
            header_params=headers,
            body=body,
            auth_settings=["BearerToken"],
        )
        response = client.call_api(*prepared, _request_timeout=30)
        data = response.read()
        if keep:
            self.memo["last"] = _decode(data)
        return self._answer(response.status, data)

    def watch_events(self, path: str, resource_version: str, **extra: str) -> list[Any]:
        """Replay a watch from ``resource_version`` for one second; return the events."""
        query = {
            "watch": "true",
            "resourceVersion": resource_version,
            "timeoutSeconds": "1",
            **extra,
        }
        answer = self.raw("GET", path, query=query)
        lines = answer["body"] if isinstance(answer["body"], list) else [answer["body"]]
        return [{"status": answer["status"], "event": line} for line in lines]

    def _answer(self, status: int, data: bytes | str | None) -> dict[str, Any]:
        return {"status": status, "body": self.normalizer.json(_decode(data))}


def _decode(data: bytes | str | None) -> Any:
    if not data:
        return None
    text = data.decode() if isinstance(data, bytes) else data
    try:
        return json.loads(text)
    except ValueError:
        # A watch answers with one JSON document per line.
        try:
            return [json.loads(line) for line in text.splitlines() if line.strip()]
        except ValueError:
            return text


@dataclass
class Run:
    """The normalized answers of one server, in script order, and how long each took."""

    label: str
    answers: dict[str, Any] = field(default_factory=dict)
    seconds: dict[str, float] = field(default_factory=dict)


def run_script(session: Session, ops: Iterable[Op]) -> Run:
    """Run every operation against one server; an exception is recorded as its answer."""
    run = Run(session.label)
    try:
        for op in ops:
            started = time.monotonic()
            try:
                run.answers[op.name] = op.run(session)
            except Exception as error:  # recorded and compared: one server may raise alone
                frame = traceback.extract_tb(error.__traceback__)[-1]
                run.answers[op.name] = {
                    "exception": f"{type(error).__name__} at {frame.name}:{frame.lineno}"
                }
            run.seconds[op.name] = time.monotonic() - started
    finally:
        session.close()
    return run
