"""A Docker-style token service (the ``auth.token`` protocol of distribution), for testing the
Bearer challenge against the real registry: distribution checks every token's RS256 signature
against a certificate made here with the ``openssl`` CLI, and its issuer, audience, expiry and
access claims — so a wrong token is refused by the real server, not by this file.

Users: ``alice`` / ``wonderland`` gets whatever it asks for; anyone else with a password gets 401;
no credentials at all gets an anonymous token with no access (the registry then answers 401).
"""

from __future__ import annotations

import base64
import json
import secrets
import subprocess
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

ISSUER = "skillctl-test-issuer"
SERVICE = "skillctl-test-registry"


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


class TokenService:
    def __init__(self, root: Path, users: dict[str, str]) -> None:
        self.root = root
        self.users = users
        self.key = root / "token.key"
        self.cert = root / "token.crt"
        subprocess.run(
            ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(self.key), "-out", str(self.cert),
             "-days", "2", "-subj", "/CN=skillctl-test-token"],
            check=True, capture_output=True,
        )
        pem = self.cert.read_text()
        self.der_b64 = "".join(l for l in pem.splitlines() if "-----" not in l)
        self.issued: list[tuple[str, str]] = []  # (user, scope) per token, for tests
        service = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args) -> None:
                pass

            def do_GET(self) -> None:
                query = parse_qs(urlsplit(self.path).query)
                user = service._user(self.headers.get("Authorization", ""))
                if user is None:
                    self.send_response(401)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                scopes = query.get("scope", [])
                body = json.dumps({"token": service.token(user, scopes, query.get("service", [""])[0])}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.realm = f"http://127.0.0.1:{self.server.server_address[1]}/token"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def _user(self, header: str) -> str | None:
        """The user, "" for anonymous, None for wrong credentials."""
        if not header:
            return ""
        try:
            user, _, password = base64.b64decode(header.removeprefix("Basic ")).decode().partition(":")
        except Exception:  # noqa: BLE001
            return None
        return user if self.users.get(user) == password else None

    def token(self, user: str, scopes: list[str], audience: str) -> str:
        access = []
        if user:  # anonymous gets a token that grants nothing
            for scope in scopes:
                kind, _, rest = scope.partition(":")
                name, _, actions = rest.rpartition(":")
                access.append({"type": kind, "name": name, "actions": actions.split(",")})
        now = int(time.time())
        header = {"typ": "JWT", "alg": "RS256", "x5c": [self.der_b64]}
        claims = {"iss": ISSUER, "sub": user, "aud": audience, "exp": now + 300, "nbf": now - 10, "iat": now,
                  "jti": secrets.token_hex(8), "access": access}
        signing_input = f"{b64url(json.dumps(header).encode())}.{b64url(json.dumps(claims).encode())}"
        sig = subprocess.run(["openssl", "dgst", "-sha256", "-sign", str(self.key)], input=signing_input.encode(),
                             capture_output=True, check=True).stdout
        self.issued.append((user, " ".join(scopes)))
        return f"{signing_input}.{b64url(sig)}"

    def registry_config(self) -> str:
        return (f"auth:\n  token:\n    realm: {self.realm}\n    service: {SERVICE}\n    issuer: {ISSUER}\n"
                f"    rootcertbundle: {self.cert}\n")

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
