"""justlog as the other side of ``chatlog bench vs-justlog``: the binary run on a generated config, with a
stand-in for the Twitch services it asks at start-up.

justlog (built from its repository, outside this one) asks ``id.twitch.tv`` for an app token over TLS
before anything else, ``api.twitch.tv`` (helix ``GET /helix/users``) for its configured channels, and
then connects to ``irc.chat.twitch.tv:6697`` over TLS (it exits when that connection fails). Here:

* :class:`TwitchStandIn` answers all three on a loopback address of its own (127.x.y.z, ports 443 and
  6697), with a certificate for those names signed by a throw-away CA
  (:func:`lab.stack.security.ensure_tls`);
* the child sees the names mapped to that address through its own ``/etc/hosts``: it runs in a private
  mount namespace (``unshare -m``, needs root) where a generated hosts file is bind-mounted over
  ``/etc/hosts`` (the machine's file is never changed), and trusts the CA through ``SSL_CERT_FILE``.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import random
import shutil
import ssl
import subprocess
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from core.errors import ChatlogError
from core.irc_parse import parse_message
from lab.bench.serve_load import stop_server, wait_answering

HOSTS: Final = ("id.twitch.tv", "api.twitch.tv", "irc.chat.twitch.tv")
HTTPS_PORT: Final = 443
IRC_PORT: Final = 6697
_TOKEN: Final = {"access_token": "benchstandintoken", "expires_in": 5_184_000, "token_type": "bearer"}


def helix_users(query: str, known: dict[str, str]) -> dict[str, Any]:
    """The body of helix ``GET /helix/users?<query>`` (``id=`` and ``login=`` repeated) for the users
    ``known`` (id -> login): those asked for, in helix's shape."""
    params = urllib.parse.parse_qs(query)
    by_login = {login: uid for uid, login in known.items()}
    ids = [i for i in params.get("id", []) if i in known]
    ids += [by_login[x] for x in params.get("login", []) if x in by_login]
    return {
        "data": [
            {
                "id": uid,
                "login": known[uid],
                "display_name": known[uid],
                "type": "",
                "broadcaster_type": "",
                "description": "",
                "profile_image_url": "",
                "offline_image_url": "",
                "view_count": 0,
                "created_at": "2016-01-01T00:00:00Z",
            }
            for uid in dict.fromkeys(ids)
        ]
    }


def hosts_file(address: str) -> str:
    """The child's ``/etc/hosts``: localhost, and :data:`HOSTS` at the stand-in's ``address``."""
    return f"127.0.0.1 localhost\n::1 localhost\n{address} {' '.join(HOSTS)}\n"


def justlog_config(logs: Path, port: int, channel_id: str) -> dict[str, Any]:
    """justlog's ``config.json``: the tree, a loopback port, the channel, its archiver on."""
    return {
        "logsDirectory": str(logs),
        "listenAddress": f"127.0.0.1:{port}",
        "archive": True,
        "username": "justinfan77777",
        "oauth": "oauth:benchstandin",
        "clientID": "benchstandin",
        "clientSecret": "benchstandin",
        "admins": [],
        "channels": [channel_id],
        "logLevel": "warn",
        "optOut": {},
    }


