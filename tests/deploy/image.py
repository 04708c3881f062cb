"""The built image, run as ``deploy/`` runs it, for tests/deploy/test_image*.py.

``built_image`` builds the image once per run with ``containers/build.sh`` (what ``make image``
runs; layer-cached, so an unchanged tree rebuilds in seconds) and returns the image's ID: the
first pytest-xdist worker to need it builds it, the others wait for that build and use its ID.
``Pod`` turns a Deployment's Pod template from the rendered ``deploy/`` manifests into ``podman
run`` arguments:
its user and group, read-only root filesystem, dropped capabilities, no privilege escalation,
its volume mounts (``emptyDir`` and claims as fresh podman volumes, Secrets as host
directories), its environment (the ConfigMap, the Secret's values the test gives, the
downward API) and its container's args. What a kubelet does that podman cannot is said where
it matters.
"""

from __future__ import annotations

import base64
import fcntl
import functools
import json
import os
import shutil
import subprocess
import uuid
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml

from sentinel_cluster import kube
from testkit.clusters import Cluster, create_token, kube_client, kubectl_apply
from testkit.manifests import analysis_manifest, deployment_manifest
from testkit.metrics_app import GaugeSetter
from testkit.paths import REPO_ROOT
from testkit.processes import check_may_start
from testkit.waiting import wait_until

# The operator's own Secret (deploy/base/operator.yaml), as the administrator creates it: the
# task-signing key the web Pod never holds (docs/security.md).
OPERATOR_SECRET = "rollout-sentinel-operator"
OPERATOR_SECRET_ENV = {"SENTINEL_TASK_KEY": f"image-tests-task-key-{uuid.uuid4().hex}"}

PODMAN = REPO_ROOT / "containers" / "podman.sh"
BUILD = REPO_ROOT / "containers" / "build.sh"
# A cold build (base from Debian, dependencies from PyPI) takes minutes on two cores.
BUILD_TIMEOUT = 1800


