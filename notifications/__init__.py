"""Notifications: channels from SENTINEL_NOTIFY_CONFIG, delivery rows, the PNG.

What is sent, when and where is in docs/notifications.md.

Sits between the operator and the web app: it may import ``analyses``, ``sentinel_cluster`` and
``sentinel_core``; ``sentinel_operator`` imports it; ``analyses`` never does (the web side's
resume reaches it through the ``analyses.signals.resumed`` signal).
"""
