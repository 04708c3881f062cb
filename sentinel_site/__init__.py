"""The Django project: settings, URLs, health and metrics endpoints."""
