"""Read a YAML configuration file into a pydantic model, with every mistake as one line.

The operator's two configuration files are read here, the same way: the metric providers
(``SENTINEL_PROVIDERS_FILE``, ``sentinel_operator.provider_config``) and the notification
channels (``SENTINEL_NOTIFY_CONFIG``, ``notifications.config``). Each describes a list of named
entries; a mistake is one line naming the file, the entry (by name, or by position when it has
none) and the field: ``SENTINEL_PROVIDERS_FILE /etc/providers.yaml: provider 'mimir' field url:
must be a http or https URL``. Messages never carry a value from the file (a URL may hold a
token), only field names and what was expected.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any, TypeVar

import yaml
from pydantic import BaseModel, ConfigDict, ValidationError

M = TypeVar("M", bound=BaseModel)


class ConfigFileError(ValueError):
    """The file is unusable; ``str()`` is the one line to log or exit with."""


class Strict(BaseModel):
    """The base of every model read here: unknown fields are mistakes; nothing changes later."""

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)


class Entries:
    """How one file names its entries: the list's key and the word for one entry."""

    def __init__(self, env: str, path: str, key: str, noun: str) -> None:
        self.where = f"{env} {path}"
        self.key, self.noun = key, noun

    def error(self, entry: str, field: str, message: str) -> ConfigFileError:
        """Return the one-line error about ``field`` of ``entry`` ("" for the whole file)."""
        who = f"{entry} " if entry else ""
        return ConfigFileError(f"{self.where}: {who}field {field}: {message}")

    def named(self, name: object, index: int) -> str:
        """Return how the entry at ``index`` is called: by its name, else by its position."""
        if isinstance(name, str) and name:
            return f"{self.noun} {name!r}"
        return f"{self.noun} #{index + 1}"


def read(path: str, model: type[M], entries: Entries, *, empty: M | None = None) -> M:
    """Return the file at ``path`` as ``model``; raise ``ConfigFileError`` with one line.

    ``empty`` is what a file holding nothing means; without it, an empty file is a mistake.
    """
    try:
        raw = yaml.safe_load(Path(path).read_text(encoding="utf-8"))
    except OSError as exc:
        raise ConfigFileError(f"{entries.where}: cannot read it: {exc.strerror or exc}") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        at = f" at line {mark.line + 1}" if mark is not None else ""
        raise ConfigFileError(f"{entries.where}: not valid YAML{at}") from None
    if raw is None and empty is not None:
        return empty
    try:
        return model.model_validate(raw)
    except ValidationError as exc:
        raise _first_error(exc, raw, entries) from None


def check_unique(names: Sequence[str], entries: Entries) -> None:
    """Raise for the first name given twice: ``<entry> field name: duplicate, already #n``."""
    first: dict[str, int] = {}
    for index, name in enumerate(names):
        if name in first:
            raise entries.error(
                entries.named(name, index),
                "name",
                f"duplicate, already {entries.noun} #{first[name] + 1}",
            )
        first[name] = index


def _first_error(exc: ValidationError, raw: Any, entries: Entries) -> ConfigFileError:
    error = exc.errors()[0]
    loc = list(error["loc"])
    message = str(error["msg"]).removeprefix("Value error, ")
    if len(loc) < 2 or loc[0] != entries.key or not isinstance(loc[1], int):
        return entries.error("", ".".join(str(p) for p in loc) or "(top level)", message)
    index = loc[1]
    items = raw.get(entries.key) if isinstance(raw, dict) else None
    item = items[index] if isinstance(items, list) and index < len(items) else None
    name = item.get("name") if isinstance(item, dict) else None
    field = ".".join(str(p) for p in loc[2:]) or f"(the {entries.noun})"
    return entries.error(entries.named(name, index), field, message)
