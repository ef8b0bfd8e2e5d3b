"""skillctl: a package manager and runtime for agent skills."""

__version__ = "0.1.0"
