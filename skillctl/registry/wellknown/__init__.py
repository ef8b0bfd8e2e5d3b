"""The Agent Skills well-known URI: publishing a static site, and reading any such site.

    format     the documents (index, versions.json), the layout and the shipped JSON Schema
    transport  bounded HTTP GETs: total deadline, size caps while streaming, bounded redirects
    cache      artifacts by digest, documents by URL with ETag / Last-Modified / max-age
    client     documents and verified artifacts through the cache
    backend    WellKnownRegistry: the registry commands against a site, read-only
    site       SiteBuilder / build_index / build_site: a registry as a static site

``skillctl.registry.open_registry("https://HOST")`` returns a ``WellKnownRegistry``.
"""

from skillctl.registry.wellknown.backend import WellKnownRegistry, index_url_for

__all__ = ["WellKnownRegistry", "index_url_for"]
