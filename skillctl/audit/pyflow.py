"""Python scripts, read as syntax trees: what flows into exec and into network calls.

The script is parsed with ``ast.parse`` and nothing else — never imported, compiled to bytecode
or run. A light taint analysis follows values through assignments, in source order, twice (so
loops and later definitions are seen); anything computed from a tainted value is tainted. Kinds
of taint and where they come from:

- ``decoded``: base64/base32/base85/hex/zlib/gzip/bz2/lzma/marshal/pickle/rot13 decoders;
- ``remote``: what a download returns (requests/httpx/urllib/urlopen…);
- ``secret``: paths of credential files (the ``credential-read`` and ``secret-file`` signal
  patterns of the rules, applied to string constants: key files, .env files, wallet keystores)
  and the whole environment (``os.environ`` not indexed by a name).

- ``skill-path``: paths into another skill's folder (given by the caller, which knows the
  audited skill's own name).

Sinks: exec/eval/compile and process starts (decoded → ``python.decode-exec``, remote →
``python.remote-exec``), network sends (secret → ``python.credential-flow``), DNS look-ups
of built names (``python.dns-exfil``), and writes (open for writing, write_text, shutil copies)
whose target is a skill path (``python.skill-write``). exec/eval of anything else computed is
``python.dynamic-exec``. It also raises signals for combination rules: ``credential-read`` or
``secret-file`` (the one the constant matched), ``network-send``, ``download`` and ``exec``. It over-approximates on purpose: a value is tainted
if any part of the expression that made it is.
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from dataclasses import dataclass, field

MAX_SOURCE_CHARS = 2 * 1024 * 1024  # beyond this, pattern rules only (parsing is the slow part)

_DECODERS = frozenset({
    "base64.b64decode", "base64.b32decode", "base64.b16decode", "base64.b85decode", "base64.a85decode",
    "base64.urlsafe_b64decode", "base64.standard_b64decode", "base64.decodebytes", "base64.decodestring",
    "zlib.decompress", "gzip.decompress", "bz2.decompress", "lzma.decompress", "codecs.decode",
    "binascii.unhexlify", "binascii.a2b_base64", "binascii.a2b_hex", "binascii.a2b_uu", "marshal.loads",
    "pickle.loads", "bytes.fromhex", "bytearray.fromhex",
})
_FETCHERS = frozenset({
    "requests.get", "requests.post", "requests.request", "requests.Session", "httpx.get", "httpx.post", "httpx.request",
    "httpx.Client", "urllib.request.urlopen", "urllib.urlopen", "urllib2.urlopen", "urlopen", "urllib.request.urlretrieve",
    "urlretrieve", "aiohttp.ClientSession", "http.client.HTTPConnection", "http.client.HTTPSConnection",
    "socket.create_connection",
})
_SENDERS = frozenset({
    "requests.post", "requests.put", "requests.patch", "requests.request", "httpx.post", "httpx.put", "httpx.patch",
    "httpx.request", "urllib.request.urlopen", "urllib.request.Request", "urlopen", "Request", "smtplib.SMTP",
})
# Methods that send, on objects whose type we cannot know: counted only when the script imports
# a networking module, so generator.send() in a script without one is not a network send.
_SEND_METHODS = frozenset({"post", "put", "patch", "sendall", "send", "sendto", "sendmail", "send_message",
                           "storbinary", "storlines", "upload_file", "upload_fileobj", "put_object"})
_NET_MODULES = frozenset({"requests", "httpx", "urllib", "urllib2", "urllib3", "http", "socket", "smtplib", "ftplib",
                          "aiohttp", "boto3", "paramiko", "websocket", "websockets", "pycurl"})
_EXEC = frozenset({"exec", "eval", "compile", "builtins.exec", "builtins.eval", "builtins.compile"})
_RUNNERS = frozenset({
    "os.system", "os.popen", "os.execv", "os.execve", "os.execl", "os.execvp", "os.spawnv", "subprocess.run",
    "subprocess.call", "subprocess.check_call", "subprocess.check_output", "subprocess.Popen", "subprocess.getoutput",
    "subprocess.getstatusoutput", "pty.spawn", "commands.getoutput",
})
_DNS = frozenset({"socket.gethostbyname", "socket.gethostbyname_ex", "socket.getaddrinfo", "dns.resolver.resolve",
                  "dns.resolver.query", "gethostbyname", "getaddrinfo"})
_COPIERS = frozenset({"shutil.copy", "shutil.copy2", "shutil.copyfile", "shutil.copytree", "shutil.move", "os.rename",
                      "os.replace", "os.symlink", "os.link"})
_ROT = frozenset({"rot13", "rot_13", "hex", "base64", "zlib", "bz2", "hex_codec", "base64_codec", "zlib_codec"})


@dataclass(frozen=True)
class PyHit:
    analyzer: str
    line: int
    column: int
    evidence: str
    detail: str = ""


@dataclass
class PyResult:
    hits: list[PyHit] = field(default_factory=list)
    signals: list[tuple[str, int, int, str]] = field(default_factory=list)  # (signal, line, column, evidence)


@dataclass(frozen=True)
class _Taint:
    kinds: frozenset[str]
    origin: str  # "line N: what"

    def __or__(self, other: _Taint) -> _Taint:
        return _Taint(self.kinds | other.kinds, self.origin or other.origin)


_CLEAN = _Taint(frozenset(), "")


class _Analysis:
    """One pass collects what matters; taint then flows over precomputed summaries, so the
    cost is one walk of the tree plus a little per assignment, not a walk per question."""

    def __init__(self, tree: ast.Module, lines: list[str], is_secret: Callable[[str], str | None],
                 is_foreign_skill: Callable[[str], bool]) -> None:
        self.lines = lines
        self.is_secret = is_secret
        self.is_foreign_skill = is_foreign_skill
        self.aliases: dict[str, str] = {}
        self.imports_net = False
        self.names: dict[str, _Taint] = {}
        self.calls: list[ast.Call] = []
        self.assignments: list[tuple[list[ast.AST], ast.AST]] = []  # (targets, value) in source order
        self.receivers: list[ast.Call] = []  # x.write(...), x.append(...): the receiver takes the taint
        self.secret_constants: list[tuple[ast.Constant, str]] = []  # with the signal each raises
        self._indexed_env: set[int] = set()  # os.environ nodes read by name (os.environ["X"], .get)
        self._static: dict[int, _Taint] = {}
        self._summary: dict[int, tuple[_Taint, frozenset[str]]] = {}
        constants: dict[str, str | None] = {}
        # Preorder, children in source order: statements are met in the order they run.
        stack: list[ast.AST] = [tree]
        while stack:
            node = stack.pop()
            if isinstance(node, ast.Import):
                for a in node.names:
                    self.aliases[a.asname or a.name.split(".")[0]] = a.name if a.asname else a.name.split(".")[0]
                    self.imports_net |= a.name.split(".")[0] in _NET_MODULES
            elif isinstance(node, ast.ImportFrom) and node.module:
                self.imports_net |= node.module.split(".")[0] in _NET_MODULES
                for a in node.names:
                    self.aliases[a.asname or a.name] = f"{node.module}.{a.name}"
            elif isinstance(node, ast.Call):
                self.calls.append(node)
                if isinstance(node.func, ast.Attribute) and isinstance(node.func.value, ast.Name) and node.func.attr in (
                        "write", "append", "extend", "update", "writelines", "add", "insert"):
                    self.receivers.append(node)
            elif isinstance(node, ast.Assign):
                self.assignments.append((node.targets, node.value))
            elif isinstance(node, (ast.AnnAssign, ast.AugAssign)) and node.value is not None:
                self.assignments.append(([node.target], node.value))
            elif isinstance(node, ast.NamedExpr):
                self.assignments.append(([node.target], node.value))
            elif isinstance(node, (ast.For, ast.AsyncFor, ast.comprehension)):
                self.assignments.append(([node.target], node.iter))
            elif isinstance(node, (ast.With, ast.AsyncWith)):
                for item in node.items:
                    if item.optional_vars is not None:
                        self.assignments.append(([item.optional_vars], item.context_expr))
            elif isinstance(node, ast.Subscript):
                self._indexed_env.add(id(node.value))
            elif isinstance(node, ast.Attribute) and node.attr in ("get", "setdefault", "pop", "__getitem__", "__contains__"):
                self._indexed_env.add(id(node.value))
            elif isinstance(node, ast.Compare):
                for c in node.comparators:
                    self._indexed_env.add(id(c))  # "NAME" in os.environ
            elif isinstance(node, ast.Constant) and isinstance(node.value, str) and len(node.value) < 4096:
                if node.value not in constants:
                    constants[node.value] = self.is_secret(node.value)
                secret = constants[node.value]
                if secret:
                    self.secret_constants.append((node, secret))
            stack.extend(reversed(list(ast.iter_child_nodes(node))))

    # ------------------------------------------------------------------ names
    def dotted(self, node: ast.AST) -> str | None:
        parts: list[str] = []
        while isinstance(node, ast.Attribute):
            parts.append(node.attr)
            node = node.value
        if isinstance(node, ast.Name):
            parts.append(self.aliases.get(node.id, node.id))
            return ".".join(reversed(parts))
        if isinstance(node, ast.Call) and parts:
            # requests.Session().post / urllib.request.urlopen(...).read: keep the call's name.
            inner = self.dotted(node.func)
            return ".".join([inner or "?", *reversed(parts)])
        return None

    def call_name(self, call: ast.Call) -> str:
        name = self.dotted(call.func) or ""
        if name.startswith("builtins.") or name.startswith("__builtins__."):
            name = "builtins." + name.split(".", 1)[1]
        return name

    def snippet(self, node: ast.AST) -> str:
        line = getattr(node, "lineno", 1)
        text = self.lines[line - 1] if 0 < line <= len(self.lines) else ""
        return text.strip()[:200]

    # ------------------------------------------------------------------ taint
    def source_of(self, node: ast.AST) -> _Taint:
        if isinstance(node, ast.Call):
            name = self.call_name(node)
            if name in _DECODERS:
                return _Taint(frozenset({"decoded"}), f"line {node.lineno}: {name}")
            if name == "codecs.decode" or (isinstance(node.func, ast.Attribute) and node.func.attr in ("decode", "encode")):
                for arg in node.args[1:] if name == "codecs.decode" else node.args:
                    if isinstance(arg, ast.Constant) and isinstance(arg.value, str) and arg.value.lower() in _ROT:
                        return _Taint(frozenset({"decoded"}), f"line {node.lineno}: {arg.value} decoding")
            if name in _FETCHERS or name.split(".")[-1] in ("urlopen", "urlretrieve"):
                return _Taint(frozenset({"remote"}), f"line {node.lineno}: {name}")
        elif isinstance(node, ast.Constant):
            if isinstance(node.value, str) and len(node.value) < 4096:
                if self.is_secret(node.value):
                    return _Taint(frozenset({"secret"}), f"line {node.lineno}: {node.value[:80]!r}")
                if self.is_foreign_skill(node.value):
                    return _Taint(frozenset({"skill-path"}), f"line {node.lineno}: {node.value[:80]!r}")
        elif (isinstance(node, ast.Attribute) and node.attr == "environ" and id(node) not in self._indexed_env
              and self.dotted(node) == "os.environ"):
            return _Taint(frozenset({"secret", "environment"}), f"line {node.lineno}: os.environ")
        return _CLEAN

    def summary(self, node: ast.AST) -> tuple[_Taint, frozenset[str]]:
        """Sources inside ``node`` and the names it reads, computed once per node."""
        key = id(node)
        cached = self._summary.get(key)
        if cached is not None:
            return cached
        static = _CLEAN
        names: set[str] = set()
        stack = [node]
        while stack:
            n = stack.pop()
            if isinstance(n, ast.Name):
                names.add(n.id)
            elif isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name) and n.value.id == "self":
                names.add("self." + n.attr)
            found = self._static.get(id(n))
            if found is None:
                found = self._static[id(n)] = self.source_of(n)
            if found.kinds:
                static = static | found
            stack.extend(ast.iter_child_nodes(n))
        result = (static, frozenset(names))
        self._summary[key] = result
        return result

    def taint_of(self, node: ast.AST | None) -> _Taint:
        if node is None:
            return _CLEAN
        static, names = self.summary(node)
        out = static
        for name in names:
            t = self.names.get(name)
            if t is not None:
                out = out | t
        return out

    def taint_of_args(self, call: ast.Call) -> _Taint:
        out = _CLEAN
        for arg in call.args:
            out = out | self.taint_of(arg)
        for kw in call.keywords:
            out = out | self.taint_of(kw.value)
        return out

    def _assign(self, target: ast.AST, taint: _Taint) -> None:
        if not taint.kinds:
            return
        for n in ast.walk(target):
            if isinstance(n, ast.Name):
                key = n.id
            elif isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name) and n.value.id == "self":
                key = "self." + n.attr
            else:
                continue
            old = self.names.get(key)
            self.names[key] = taint if old is None else old | taint

    def propagate(self) -> None:
        for _ in range(2):  # twice: a loop body or a later function may feed an earlier use
            for targets, value in self.assignments:
                taint = self.taint_of(value)
                for t in targets:
                    self._assign(t, taint)
            for call in self.receivers:
                self._assign(call.func.value, self.taint_of_args(call))  # type: ignore[attr-defined]

    # ------------------------------------------------------------------ sinks
    def is_sender(self, call: ast.Call, name: str) -> bool:
        if name in _SENDERS or name.split(".")[-1] in ("urlopen",):
            if name.split(".")[-1] in ("urlopen", "Request"):
                # urlopen(url) downloads; urlopen(url, data) / Request(url, data=…) sends.
                return len(call.args) >= 2 or any(kw.arg == "data" for kw in call.keywords)
            return True
        return self.imports_net and isinstance(call.func, ast.Attribute) and call.func.attr in _SEND_METHODS

    def _skill_write(self, call: ast.Call, name: str, result: PyResult) -> None:
        """open(path, "w"/"a"), path.write_text(), shutil.copy(src, dst)… aimed at another skill."""
        target: ast.AST | None = None
        if name in ("open", "io.open", "builtins.open", "os.open"):
            mode = call.args[1] if len(call.args) > 1 else next((k.value for k in call.keywords if k.arg in ("mode", "flags")), None)
            writes = isinstance(mode, ast.Constant) and isinstance(mode.value, str) and any(c in mode.value for c in "wax+")
            writes |= name == "os.open" and mode is not None and not isinstance(mode, ast.Constant)
            target = call.args[0] if writes and call.args else None
        elif isinstance(call.func, ast.Attribute) and call.func.attr in ("write_text", "write_bytes", "touch", "mkdir", "symlink_to"):
            target = call.func.value
        elif name in _COPIERS and len(call.args) >= 2:
            target = call.args[1]
        if target is not None and "skill-path" in self.taint_of(target).kinds:
            result.hits.append(PyHit("python.skill-write", call.lineno, call.col_offset + 1, self.snippet(call),
                                     f"writes to {self.taint_of(target).origin}"))

    def run(self, result: PyResult) -> None:
        self.propagate()
        for node, signal in self.secret_constants:
            result.signals.append((signal, node.lineno, node.col_offset + 1, self.snippet(node)))
        for node in self.calls:
            name = self.call_name(node)
            line, col = node.lineno, node.col_offset + 1
            if name in _FETCHERS or name.split(".")[-1] in ("urlopen", "urlretrieve"):
                result.signals.append(("download", line, col, self.snippet(node)))
            if name in _EXEC or name in _RUNNERS:
                result.signals.append(("exec", line, col, self.snippet(node)))
                taint = self.taint_of_args(node)
                if "decoded" in taint.kinds:
                    result.hits.append(PyHit("python.decode-exec", line, col, self.snippet(node), f"runs data from {taint.origin}"))
                elif "remote" in taint.kinds:
                    result.hits.append(PyHit("python.remote-exec", line, col, self.snippet(node), f"runs data from {taint.origin}"))
                elif name in _EXEC and node.args and not isinstance(node.args[0], ast.Constant):
                    result.hits.append(PyHit("python.dynamic-exec", line, col, self.snippet(node)))
            if self.is_sender(node, name):
                result.signals.append(("network-send", line, col, self.snippet(node)))
                taint = self.taint_of_args(node) | self.taint_of(node.func)
                if "secret" in taint.kinds:
                    what = "the whole environment" if "environment" in taint.kinds else "credentials"
                    result.hits.append(PyHit("python.credential-flow", line, col, self.snippet(node),
                                             f"sends {what} read at {taint.origin}"))
            self._skill_write(node, name, result)
            if name in _DNS and node.args and isinstance(node.args[0], (ast.JoinedStr, ast.BinOp)):
                built = node.args[0]
                if any(isinstance(n, (ast.Name, ast.Call, ast.Attribute, ast.Subscript)) for n in ast.walk(built)):
                    result.hits.append(PyHit("python.dns-exfil", line, col, self.snippet(node),
                                             "the looked-up name is built from data"))


def analyze(text: str, is_secret: Callable[[str], str | None], is_foreign_skill: Callable[[str], bool] = lambda s: False) -> PyResult:
    """Hits and signals for one Python source; a file that does not parse gives one hit."""
    result = PyResult()
    if len(text) > MAX_SOURCE_CHARS:
        return result
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError) as exc:
        line = getattr(exc, "lineno", None) or 1
        msg = getattr(exc, "msg", None) or type(exc).__name__
        result.hits.append(PyHit("python.syntax-error", line, getattr(exc, "offset", None) or 1, "", str(msg)))
        return result
    _Analysis(tree, text.splitlines(), is_secret, is_foreign_skill).run(result)
    return result
