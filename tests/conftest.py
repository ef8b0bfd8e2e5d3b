"""Shared test setup. Fixture modules are registered as plugins to keep this file small."""

pytest_plugins = ["sandbox_fixtures", "registry_fixtures"]
