"""``skillctl serve``: a self-hosted skills API over any registry.

One server speaks three dialects over the same registry:

    /openai/v1/skills…            the OpenAI skills API (``OpenAI(base_url=…/openai/v1)``)
    /anthropic/v1/skills…         the Anthropic skills API (``Anthropic(base_url=…/anthropic)``)
    /.well-known/agent-skills/…   the Agent Skills well-known site (``skillctl --registry http…``)

Modules, from the registry outwards:

    workers        registry clients in worker threads (one per thread)
    upload         what an upload holds, read as hostile input
    service        the operations, shape-independent: list, read, publish, delete, yank, download
    site           the registry as a well-known site (``SiteBuilder``), cached
    keys           API keys: made once, shown once, stored as SHA-256 hashes
    logsafe        log lines that request data cannot forge
    http           keys on requests, capped and paced bodies, the access log, errors by shape
    openai_api     the OpenAI shape (routes, objects, error bodies)
    anthropic_api  the Anthropic shape
    app            the Starlette application over all of it
    gate           connections before their request: head deadline, bounds, the connection limit
    protocol       uvicorn's h11 protocol reporting to the gate; TLS started after accept
    server         uvicorn: socket, TLS, logs, graceful shutdown

The web stack (Starlette, uvicorn, python-multipart) is the optional extra ``skillctl[serve]``;
``keys`` needs none of it.
"""
