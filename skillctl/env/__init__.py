"""Skill environments: the packages a skill's scripts import, resolved on the host, pinned,
verified and installed into an image layer on the agent image — offline at run time.

    declare    where requirements come from (PEP 723, requirements.txt, skills.yaml)
    pep723     PEP 723 blocks found as the PEP's reference regex finds them, in linear time
    imports    which modules scripts import that nothing declares (validate's SK251, env infer),
               what guards them, and which distribution each comes from, with its provenance
    provides   what a wheel provides to import (its file list, read in place or by HTTP Range),
               and the skills' imports checked against a resolved environment
    target     the agent image's Python and platform, probed once per image
    resolve    uv resolves for that target: exact versions, one wheel each, sha256 (pylock.toml),
               from one or more indexes (packages can be pinned to one); credentials scrubbed
    debian     Debian packages and their dependencies from the configured mirror (apt on the host)
    files      downloads into a content-addressed cache, every byte checked against its sha256
    build      the environment image: a venv at /opt/skills-env (first on PATH) and the .debs,
               built with ``--network none`` from files checked on the host, assembled from
               reusable parts (big wheels alone, the rest in buckets)
    shadow     the check, run inside that build, that no package's script takes the name of a
               command of the image
    sdist      --allow-sdist: source distributions built into wheels in throwaway containers
    simple     one project's page of a package index (the sdists to choose from)
    images     the environment images on the engine: list, and prune those not in use
    lock       the environment section of skills.lock and the pylock file it pins by digest
    prepare    the one call ``skillctl run`` makes: skills in, image reference out

Submodules are imported on use; importing this package costs nothing.
"""
