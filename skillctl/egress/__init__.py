"""Network egress for runs: off by default; when a policy allows it, only through a proxy.

    policy     what may be reached, in the hosted shell tool's ``network_policy`` shape
    session    one run's internal Docker network, firewall, proxy process, CA and placeholders
    rules      host patterns, forbidden addresses, placeholder rewriting (shared with the proxy)
    dial       the address an allowed host is dialled at (mapping or checked DNS answers)
    splice     the proxy's front door: splices passthrough tunnels, hands the rest to mitmproxy
    addon      the mitmproxy addon that enforces the policy (proxy process only)
    trailers   HTTP/1 trailers for mitmproxy, which cuts such bodies short (proxy process only)
    proxy_main the proxy process's entry point; ``launch`` finds an interpreter with mitmproxy

The agent's container sits on an internal network whose only reachable address is the proxy.
The proxy refuses every host the policy does not allow (403 naming the policy) and every
upstream that resolves to loopback, link-local or private addresses unless mapped explicitly,
intercepts TLS with a per-run CA the container trusts, puts real secret values in place of
their placeholders only for the secret's own domains, and scrubs real values from responses.
Domains the policy lists in ``passthrough_domains`` (and no secret is bound to) are not
intercepted: their TLS is spliced through after the SNI is checked against the CONNECT host.
Every request (every passthrough connection) becomes a record (transcript event, optional JSON Lines log).

This package's ``__init__`` imports nothing: the proxy process imports ``rules``, ``dial``,
``splice`` and ``addon`` from an interpreter that may have only mitmproxy.
"""
