"""Re-export ``demo.prometheus`` (the real Prometheus runner) under its old test-support name.

The demo owns the class now, since product code must not import from ``tests``; the fixtures
and operator tests keep importing it from here unchanged.
"""

from demo.prometheus import PROMETHEUS_BINARY, PrometheusServer, Values, free_port
from demo.prometheus import die_with_parent as _die_with_parent

__all__ = ["PROMETHEUS_BINARY", "PrometheusServer", "Values", "_die_with_parent", "free_port"]
