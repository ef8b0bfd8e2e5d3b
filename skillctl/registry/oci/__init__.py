"""The OCI registry backend: skills as OCI artifacts in any distribution registry.

    names     oci:// URLs, repository names (NAMESPACE/NAME), version <-> tag ('+' -> '_')
    artifact  the manifest / config / layer format, and strict parsing of what comes back
    auth      credentials: flags, env, Docker config and credential helpers
    client    the distribution API subset on requests (caps, digests, retries, auth challenges)
    backend   OciRegistry: the ``skillctl.protocols.Registry`` protocol on top of them

``skillctl.registry.open_registry("oci://HOST[:PORT]/NAMESPACE")`` returns an ``OciRegistry``.
"""

from skillctl.registry.oci.backend import OciRegistry
from skillctl.registry.oci.names import OciLocation, parse_oci_url

__all__ = ["OciLocation", "OciRegistry", "parse_oci_url"]
