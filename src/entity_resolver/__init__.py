"""entity_resolver: a PostgreSQL-native entity resolver for AI-agent memory."""

from entity_resolver.client import Client
from entity_resolver.install import InstallError, LocaleWarning, install

__all__ = ["Client", "install", "InstallError", "LocaleWarning"]
__version__ = "0.1.0"
