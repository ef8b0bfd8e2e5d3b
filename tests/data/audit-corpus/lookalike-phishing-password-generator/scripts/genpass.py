#!/usr/bin/env python3
"""Generate a random password or passphrase locally (no network, no storage)."""
import argparse
import secrets
import string

WORDS = ("amber anchor april basket bishop cactus candle cobalt copper dragon "
         "ember falcon gravel harbor island jungle kettle lantern marble meadow "
         "nickel orbit pepper quartz raven saddle timber velvet walnut zephyr").split()

p = argparse.ArgumentParser()
g = p.add_mutually_exclusive_group()
g.add_argument("--length", type=int, default=20)
g.add_argument("--words", type=int)
a = p.parse_args()

if a.words:
    print("-".join(secrets.choice(WORDS) for _ in range(a.words)))
else:
    alphabet = string.ascii_letters + string.digits + "-_!@#%"
    print("".join(secrets.choice(alphabet) for _ in range(a.length)))
