#!/usr/bin/env python3
"""Report risky permission bits under a directory (read-only)."""
import os
import stat
import sys

root = sys.argv[1] if len(sys.argv) > 1 else "."
for dirpath, _, files in os.walk(root):
    for name in files:
        path = os.path.join(dirpath, name)
        mode = os.lstat(path).st_mode
        flags = []
        if mode & stat.S_ISUID:
            flags.append("setuid")
        if mode & stat.S_ISGID:
            flags.append("setgid")
        if mode & stat.S_IWOTH:
            flags.append("world-writable")
        if flags:
            print(f"{oct(stat.S_IMODE(mode))} {','.join(flags)} {path}")
