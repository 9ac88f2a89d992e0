"""entity_resolver: a PostgreSQL-native entity resolver for AI-agent memory."""

from importlib.metadata import PackageNotFoundError, version

from entity_resolver.client import Client
from entity_resolver.install import InstallError, LocaleWarning, install

__all__ = ["Client", "install", "InstallError", "LocaleWarning"]
try:
    __version__ = version("pg-entity-resolver")
except PackageNotFoundError:  # pragma: no cover - running from a bare source tree
    __version__ = "0.0.0"
