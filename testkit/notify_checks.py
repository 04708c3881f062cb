"""Look at what a notification carried: its PNG, decoded, and where a colour is drawn.

Used by the notification tests and the demo's self-check; reads pixels with Pillow (a
dependency of matplotlib) and knows the PNG's layout from ``notifications.render``.
"""

from __future__ import annotations

import io

from PIL import Image

from notifications import render


def decode_png(data: bytes) -> Image.Image:
    """Return the image of PNG ``data``; raise if it is not a PNG."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    image = Image.open(io.BytesIO(data))
    image.load()
    return image.convert("RGB")


def rows_of_colour(image: Image.Image, colour: str, *, share: float = 0.25) -> list[int]:
    """Return the pixel rows where at least ``share`` of the panel's width is ``colour``."""
    want = tuple(int(colour[i : i + 2], 16) for i in (1, 3, 5))
    width, height = image.size
    left, right = int(render.LEFT * width), int(render.RIGHT * width)
    pixels = image.load()
    found = []
    for y in range(height):
        hits = sum(
            1
            for x in range(left, right)
            if all(abs(c - w) <= 40 for c, w in zip(pixels[x, y], want, strict=True))
        )
        if hits >= share * (right - left):
            found.append(y)
    return found


def expected_row(
    image: Image.Image, value: float, limits: tuple[float, float], panel: int, panels: int
) -> float:
    """Return the pixel row where ``value`` is drawn in panel ``panel`` of ``panels``."""
    height = image.size[1]
    bottom, top = render.panel_box(panel, panels)
    low, high = limits
    fraction = bottom + (value - low) / (high - low) * (top - bottom)
    return (1 - fraction) * height