class TwitchStandIn:
    """id.twitch.tv, api.twitch.tv and irc.chat.twitch.tv on ``address`` (TLS), in a thread of its own;
    :attr:`asked` counts what was asked (``token``, ``users``, ``irc``, other paths)."""

    def __init__(self, work: Path, users: dict[str, str]) -> None:
        self.address = f"127.{random.randint(1, 254)}.{random.randint(1, 254)}.{random.randint(2, 254)}"
        self.users = users
        self.asked: Counter[str] = Counter()
        self.ca = work / "ca.pem"
        self._context = _server_context(work)
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="twitch-stand-in", daemon=True)
        self._servers: list[asyncio.Server] = []

    def __enter__(self) -> TwitchStandIn:
        self._thread.start()
        future = asyncio.run_coroutine_threadsafe(self._start(), self._loop)
        future.result(timeout=30)
        return self

    def __exit__(self, *exc: object) -> None:
        asyncio.run_coroutine_threadsafe(self._stop(), self._loop).result(timeout=30)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=10)

    async def _start(self) -> None:
        https = await asyncio.start_server(self._https, self.address, HTTPS_PORT, ssl=self._context)
        irc = await asyncio.start_server(self._irc, self.address, IRC_PORT, ssl=self._context)
        self._servers = [https, irc]

    async def _stop(self) -> None:
        for server in self._servers:
            server.close()
        for task in asyncio.all_tasks():
            if task is not asyncio.current_task():
                task.cancel()

    async def _https(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        with contextlib.suppress(OSError, asyncio.IncompleteReadError, ValueError):
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                lines = head.decode("latin-1").split("\r\n")
                method, target, _ = lines[0].split(" ", 2)
                length = 0
                for line in lines[1:]:
                    name, _, value = line.partition(":")
                    if name.strip().lower() == "content-length":
                        length = int(value.strip())
                if length:
                    await reader.readexactly(length)
                path, _, query = target.partition("?")
                if method == "POST" and path == "/oauth2/token":
                    self.asked["token"] += 1
                    status, body = 200, _TOKEN
                elif path == "/helix/users":
                    self.asked["users"] += 1
                    status, body = 200, helix_users(query, self.users)
                else:
                    self.asked[f"{method} {path}"] += 1
                    status, body = 404, {"error": "Not Found", "status": 404, "message": "stand-in"}
                data = json.dumps(body).encode()
                writer.write(
                    f"HTTP/1.1 {status} X\r\nContent-Type: application/json\r\n"
                    f"Content-Length: {len(data)}\r\n\r\n".encode()
                    + data
                )
                await writer.drain()
        writer.close()

    async def _irc(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        """Enough of Twitch's IRC for justlog to stay connected: a welcome, PONGs and JOIN echoes."""
        self.asked["irc"] += 1
        nick = "justinfan"
        with contextlib.suppress(OSError, asyncio.IncompleteReadError, ValueError):
            while line := await reader.readline():
                msg = parse_message(line.decode(errors="replace").strip())
                command, params = msg.command, msg.params
                if command == "NICK" and params:
                    nick = params[0]
                    writer.write(f":tmi.twitch.tv 001 {nick} :Welcome, GLHF!\r\n".encode())
                elif command == "PING":  # as Twitch answers (go-twitch-irc wants both parameters)
                    signature = " ".join(params)
                    writer.write(f":tmi.twitch.tv PONG tmi.twitch.tv :{signature}\r\n".encode())
                elif command == "JOIN" and params:
                    for channel in params[0].split(","):
                        writer.write(f":{nick}!{nick}@{nick}.tmi.twitch.tv JOIN {channel}\r\n".encode())
                await writer.drain()
        writer.close()


def _server_context(work: Path) -> ssl.SSLContext:
    """A TLS server context for :data:`HOSTS`, its CA at ``work/ca.pem`` (the child trusts it)."""
    from cryptography.hazmat.primitives.serialization import (
        Encoding,
        NoEncryption,
        PrivateFormat,
        pkcs12,
    )

    from lab.stack.security import ensure_tls

    files = ensure_tls(work, HOSTS)
    key, cert, chain = pkcs12.load_key_and_certificates(
        files.keystore.read_bytes(), files.keystore_password.encode()
    )
    if key is None or cert is None:
        raise ChatlogError(f"no key or certificate in {files.keystore}")
    pem = work / "standin.pem"
    fd = os.open(pem, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as out:
        out.write(key.private_bytes(Encoding.PEM, PrivateFormat.PKCS8, NoEncryption()))
        out.write(cert.public_bytes(Encoding.PEM))
        for extra in chain:
            out.write(extra.public_bytes(Encoding.PEM))
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(pem)
    return context


@dataclass(frozen=True)
class Justlog:
    base: str
    pid: int


def command(binary: Path, config: Path, hosts: Path) -> list[str]:
    """The child's command line: a private mount namespace whose ``/etc/hosts`` is ``hosts``, then
    justlog itself (``exec``: the process id stays justlog's)."""
    script = 'mount --bind "$1" /etc/hosts && exec "$2" -config "$3"'
    return ["unshare", "-m", "sh", "-c", script, "sh", str(hosts), str(binary), str(config)]


@contextmanager
def running_justlog(
    binary: Path,
    logs: Path,
    work: Path,
    *,
    channel_id: str,
    channel: str,
    port: int,
    start_timeout_s: float = 60.0,
) -> Iterator[tuple[Justlog, TwitchStandIn]]:
    """justlog on ``logs`` at ``127.0.0.1:port``, once it answers; stopped (SIGTERM, then SIGKILL) on the
    way out. Its output is in ``work/justlog.log``."""
    if not binary.is_file() or not os.access(binary, os.X_OK):
        raise ChatlogError(f"not an executable justlog binary: {binary}")
    if shutil.which("unshare") is None or os.geteuid() != 0:
        raise ChatlogError("justlog's Twitch stand-in needs `unshare -m` as root (a private /etc/hosts)")
    work.mkdir(parents=True, exist_ok=True)
    config = work / "config.json"
    config.write_text(json.dumps(justlog_config(logs, port, channel_id), indent=2))
    with TwitchStandIn(work, {channel_id: channel}) as standin:
        hosts = work / "hosts"
        hosts.write_text(hosts_file(standin.address))
        env = {**os.environ, "SSL_CERT_FILE": str(standin.ca), "SSL_CERT_DIR": str(work)}
        with (work / "justlog.log").open("wb") as log:
            proc = subprocess.Popen(
                command(binary, config, hosts), cwd=work, stdout=log, stderr=subprocess.STDOUT, env=env
            )
            base = f"http://127.0.0.1:{port}"
            try:
                wait_answering(
                    f"{base}/list?channelid={channel_id}",
                    proc,
                    lambda: (work / "justlog.log").read_text(errors="replace"),
                    start_timeout_s,
                    name="justlog",
                    answered=lambda status: status < 500,  # any answer but a server error: it is up
                )
                yield Justlog(base, proc.pid), standin
            finally:
                stop_server(proc, 15)


def wait_archived(files: list[Path], proc_pid: int, timeout_s: float) -> float:
    """Wait until justlog's archiver has gzipped every one of ``files`` (each ``.txt`` gone, its
    ``.txt.gz`` there); the seconds it took."""
    start = time.monotonic()
    pending = list(files)
    while pending:
        pending = [p for p in pending if p.exists() or not p.with_name(p.name + ".gz").exists()]
        if not pending:
            break
        if time.monotonic() - start > timeout_s:
            raise ChatlogError(f"justlog archived all but {len(pending)} files in {timeout_s:.0f} s")
        if not Path(f"/proc/{proc_pid}").exists():
            raise ChatlogError("justlog exited while archiving")
        time.sleep(1.0)
    # a file whose .gz is complete has been removed; the last one written may still be closing
    time.sleep(1.0)
    return time.monotonic() - start
