"""Shared test setup. Fixture modules are registered as plugins to keep this file small."""

import os

from skillctl.egress.rules import LOOPBACK_ONLY_ENV

pytest_plugins = ["sandbox_fixtures", "registry_fixtures"]

# For the whole session, and every process it starts: the egress proxy refuses any upstream
# outside 127.0.0.0/8 and asks no DNS, whatever a test's network policy says. Tests map their
# allowed names to loopback servers with --egress-resolve; nothing else can be reached.
os.environ[LOOPBACK_ONLY_ENV] = "1"
