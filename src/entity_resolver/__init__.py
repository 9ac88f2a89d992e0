"""entity_resolver: a PostgreSQL-native entity resolver for AI-agent memory."""

from entity_resolver.install import InstallError, LocaleWarning, install

__all__ = ["install", "InstallError", "LocaleWarning"]
__version__ = "0.1.0"
