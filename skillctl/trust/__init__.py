"""Trust: who published a skill version, and whether a project accepts it.

    keys        Ed25519 key files (NAME.key 0600, NAME.pub) and key ids
    dsse        DSSE envelopes: PAE, Ed25519 signatures, strict parsing of untrusted bytes
    statement   the in-toto Statement v1 about one bundle (subject name@version + sha256)
    provenance  the predicate: builder, git source, audit summary
    sign        sign a published version and attach the envelope in its registry
    verify      envelopes + trusted keys -> a verdict with one reason
    policy      skills.yaml's ``trust:`` section (JSON Schema checked)
    enforce     the policy at lock, install --frozen and run --lock

Registries only store envelopes (``Registry.signatures`` / ``attach_signature``); every
decision is made here, from the bytes, the keys and the policy. Submodules are imported where
used: ``skillctl.project.spec`` needs only ``policy``.
"""
