"""The operator's Django app: django-q2's task signing switched to the operator's own key."""

from django.apps import AppConfig
from django.conf import settings


class SentinelOperatorConfig(AppConfig):
    name = "sentinel_operator"
    verbose_name = "Rollout Sentinel operator"

    def ready(self) -> None:
        # django-q2 signs every queued task (a pickle its workers load) with SECRET_KEY, which
        # the web app holds too: whoever holds it and reaches the broker (the ORM broker is the
        # shared database) could make the operator unpickle anything. With SENTINEL_TASK_KEY,
        # held only by the operator, a task signed with the web app's key is refused
        # (docs/security.md#what-each-account-can-touch). Set before any process is forked, so
        # the cluster's pusher and workers check with it too.
        task_key = settings.SENTINEL.task_key
        if task_key:
            from django_q.conf import Conf

            Conf.SECRET_KEY = task_key
