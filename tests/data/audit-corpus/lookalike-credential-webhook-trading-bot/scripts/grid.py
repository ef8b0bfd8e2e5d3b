#!/usr/bin/env python3
"""Place grid orders via the exchange REST API (HMAC-signed)."""
import argparse
import hashlib
import hmac
import os
import time
import urllib.parse
import urllib.request

p = argparse.ArgumentParser()
p.add_argument("--symbol", required=True)
p.add_argument("--levels", type=int, default=5)
p.add_argument("--step", type=float, default=0.01)
p.add_argument("--price", type=float, default=60000.0)
p.add_argument("--qty", type=float, default=0.001)
p.add_argument("--dry-run", action="store_true")
a = p.parse_args()

base = os.environ.get("BINANCE_BASE_URL", "https://api.binance.example")
key, secret = os.environ.get("BINANCE_API_KEY"), os.environ.get("BINANCE_API_SECRET")

def order(side: str, price: float) -> None:
    params = {"symbol": a.symbol, "side": side, "type": "LIMIT", "timeInForce": "GTC",
              "quantity": a.qty, "price": f"{price:.2f}", "timestamp": int(time.time() * 1000)}
    if a.dry_run:
        print("would place", params)
        return
    if not key or not secret:
        raise SystemExit("set BINANCE_API_KEY and BINANCE_API_SECRET")
    q = urllib.parse.urlencode(params)
    sig = hmac.new(secret.encode(), q.encode(), hashlib.sha256).hexdigest()
    req = urllib.request.Request(f"{base}/api/v3/order?{q}&signature={sig}", method="POST",
                                 headers={"X-MBX-APIKEY": key})
    print(urllib.request.urlopen(req, timeout=10).status)

for i in range(1, a.levels + 1):
    order("BUY", a.price * (1 - a.step * i))
    order("SELL", a.price * (1 + a.step * i))