def podman(
    *args: str, check: bool = True, timeout: float = 120, input: str | None = None
) -> subprocess.CompletedProcess[str]:
    """Run the project's podman (containers/podman.sh) and return what it printed.

    Starting a container, as building does, is starting a server: only a test in the
    ``server`` tier may (docs/testkit.md#tiers), so a missing marker fails here instead of
    slowing ``make check`` down.
    """
    if args and args[0] in ("run", "build", "start"):
        check_may_start([str(PODMAN), *args], f"a container (podman {args[0]})")
    result = subprocess.run(
        [str(PODMAN), *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        input=input,
        check=False,
    )
    if check and result.returncode != 0:
        raise AssertionError(f"podman {' '.join(args)}: exit {result.returncode}\n{result.stderr}")
    return result


def built_image(tmp_path_factory: pytest.TempPathFactory) -> str:
    """Build the image from the tree (once per run) and return its ID.

    The ID, not the tag: the tag names whatever the last build in the shared image store made,
    which may be another work tree's while this session runs.
    """
    check_may_start([str(BUILD)], "an image build")
    base = tmp_path_factory.getbasetemp()
    # Under pytest-xdist each worker's base directory (``.../pytest-N/popen-gwK``) sits in the
    # run's own directory; without xdist the base directory is the run's.
    run = base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base
    return _build(run)


@functools.cache
def _build(run: Path) -> str:
    """Build once per run directory: concurrent builds of one tree by several workers cost a
    minute of CPU each on the 2-core machine (docs/testkit.md#parallel-runs)."""
    missing = [tool for tool in ("podman", "mmdebstrap") if shutil.which(tool) is None]
    assert not missing, f"{' and '.join(missing)} missing: `make image` installs them"
    iidfile = run / "image.iid"
    with open(run / "image.lock", "w") as lock:
        # Held while building; a worker that failed to build leaves no ID, so the next one
        # tries again and reports its own failure.
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not iidfile.exists():
            result = subprocess.run(
                [str(BUILD)],
                capture_output=True,
                text=True,
                timeout=BUILD_TIMEOUT,
                check=False,
                env={**os.environ, "IIDFILE": str(iidfile)},
            )
            assert result.returncode == 0, (
                f"containers/build.sh failed:\n{result.stdout}\n{result.stderr}"
            )
        return iidfile.read_text().strip()


@contextmanager
def fresh_volume() -> Iterator[str]:
    """Yield a new empty podman volume, removed afterwards (a new claim's stand-in)."""
    name = f"claim-{uuid.uuid4().hex[:8]}"
    podman("volume", "create", name)
    try:
        yield name
    finally:
        podman("volume", "rm", "--force", name, check=False)


def deployment(objects: Sequence[Mapping[str, Any]], name: str) -> dict[str, Any]:
    """Return the rendered Deployment ``name``."""
    (found,) = [o for o in objects if o["kind"] == "Deployment" and o["metadata"]["name"] == name]
    return dict(found)


def config_map(objects: Sequence[Mapping[str, Any]]) -> dict[str, str]:
    """Return the data of the rendered ConfigMap every container reads with ``envFrom``."""
    (found,) = [o for o in objects if o["kind"] == "ConfigMap"]
    return dict(found["data"])


SERVICE_ACCOUNT_DIR = "/var/run/secrets/kubernetes.io/serviceaccount"


@dataclass(frozen=True)
class ServiceAccount:
    """A Pod's ServiceAccount credentials as the kubelet projects them."""

    directory: Path
    host: str
    port: int

    @classmethod
    def write(
        cls, directory: Path, *, token: str, ca: bytes, namespace: str, server: str
    ) -> ServiceAccount:
        """Write the token, CA and namespace files for ``server`` (``https://host:port``)."""
        directory.mkdir(parents=True)
        (directory / "token").write_text(token)
        (directory / "ca.crt").write_bytes(ca)
        (directory / "namespace").write_text(namespace)
        # The kubelet makes them readable by the Pod's fsGroup; the container's user here.
        for path in (directory, *directory.iterdir()):
            path.chmod(0o755 if path.is_dir() else 0o644)
        host, _, port = server.removeprefix("https://").rpartition(":")
        return cls(directory, host, int(port))


def service_account(cluster: Cluster, name: str, namespace: str, directory: Path) -> ServiceAccount:
    """What the kubelet gives a Pod running as ``namespace/name`` on ``cluster``: a token from a
    real TokenRequest, the cluster's CA and the API server's address."""
    kubeconfig = yaml.safe_load(cluster.kubeconfig.read_text())
    server = kubeconfig["clusters"][0]["cluster"]
    return ServiceAccount.write(
        directory,
        token=create_token(cluster, name, namespace),
        ca=base64.b64decode(server["certificate-authority-data"]),
        namespace=namespace,
        server=server["server"],
    )


@dataclass
class Pod:
    """One Pod of a rendered Deployment, as podman runs its containers.

    ``volumes`` maps a claim name to the podman volume standing for it (shared between Pods,
    as a ReadWriteOnce claim on one node is); an ``emptyDir`` gets a fresh volume per Pod.
    ``secrets`` maps a Secret's name to a host directory holding its files. ``service_account``
    is what the kubelet gives a Pod of its ServiceAccount: a host directory with ``token``,
    ``ca.crt`` and ``namespace`` (mounted where the in-cluster configuration reads them) and the
    API server's address as ``KUBERNETES_SERVICE_HOST``/``PORT``. ``env_overrides`` is applied
    last (host-network Pods must not take ports another process on the machine holds).
    """

    template: Mapping[str, Any]
    config: Mapping[str, str]
    secret_env: Mapping[str, str] = field(default_factory=dict)
    claims: Mapping[str, str] = field(default_factory=dict)
    secrets: Mapping[str, Path] = field(default_factory=dict)
    name: str = field(default_factory=lambda: f"pod-{uuid.uuid4().hex[:8]}")
    namespace: str = "rollout-sentinel"
    service_account: ServiceAccount | None = None
    env_overrides: Mapping[str, str] = field(default_factory=dict)
    _volumes: list[str] = field(default_factory=list)

    @classmethod
    def of(cls, deployment: Mapping[str, Any], config: Mapping[str, str], **kw: Any) -> Pod:
        return cls(template=deployment["spec"]["template"], config=config, **kw)

    def container(self, name: str) -> dict[str, Any]:
        spec = self.template["spec"]
        (found,) = [
            c for c in [*spec.get("initContainers", []), *spec["containers"]] if c["name"] == name
        ]
        return dict(found)

    def run_args(self, name: str, *, network: Sequence[str] = ()) -> list[str]:
        """Return ``podman run`` arguments running container ``name`` as the Pod does."""
        spec = self.template["spec"]
        container = self.container(name)
        security = {**spec.get("securityContext", {}), **container.get("securityContext", {})}
        args = ["--name", f"{self.name}-{name}", *network]
        assert security["runAsNonRoot"] is True
        args += ["--user", f"{security['runAsUser']}:{security['runAsGroup']}"]
        if security.get("readOnlyRootFilesystem"):
            # Only the Pod's volumes are writable: no tmpfs of podman's own on /tmp, /run.
            args += ["--read-only", "--read-only-tmpfs=false"]
        for cap in security.get("capabilities", {}).get("drop", []):
            args += ["--cap-drop", cap.lower()]
        if security.get("allowPrivilegeEscalation") is False:
            args += ["--security-opt", "no-new-privileges"]
        # RuntimeDefault is the runtime's default profile, which podman applies unasked.
        assert security["seccompProfile"] == {"type": "RuntimeDefault"}
        volumes = {v["name"]: v for v in spec.get("volumes", [])}
        for mount in container.get("volumeMounts", []):
            args += ["--volume", self._volume(volumes[mount["name"]], mount)]
        if self.service_account is not None:
            account = self.service_account
            args += ["--volume", f"{account.directory}:{SERVICE_ACCOUNT_DIR}:ro"]
            args += [
                f"--env=KUBERNETES_SERVICE_HOST={account.host}",
                f"--env=KUBERNETES_SERVICE_PORT={account.port}",
            ]
        args += self._env(container)
        return args

    @property
    def account_name(self) -> str:
        """The ServiceAccount the Pod runs under."""
        return str(self.template["spec"]["serviceAccountName"])

    def _volume(self, volume: Mapping[str, Any], mount: Mapping[str, Any]) -> str:
        options = "ro" if mount.get("readOnly") else "rw"
        if "emptyDir" in volume:
            source = f"{self.name}-{volume['name']}"
            if source not in self._volumes:
                podman("volume", "create", source)
                self._volumes.append(source)
        elif "persistentVolumeClaim" in volume:
            source = self.claims[volume["persistentVolumeClaim"]["claimName"]]
        elif "secret" in volume:
            secret = volume["secret"]
            if secret["secretName"] in self.secrets:
                source = str(self.secrets[secret["secretName"]])
            else:
                # A missing optional Secret is an empty directory in the Pod.
                assert secret.get("optional") is True, secret
                source = f"{self.name}-{volume['name']}"
                if source not in self._volumes:
                    podman("volume", "create", source)
                    self._volumes.append(source)
        else:
            raise AssertionError(f"no podman stand-in for the volume {volume}")
        return f"{source}:{mount['mountPath']}:{options}"

    def _env(self, container: Mapping[str, Any]) -> list[str]:
        env: dict[str, str] = {}
        for source in container.get("envFrom", []):
            if "configMapRef" in source:
                env.update(self.config)
            elif source["secretRef"]["name"] == OPERATOR_SECRET:
                env.update(OPERATOR_SECRET_ENV)
            elif "secretRef" in source:
                env.update(self.secret_env)
        fields = {"metadata.name": self.name, "metadata.namespace": self.namespace}
        for item in container.get("env", []):
            if "value" in item:
                env[item["name"]] = item["value"]
            else:
                env[item["name"]] = fields[item["valueFrom"]["fieldRef"]["fieldPath"]]
        env.update(self.env_overrides)
        return [f"--env={key}={value}" for key, value in env.items()]

    def remove(self) -> None:
        """Remove the Pod's containers and the volumes made for it."""
        names = podman("ps", "-a", "--format", "{{.Names}}").stdout.split()
        for name in names:
            if name.startswith(f"{self.name}-"):
                podman("rm", "--force", "--time", "5", name, check=False)
        for volume in self._volumes:
            podman("volume", "rm", "--force", volume, check=False)


def run(pod: Pod, name: str, *, image: str, args: Sequence[str] | None = None) -> str:
    """Run container ``name`` of ``pod`` to completion, as an init container; return its log."""
    command = list(args) if args is not None else pod.container(name)["args"]
    result = podman("run", "--rm", *pod.run_args(name), image, *command, timeout=300, check=False)
    output = result.stdout + result.stderr
    assert result.returncode == 0, f"{name}: exit {result.returncode}\n{output}"
    return output


@contextmanager
def started(
    pod: Pod,
    name: str,
    *,
    image: str,
    network: Sequence[str] = (),
    args: Sequence[str] | None = None,
) -> Iterator[str]:
    """Start container ``name`` of ``pod`` in the background; yield its container name."""
    command = list(args) if args is not None else pod.container(name)["args"]
    podman("run", "--detach", *pod.run_args(name, network=network), image, *command)
    container = f"{pod.name}-{name}"
    try:
        yield container
    finally:
        podman("stop", "--time", "20", container, check=False, timeout=60)


def logs(container: str) -> str:
    """Return what the container printed so far (stdout and stderr)."""
    result = podman("logs", container, check=False)
    return result.stdout + result.stderr


def published_port(container: str, port: int) -> int:
    """Return the host port podman published the container's ``port`` on."""
    out = podman("port", container, f"{port}/tcp").stdout.strip()
    return int(out.rsplit(":", 1)[1])


def running(container: str) -> bool:
    """Whether the container is still running."""
    state = podman("inspect", "--format", "{{json .State}}", container, check=False)
    return state.returncode == 0 and json.loads(state.stdout).get("Running") is True


def wait_running(container: str, predicate: Any, what: str, timeout: float = 60) -> Any:
    """Wait until ``predicate()`` holds, failing early with the log if the container died."""

    def check() -> Any:
        assert running(container), f"{container} stopped\n{logs(container)}"
        return predicate()

    return wait_until(
        check, timeout=timeout, interval=0.5, what=lambda: f"{what}\n{logs(container)}"
    )


def events(cluster: Cluster, namespace: str) -> list[dict[str, Any]]:
    """The events of ``namespace``, each as type, reason, message, reporter and object."""
    out = cluster.kubectl("get", "events", "-n", namespace, "-o", "json").stdout
    return [
        {k: e.get(k) for k in ("type", "reason", "message", "reportingComponent")}
        | {"object": f"{e['involvedObject']['kind']}/{e['involvedObject']['name']}"}
        for e in json.loads(out)["items"]
    ]


def condition(analysis: Mapping[str, Any], kind: str) -> dict[str, Any]:
    """The analysis' status condition of type ``kind``."""
    return dict(next(c for c in analysis["status"]["conditions"] if c["type"] == kind))


@contextmanager
def operator_pausing(
    cluster: Cluster,
    operator: Pod,
    *,
    image: str,
    namespace: str,
    gauge: GaugeSetter,
    metric: Mapping[str, Any],
    record: Path,
) -> Iterator[str]:
    """Run the operator container of ``operator`` (host network, in-cluster configuration) and
    yield it once it has paused a real Deployment ``checkout`` in ``namespace``.

    The analysis' metric (``metric``, on ``gauge``) fails at once; the pause must show as the
    ``RolloutPaused`` condition and event, recorded to ``record`` and printed, with no
    ``Forbidden`` and no traceback in the operator's log. The database must be migrated.
    """
    admin = kube_client(cluster)
    gauge(0.9)
    kubectl_apply(cluster, deployment_manifest("checkout", namespace))
    kubectl_apply(
        cluster,
        analysis_manifest("checkout", namespace, metrics=[dict(metric)], failure_limit=1),
    )
    with started(operator, "operator", image=image, network=["--network", "host"]) as container:

        def paused() -> dict[str, Any] | None:
            # The target is paused before the status says so (docs/operator.md): wait for both.
            target = admin.request("GET", kube.deployment_path(namespace, "checkout"))
            analysis = admin.request("GET", kube.analysis_path(namespace, "checkout"))
            conditions = (analysis.get("status") or {}).get("conditions") or []
            written = any(c["type"] == "RolloutPaused" for c in conditions)
            return analysis if target["spec"].get("paused") is True and written else None

        analysis = wait_running(
            container, paused, "the operator in the image pausing checkout", timeout=90
        )
        pause = condition(analysis, "RolloutPaused")
        assert pause["status"] == "True", analysis["status"]
        found = events(cluster, namespace)
        assert any(e["reason"] == "RolloutPaused" for e in found), found
        written = {"status": analysis["status"], "events": found}
        record.write_text(json.dumps(written, indent=2))
        print("the pause:", json.dumps(written, indent=2))
        # The in-cluster configuration was used: the token's account, no kubeconfig.
        log = logs(container)
        assert "Forbidden" not in log and "Traceback" not in log, log
        yield container
