"""Where a project's skills come from: registries, git repositories and folders, behind the
``skillctl.protocols.Source`` protocol.

    gitspec   parsing git source strings (``github:…``, ``gitlab:…``, ``git+SCHEME://…``) and mirrors
    git       ``GitSource``: a git repository read through Debian's git, never through a work tree
"""
