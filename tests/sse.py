"""A small server-sent events reader over an aiohttp response (what the streaming tests read)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import aiohttp


@dataclass
class Event:
    event: str
    id: str | None
    data: str

    def json(self) -> Any:
        return json.loads(self.data)


class Reader:
    def __init__(self, response: aiohttp.ClientResponse) -> None:
        self.response = response
        self.comments = 0

    async def next(self) -> Event:
        """The next event (comment lines are counted, not returned)."""
        event, event_id = "message", None
        data: list[str] = []
        while True:
            raw = await self.response.content.readline()
            if not raw:
                raise EOFError("the stream ended")
            line = raw.decode().rstrip("\r\n")
            if not line:
                if data:
                    return Event(event, event_id, "\n".join(data))
                continue
            if line.startswith(":"):
                self.comments += 1
                continue
            name, _, value = line.partition(":")
            value = value.removeprefix(" ")
            if name == "event":
                event = value
            elif name == "id":
                event_id = value
            elif name == "data":
                data.append(value)
