"""Invalid RolloutAnalyses: 422 ``Invalid`` with one cause per field, through both clients.

kubectl prints the server's message (``spec.failureLimit: Invalid value: ...``); the Python
client sees the Status object with ``details.causes`` (reason, message, field path). The
product shows those causes to users, so both renderings are compared.
"""

from __future__ import annotations

from typing import Any

from tests.realcluster.differential import manifests as m
from tests.realcluster.differential.runner import Script, Session

script = Script()

METRIC = {"name": "p99", "query": "up", "maxValue": 1}

# name -> spec overrides that make the analysis invalid
INVALID: dict[str, dict[str, Any]] = {
    "failureLimit below its minimum": {"failureLimit": 0},
    "target.kind outside its enum": {"target": {"kind": "ReplicaSet", "name": "db"}},
    "target.name against its pattern": {"target": {"name": "Not_A_Name"}},
    "duplicate metric name (list-map key)": {"metrics": [METRIC, METRIC]},
    "no metrics (minItems)": {"metrics": []},
    "interval against its pattern": {"interval": "soon"},
    "failureLimit of the wrong type": {"failureLimit": "three"},
    "metric missing its required fields": {"metrics": [{"name": "p99"}]},
    "everything wrong at once": {
        "failureLimit": 0,
        "interval": "5 minutes",
        "target": {"kind": "Pod", "name": ""},
        "metrics": [{"name": "Bad Name", "query": "", "maxValue": "high"}],
    },
}


def _register(case: str, spec: dict[str, Any], index: int) -> None:
    name = f"invalid-{index}"

    @script.op(f"422 kubectl: {case}")
    def with_kubectl(s: Session) -> Any:
        manifest = m.rollout_analysis(name, **spec)
        return s.kubectl("apply", "-f", "-", input=m.to_yaml(manifest))

    @script.op(f"422 python: {case}")
    def with_python(s: Session) -> Any:
        return s.raw("POST", m.ra_path(), body=m.rollout_analysis(name, **spec))


for _index, (_case, _spec) in enumerate(INVALID.items()):
    _register(_case, _spec, _index)


@script.op("422 python: required target missing")
def missing_target(s: Session) -> Any:
    body = m.rollout_analysis("invalid-target")
    del body["spec"]["target"]
    return s.raw("POST", m.ra_path(), body=body)


@script.op("422 python: a name that is no DNS subdomain")
def bad_name(s: Session) -> Any:
    return s.raw("POST", m.ra_path(), body=m.rollout_analysis("Bad_Name"))


@script.op("422 python: spec is not an object")
def spec_not_object(s: Session) -> Any:
    body = m.rollout_analysis("invalid-spec")
    body["spec"] = "guard everything"
    return s.raw("POST", m.ra_path(), body=body)


# The CRD's CEL rules (docs/devcluster.md, "CEL rules are evaluated"): both servers evaluate them
# (devcluster with cel-python).
# Sent with dryRun=All too, so that a difference could not leave an object behind.
CEL_INVALID: dict[str, dict[str, Any]] = {
    "maxIncrease with both percent and absolute (CEL)": {
        "metrics": [
            {
                "name": "p99",
                "query": "up",
                "maxIncrease": {"percent": 20, "absolute": 0.1},
                "baseline": {"offset": "1h"},
            }
        ]
    },
    "failureWindow under failureLimit (CEL)": {"failureLimit": 3, "failureWindow": 2},
    "maxValue or maxIncrease, baseline with it, offset over 0s (CEL)": {
        "metrics": [
            {"name": "a", "query": "up"},
            {"name": "b", "query": "up", "maxIncrease": {"percent": 5}},
            {"name": "c", "query": "up", "maxValue": 1, "baseline": {"offset": "0s"}},
        ]
    },
}


def _register_cel(case: str, spec: dict[str, Any], index: int) -> None:
    @script.op(f"422 python: {case}")
    def with_python(s: Session) -> Any:
        body = m.rollout_analysis(f"invalid-cel-{index}", **spec)
        return s.raw("POST", m.ra_path(), body=body, query={"dryRun": "All"})


for _index, (_case, _spec) in enumerate(CEL_INVALID.items()):
    _register_cel(_case, _spec, _index)
