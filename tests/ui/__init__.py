"""Tests of the admin web UI: the SVG graphs, the admin pages and actions, and one real browser."""
