"""Network egress for runs: off by default; when a policy allows it, only through a proxy.

    policy     what may be reached, in the hosted shell tool's ``network_policy`` shape
    session    one run's internal Docker network, firewall, proxy process, CA and placeholders
    rules      host patterns, forbidden addresses, placeholder rewriting (shared with the proxy)
    addon      the mitmproxy addon that enforces the policy (proxy process only)
    trailers   HTTP/1 trailers for mitmproxy, which cuts such bodies short (proxy process only)
    proxy_main the proxy process's entry point; ``launch`` finds an interpreter with mitmproxy

The agent's container sits on an internal network whose only reachable address is the proxy.
The proxy refuses every host the policy does not allow (403 naming the policy) and every
upstream that resolves to loopback, link-local or private addresses unless mapped explicitly,
intercepts TLS with a per-run CA the container trusts, puts real secret values in place of
their placeholders only for the secret's own domains, and scrubs real values from responses.
Every request becomes a record (transcript event, optional JSON Lines log).

This package's ``__init__`` imports nothing: the proxy process imports ``rules`` and ``addon``
from an interpreter that may have only mitmproxy.
"""
