"""``python -m skillctl``: the same command line as the ``skillctl`` script (for a host or a test
that knows the interpreter but not where the script was installed)."""

from skillctl.cli import main

main()
