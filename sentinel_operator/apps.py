from django.apps import AppConfig


class SentinelOperatorConfig(AppConfig):
    name = "sentinel_operator"
    verbose_name = "Rollout Sentinel operator"
