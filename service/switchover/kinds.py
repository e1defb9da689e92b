"""The kinds of entity an import writes, in the order it writes them: what a kind refers to
(a flag to its project, tag types, segments, strategy definitions) is written before it."""

from __future__ import annotations

from typing import TYPE_CHECKING

from service.switchover.flags import Flags
from service.switchover.tag_types import TagTypes

if TYPE_CHECKING:
    from service.switchover.run import Kind


def all_kinds() -> list[Kind]:
    return [TagTypes(), Flags()]
