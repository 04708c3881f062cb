"""A mixin that makes a start()/stop() service a context manager.

The kit's ``DevCluster``, ``PrometheusServer``, ``MetricsApp``, ``FaultProxy``,
``PostgresServer`` and ``RedisServer`` and the demo's ``CheckoutApp`` each own a background
server or process; ``with service:`` starts it and stops it again on the way out, even when the
block raises.
"""

from __future__ import annotations

from types import TracebackType
from typing import Self

__all__ = ["StartStop"]


class StartStop:
    """Start on ``__enter__`` and stop on ``__exit__``; subclasses supply start() and stop()."""

    def start(self) -> None:
        """Start the service."""
        raise NotImplementedError

    def stop(self) -> None:
        """Stop the service; stopping a stopped service does nothing."""
        raise NotImplementedError

    def __enter__(self) -> Self:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()
        self._release()

    def _release(self) -> None:
        """Release what a service keeps across stop() and start() (nothing by default)."""
