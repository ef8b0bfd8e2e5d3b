"""Where a project's skills come from: registries, git repositories and folders, behind the
``skillctl.protocols.Source`` protocol.

    gitspec   parsing git source strings (``github:…``, ``gitlab:…``, ``git+SCHEME://…``) and mirrors
    git       ``GitSource``: a git repository read through Debian's git, never through a work tree
    gittree   a tree listing searched and chosen from as a folder is (skill search, pack's files)
    gitcmd    running git on hostile repositories (environment, limits, deadlines, the cache)
"""
