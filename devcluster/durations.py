"""Print ages the way kubectl and the API server's table convertor do ("45s", "3d4h").

tables.py calls :func:`human_duration` for the Age of every row and jsonpath.py for ``date``
printer columns; both follow k8s.io/apimachinery's ``duration.HumanDuration``.
"""

from __future__ import annotations

__all__ = ["human_duration"]


def human_duration(seconds: float) -> str:
    """Return a duration the way kubectl prints ages (apimachinery HumanDuration)."""
    if seconds < -1:
        return "<invalid>"
    total = max(0, int(seconds))
    if total < 120:
        return f"{total}s"
    minutes = total // 60
    if minutes < 10:
        rest = total % 60
        return f"{minutes}m{rest}s" if rest else f"{minutes}m"
    if minutes < 180:
        return f"{minutes}m"
    hours = minutes // 60
    if hours < 8:
        rest = minutes % 60
        return f"{hours}h{rest}m" if rest else f"{hours}h"
    if hours < 48:
        return f"{hours}h"
    if hours < 24 * 8:
        rest = hours % 24
        return f"{hours // 24}d{rest}h" if rest else f"{hours // 24}d"
    if hours < 24 * 365 * 2:
        return f"{hours // 24}d"
    if hours < 24 * 365 * 8:
        days = (hours // 24) % 365
        return f"{hours // 24 // 365}y{days}d" if days else f"{hours // 24 // 365}y"
    return f"{hours // 24 // 365}y"
