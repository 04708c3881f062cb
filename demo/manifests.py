"""What the demo applies to devcluster: the CRD file, a ``checkout`` Deployment, the analysis.

``demo.runner`` applies them with the real kubectl. The analysis is SPEC §3's, with the
interval and the query's rate() window as the demo's settings choose (shorter than
production's, so that the regression shows within a few minutes).
"""

from __future__ import annotations

from pathlib import Path

CRD_NAME = "rolloutanalyses.sentinel.example.com"
NAMESPACE = "default"
NAME = "checkout"
FAILURE_LIMIT = 3
MAX_VALUE = 0.25
METRIC = "p99-latency"


def crd_file(project_dir: Path) -> Path:
    """Return the CRD manifest shipped with the project."""
    return project_dir / "crds" / "rolloutanalysis.yaml"


def query(rate_window: str) -> str:
    """Return SPEC §3's p99 latency query over ``rate_window``."""
    return (
        "histogram_quantile(0.99, rate(http_request_duration_seconds_bucket"
        f'{{app="{NAME}"}}[{rate_window}]))'
    )


def workload(*, interval: str, rate_window: str) -> str:
    """Return the Deployment and the RolloutAnalysis as one multi-document YAML."""
    return f"""\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {NAME}
  namespace: {NAMESPACE}
  labels: {{app: {NAME}}}
spec:
  replicas: 3
  selector:
    matchLabels: {{app: {NAME}}}
  template:
    metadata:
      labels: {{app: {NAME}}}
    spec:
      containers:
        - name: {NAME}
          image: registry.example.com/shop/checkout:2.4.0
          ports: [{{containerPort: 8080}}]
---
apiVersion: sentinel.example.com/v1alpha1
kind: RolloutAnalysis
metadata:
  name: {NAME}
  namespace: {NAMESPACE}
spec:
  target: {{kind: Deployment, name: {NAME}}}
  metrics:
    - name: {METRIC}
      query: '{query(rate_window)}'
      maxValue: {MAX_VALUE}
  interval: {interval}
  failureLimit: {FAILURE_LIMIT}
  dryRun: false
"""
