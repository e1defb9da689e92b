"""Request bodies of the user, sign-in, service-account and personal-access-token routes.

Each Struct's `example` is the request body the OpenAPI document shows (service/openapi.py).
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, ClassVar

import msgspec

Text = Annotated[str, msgspec.Meta(max_length=255)]
Password = Annotated[str, msgspec.Meta(max_length=1000)]  # strength rules say the rest
# A root role by id (1, 2, 3) or by name ("Admin", "Editor", "Viewer"), as Unleash accepts.
RootRoleRef = Annotated[int, msgspec.Meta(ge=0, le=2**31 - 1)] | Text


class CreateUser(msgspec.Struct, frozen=True, kw_only=True, rename="camel"):
    example: ClassVar[dict[str, object]] = {
        "email": "ada@example.com",
        "name": "Ada Lovelace",
        "rootRole": 2,
    }
    root_role: RootRoleRef
    email: Text | None = None
    name: Text | None = None
    username: Text | None = None
    password: Password | None = None
    send_email: bool = False  # accepted for Unleash clients; this service sends no e-mail


class UpdateUser(msgspec.Struct, frozen=True, kw_only=True, rename="camel"):
    """Fields left out, null or blank keep their value."""

    example: ClassVar[dict[str, object]] = {
        "name": "Ada King",
        "rootRole": 3,
    }

    name: Text | None = None
    email: Text | None = None
    root_role: RootRoleRef | None = None


class ChangePassword(msgspec.Struct, frozen=True, kw_only=True):
    example: ClassVar[dict[str, object]] = {"password": "Correct-Horse-Battery-9"}
    password: Password


class SignIn(msgspec.Struct, frozen=True, kw_only=True):
    example: ClassVar[dict[str, object]] = {
        "username": "ada@example.com",
        "password": "Correct-Horse-Battery-9",
    }
    username: Annotated[str, msgspec.Meta(min_length=1, max_length=255)]
    password: Password


class DeleteUsers(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """The ids to delete (Unleash's idsSchema); unknown fields are refused."""

    example: ClassVar[dict[str, object]] = {"ids": [7, 8]}

    ids: Annotated[
        list[Annotated[int, msgspec.Meta(ge=0, le=2**63 - 1)]], msgspec.Meta(max_length=10_000)
    ]


AwareDatetime = Annotated[datetime, msgspec.Meta(tz=True)]


class CreatePersonalAccessToken(msgspec.Struct, frozen=True, kw_only=True, rename="camel"):
    example: ClassVar[dict[str, object]] = {
        "description": "CI pipeline",
        "expiresAt": "2030-01-01T00:00:00Z",
    }
    description: Annotated[str, msgspec.Meta(min_length=1, max_length=255)]
    expires_at: AwareDatetime


class CreateServiceAccount(msgspec.Struct, frozen=True, kw_only=True, rename="camel"):
    example: ClassVar[dict[str, object]] = {
        "username": "ci-bot",
        "name": "CI bot",
        "rootRole": 2,
    }
    username: Annotated[str, msgspec.Meta(min_length=1, max_length=255)]
    root_role: RootRoleRef
    name: Text | None = None


class UpdateServiceAccount(msgspec.Struct, frozen=True, kw_only=True, rename="camel"):
    example: ClassVar[dict[str, object]] = {
        "name": "CI bot (production)",
        "rootRole": 3,
    }
    name: Text | None = None  # left out, null or blank: kept
    root_role: RootRoleRef | None = None


class ImportLine(msgspec.Struct, frozen=True, kw_only=True, rename="camel"):
    """A line of `import-users`: a user from another installation."""

    email: Text | None = None
    username: Text | None = None
    name: Text | None = None
    root_role: RootRoleRef = 3
    created_at: AwareDatetime | None = None
    seen_at: AwareDatetime | None = None
    password_hash: Annotated[str, msgspec.Meta(max_length=1000)] | None = None


# What the web UI names its splash screens and feedback prompts by: a short text, without
# control characters (Unleash takes any text).
UiName = Annotated[str, msgspec.Meta(min_length=1, max_length=255, pattern=r"^[^\x00-\x1f\x7f]+$")]


class CreateFeedback(msgspec.Struct, frozen=True, kw_only=True, rename="camel"):
    """A feedback prompt answered now (Unleash's feedbackCreateSchema)."""

    example: ClassVar[dict[str, object]] = {"feedbackId": "pnps"}

    feedback_id: UiName
    never_show: bool = False


class UpdateFeedback(msgspec.Struct, frozen=True, kw_only=True, rename="camel"):
    """A feedback prompt's answer changed (Unleash's feedbackUpdateSchema): `given` left out
    or null is now; `neverShow` left out is false, as in Unleash."""

    example: ClassVar[dict[str, object]] = {"neverShow": True}

    never_show: bool = False
    given: Annotated[datetime, msgspec.Meta(tz=True)] | None = None
    user_id: int | None = None  # in Unleash's schema; the caller is the user, whatever it says


class ChangeOwnPassword(msgspec.Struct, frozen=True, kw_only=True, rename="camel"):
    """A person's new password (Unleash's passwordSchema): the current one is checked, and a
    confirmation, when given, must equal the new one."""

    example: ClassVar[dict[str, object]] = {
        "password": "Correct-Horse-Battery-9",
        "confirmPassword": "Correct-Horse-Battery-9",
        "oldPassword": "Tr0ub4dor&3-Old-One",
    }
    password: Password
    confirm_password: Password | None = None
    old_password: Password | None = None


class CheckPassword(msgspec.Struct, frozen=True, kw_only=True):
    """A password checked against the strength rules only (Unleash's validatePasswordSchema)."""

    example: ClassVar[dict[str, object]] = {"password": "Correct-Horse-Battery-9"}
    password: Password


class RequestPasswordReset(msgspec.Struct, frozen=True, kw_only=True):
    """Whose password a reset link is for (Unleash's idSchema): the e-mail address the web UI
    sends, a username, or the account's numeric id."""

    example: ClassVar[dict[str, object]] = {"id": "ada@example.com"}
    id: (
        Annotated[str, msgspec.Meta(min_length=1, max_length=255)]
        | Annotated[int, msgspec.Meta(ge=1, le=2**63 - 1)]
    )


class ResetPassword(msgspec.Struct, frozen=True, kw_only=True):
    """A new password set with a reset link's token (Unleash's changePasswordSchema)."""

    example: ClassVar[dict[str, object]] = {
        "token": "an-unguessable-token-from-the-link",
        "password": "Correct-Horse-Battery-9",
    }
    token: Annotated[str, msgspec.Meta(max_length=255)]
    password: Password


class ResetEmail(msgspec.Struct, frozen=True, kw_only=True):
    """Whose reset e-mail to send (Unleash's emailSchema); this service sends none."""

    example: ClassVar[dict[str, object]] = {"email": "ada@example.com"}
    email: Text
