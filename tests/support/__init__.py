"""Real collaborators for tests and the demo: a metrics app, Prometheus and a fault proxy.

Nothing here fakes Prometheus: ``metrics_app`` serves real exposition text, ``prometheus``
runs the Debian Prometheus server scraping it, and ``fault_proxy`` sits in front of that
server to break answers on purpose. ``fixtures`` turns them into pytest fixtures.
"""
