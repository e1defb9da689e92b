"""Read SQL of the tag type and tag read models: the state each decision needs, read after the
locks that make changes to one tag type queue, and the rows responses are built from."""

from __future__ import annotations

from typing import TYPE_CHECKING

from service.tag_types import domain

if TYPE_CHECKING:
    from eventlog.connections import Conn

# --- rows of responses --------------------------------------------------------------------------

_TAG_TYPE = "SELECT name, description, icon, color FROM tag_types"
# In the order they were created, as Unleash lists them (`simple` first: the UI's tag dialog
# starts with the first one).
ALL_TAG_TYPES = _TAG_TYPE + " ORDER BY created_at, name"
TAG_TYPE = _TAG_TYPE + " WHERE name = $1"
ALL_TAGS = "SELECT type, value FROM tags ORDER BY type, value"
TAGS_OF_TYPE = "SELECT type, value FROM tags WHERE type = $1 ORDER BY value"

# --- state of decisions -----------------------------------------------------------------------

# A tag type's name can be taken again once it is deleted, so no unique constraint guards its
# creation (its stream goes on): concurrent creates of one name queue on this lock instead, and
# the later ones see the earlier one's row.
LOCK_TAG_TYPE_NAME = "SELECT pg_advisory_xact_lock(hashtextextended('tag-type/' || $1, 0))"
TAG_TYPE_EXISTS = "SELECT EXISTS (SELECT 1 FROM tag_types WHERE name = $1)"
# Changes to one tag type queue on its row. Tagging a flag share-locks it first (before the
# flag, service/features/queries.py), so a deletion waits for those and sees their tags.
LOCK_TAG_TYPE = "SELECT description, icon, color FROM tag_types WHERE name = $1 FOR UPDATE"
# The flags that carry tags of the type, locked in name order after the type (archived flags
# too: the tags go from every flag).
LOCK_TAGGED = """
SELECT t.feature_name AS feature, f.project, t.value
FROM feature_tags t JOIN features f ON f.name = t.feature_name
WHERE t.type = $1
ORDER BY t.feature_name, t.value
FOR UPDATE OF f
"""
LOCK_TAGGED_WITH = """
SELECT t.feature_name AS feature, f.project, t.value
FROM feature_tags t JOIN features f ON f.name = t.feature_name
WHERE t.type = $1 AND t.value = $2
ORDER BY t.feature_name
FOR UPDATE OF f
"""
TAG = "SELECT type, value FROM tags WHERE type = $1 AND value = $2"
# The tag's row, locked: a deletion and the taggings or creations of that value queue.
LOCK_TAG = TAG + " FOR UPDATE"
TAG_EXISTS = "SELECT EXISTS (SELECT 1 FROM tags WHERE type = $1 AND value = $2)"


async def lock_tagged(conn: Conn, tag_type: str, value: str | None = None) -> list[domain.Tagged]:
    """The tags of the type on flags, every such flag locked (the type's row is locked
    already, so no flag is tagged with it meanwhile). A statement that waited for a flag's lock
    read the tags as they were when it began, and a clone committed meanwhile may have copied
    tags of the type onto a new flag: the query runs again, with a newer view, until a run
    finds what the one before it found, every flag in it locked."""
    found: list[domain.Tagged] = []
    while True:
        found_now = await (
            conn.fetch(LOCK_TAGGED, tag_type)
            if value is None
            else conn.fetch(LOCK_TAGGED_WITH, tag_type, value)
        )
        rows = [domain.Tagged(**dict(r)) for r in found_now]
        if rows == found:
            return found
        found = rows
