"""devcluster.jsonpath against client-go's jsonpath, run by ``kubectl ... -o jsonpath``.

``kubectl patch --local`` with an empty merge patch prints a local object through the real
jsonpath printer; each expression must select the same values (joined by spaces, maps and lists
as JSON). Only expressions whose answer does not depend on Go's random map order are used.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from devcluster.jsonpath import _text, evaluate
from tests.devcluster.test_jsonpath_eval import ANALYSIS

KUBECTL = Path(sys.executable).with_name("kubectl")
OBJECT = {**ANALYSIS, "apiVersion": "v1", "kind": "ConfigMap"}

EXPRESSIONS = [
    ".metadata.name",
    ".metadata.labels.app\\.kubernetes\\.io/name",
    ".spec.metrics[-1].name",
    ".spec.metrics[*].name",
    ".spec.metrics[0:1].name",
    ".spec.metrics[0,1].maxValue",
    '.status.conditions[?(@.type=="RolloutPaused")].status',
    ".status.conditions[?(@.type!='Ready')].type",
    ".status.metricResults[?(@.value>0.15)].name",
    ".status.metricResults[?(@.value>=0.1)].name",
    ".status.conditions[?(@.reason)].type",
    ".status.conditions[?(@.message)].type",
    "..verdict",
    ".spec..maxValue",
    ".spec.target",
    ".spec.metrics[0]",
    ".spec.metrics.name",
    ".spec.failureLimit",
]


@pytest.mark.parametrize("expression", EXPRESSIONS)
def test_evaluate_matches_kubectl_jsonpath(tmp_path: Path, expression: str) -> None:
    manifest = tmp_path / "object.json"
    manifest.write_text(json.dumps(OBJECT))
    command = [str(KUBECTL), "patch", "--local", "-f", str(manifest), "--type", "merge"]
    result = subprocess.run(
        [*command, "-p", "{}", "-o", f"jsonpath={{{expression}}}"],
        capture_output=True,
        text=True,
        env={"KUBECONFIG": str(tmp_path / "none"), "HOME": str(tmp_path), "PATH": "/usr/bin"},
        timeout=30,
        check=True,
    )
    assert " ".join(_text(value) for value in evaluate(expression, OBJECT)) == result.stdout
