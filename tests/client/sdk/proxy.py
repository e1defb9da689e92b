"""A TCP relay in front of the service, for an SDK to connect through: it keeps what each
connection carried (both ways), cuts the streams on demand, and can hold new ones until
let through. What the SDKs send when they reconnect a stream is read from it."""

from __future__ import annotations

import contextlib
import re
import socket
import threading
from dataclasses import dataclass, field
from typing import Self

HEAD_END = b"\r\n\r\n"
STREAMING = b"GET /api/client/streaming"


@dataclass
class Connection:
    client: socket.socket
    upstream: socket.socket
    sent: bytearray = field(default_factory=bytearray)  # by the SDK
    received: bytearray = field(default_factory=bytearray)  # by the SDK

    def close(self) -> None:
        for sock in (self.client, self.upstream):
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
            sock.close()

    def header(self, name: str) -> str | None:
        """A header of the connection's first request (any case, as HTTP allows)."""
        head = bytes(self.sent).partition(HEAD_END)[0].decode()
        for line in head.split("\r\n")[1:]:
            key, _, value = line.partition(":")
            if key.strip().lower() == name.lower():
                return value.strip()
        return None

    def events(self) -> list[dict[str, str]]:
        """The server-sent events received, each as its fields (event, id, data). The body
        is chunked; aiohttp writes each event as one chunk, so the size lines stand alone."""
        body = bytes(self.received).partition(HEAD_END)[2].decode()
        found = []
        for block in re.split(r"\r?\n\r?\n", body):
            fields = {}
            for line in block.splitlines():
                key, sep, value = line.partition(": ")
                if sep and key in {"event", "id", "data"}:
                    fields[key] = value
            if "event" in fields:
                found.append(fields)
        return found


class Proxy:
    def __init__(self, port: int) -> None:
        self.target = ("127.0.0.1", port)
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.listener.getsockname()[1]}"
        self.open = threading.Event()
        self.open.set()
        self.lock = threading.Lock()
        self.connections: list[Connection] = []
        threading.Thread(target=self._accept, daemon=True).start()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *_: object) -> None:
        self.listener.close()
        with self.lock:
            for connection in self.connections:
                connection.close()
        self.open.set()

    def streams(self) -> list[Connection]:
        """The connections that asked for /api/client/streaming, in order."""
        with self.lock:
            return [c for c in self.connections if c.sent.startswith(STREAMING)]

    def hold(self) -> None:
        """New connections wait, accepted but not relayed, until release()."""
        self.open.clear()

    def release(self) -> None:
        self.open.set()

    def cut(self) -> None:
        """Every stream so far is closed, both ways (the SDK's other requests, such as its
        registration, are left alone)."""
        for connection in self.streams():
            connection.close()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:  # closed
                return
            threading.Thread(target=self._relay, args=(client,), daemon=True).start()

    def _relay(self, client: socket.socket) -> None:
        self.open.wait()
        try:
            upstream = socket.create_connection(self.target)
        except OSError:
            client.close()
            return
        connection = Connection(client, upstream)
        with self.lock:
            self.connections.append(connection)
        up = threading.Thread(target=_pump, args=(client, upstream, connection.sent), daemon=True)
        up.start()
        _pump(upstream, client, connection.received)
        up.join()
        connection.close()


def _pump(source: socket.socket, target: socket.socket, record: bytearray) -> None:
    try:
        while data := source.recv(65536):
            record += data
            target.sendall(data)
    except OSError:
        pass
    with contextlib.suppress(OSError):
        target.shutdown(socket.SHUT_WR)
