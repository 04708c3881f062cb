"""The operator's configuration files, read one way (docs/operations.md).

``files`` reads a YAML file into a pydantic model, every mistake one line naming the file, the
entry and the field. Its callers keep their own models: the metric providers
(``sentinel_operator.provider_config``) and the notification channels
(``notifications.config``). Below both, so either may import it; no Django.
"""
