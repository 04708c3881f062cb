"""The analyses app: mirror and history models, admin, REST API, cluster write services."""
