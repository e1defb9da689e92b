"""Read models `invite_links` (one row per link, found by the hash of its secret) and
`invite_link_users` (who signed up through which link)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from eventlog.events.invites import InviteLinkCreated, InviteLinkUpdated, InviteLinkUsed
from projections.base import Projection
from projections.collaborators import author
from projections.writes import Insert, Table, Update, Write

if TYPE_CHECKING:
    from eventlog.codec import RecordedEvent

INVITE_LINKS = Table("invite_links", ("id",))
INVITE_LINK_USERS = Table("invite_link_users", ("link_id", "user_id"), keyed_only=True)


def writes(recorded: RecordedEvent) -> list[Write]:
    match recorded.event:
        case InviteLinkCreated() as e:
            meta = recorded.metadata
            created_by = author(meta.actor_kind, meta.actor_id)
            row = {
                "id": e.link_id,
                "secret_hash": e.secret_hash,
                "secret_hint": e.secret_hint,
                "name": e.name,
                "root_role": e.root_role,
                "enabled": True,
                "created_at": e.created_at,
                "expires_at": e.expires_at,
                "created_by_id": created_by,
                # A person's name stays with their account (joined when read); a token's or
                # the system's is no one's.
                "created_by_name": None
                if created_by is None or created_by >= 0
                else meta.actor_name,
            }
            return [Insert(INVITE_LINKS, row)]
        case InviteLinkUpdated() as e:
            values = {"expires_at": e.expires_at, "enabled": e.enabled}
            return [Update(INVITE_LINKS, {"id": e.link_id}, values)]
        case InviteLinkUsed() as e:
            return [Insert(INVITE_LINK_USERS, {"link_id": e.link_id, "user_id": e.user_id})]
        case _:
            return []


PROJECTION = Projection(
    name="invite_links",
    mode="inline",
    tables=(INVITE_LINKS, INVITE_LINK_USERS),
    writes=writes,
    handles=frozenset({InviteLinkCreated, InviteLinkUpdated, InviteLinkUsed}),
    reads_metadata=True,
)
