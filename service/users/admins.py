"""An Admin account made from the command line (`python -m service admin-user NAME`): the way
in to the web UI on a new installation, which has API tokens but no person yet."""

from __future__ import annotations

import secrets
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Final

from eventlog.events.base import Metadata
from service.errors import WeakPassword
from service.users import domain, passwords, queries
from service.users.commands import CreateUser

if TYPE_CHECKING:
    from eventlog.connections import Conn
    from service.work import Work

BY_COMMAND: Final = Metadata(
    actor_id="admin-user", actor_name="admin-user", actor_kind="system", source="system"
)
ADMIN_ROLE: Final = "Admin"


def new_password() -> str:
    """192 random bits, typed or pasted into the sign-in form; long enough to need none of the
    character classes, and drawn again in the rare case of three repeated characters."""
    while True:
        password = secrets.token_urlsafe(24)
        try:
            passwords.check_strength(password)
        except WeakPassword:
            continue
        return password


async def create_admin(work: Work, conn: Conn, username: str, password: str) -> int:
    """The new account's id. The same events as `POST /api/admin/user-admin` writes (a taken
    username is refused by the read model's unique index: NameExists)."""
    password_hash = await passwords.PasswordHashing(1).hash(password)
    cmd = CreateUser(username=username, root_role=ADMIN_ROLE)
    async with work.begin(conn) as uow:
        user_id: int = await uow.conn.fetchval(queries.NEXT_USER_ID)
        events = domain.create_user(
            cmd, user_id=user_id, password_hash=password_hash, now=datetime.now(UTC)
        )
        await uow.append(domain.user_stream(user_id), events, BY_COMMAND, new=True)
    return user_id
