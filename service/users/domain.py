"""Accounts (people and service accounts), their sign-ins and personal access tokens: pure
decisions, no I/O. Each command has one function here; it takes the request and the state the
handler loaded under locks (None where the account does not exist) and returns the events."""

from __future__ import annotations

import re
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Final

import msgspec

from eventlog.events.preferences import FeedbackRecorded, SplashSeen
from eventlog.events.users import (
    ImportedUser,
    PasswordChanged,
    PasswordResetRequested,
    PersonalAccessTokenCreated,
    PersonalAccessTokenDeleted,
    PersonalAccessTokensSeen,
    ServiceAccountCreated,
    ServiceAccountDeleted,
    ServiceAccountUpdated,
    TokenUse,
    UserCreated,
    UserDeleted,
    UserRecord,
    UsersDeleted,
    UserSignedIn,
    UserSignedOut,
    UserSignInFailed,
    UsersImported,
    UserUpdated,
)
from service.auth import ROOT_ROLES
from service.errors import (
    InvalidToken,
    NameExists,
    NotFound,
    PasswordMismatch,
    PatLimit,
    ValidationError,
)

if TYPE_CHECKING:
    from collections.abc import Collection, Sequence

    from service.users.commands import (
        CreatePersonalAccessToken,
        CreateServiceAccount,
        CreateUser,
        RootRoleRef,
        UpdateServiceAccount,
        UpdateUser,
    )

# Something@domain.tld without spaces: what a mail server could deliver to.
_EMAIL: Final = re.compile(r"^[^@\s]+@[^@\s.]+(\.[^@\s.]+)+$")
_CONTROL: Final = re.compile(r"[\x00-\x1f\x7f]")
USER: Final = "User"
SERVICE_ACCOUNT: Final = "Service Account"
SESSION_LIFETIME: Final = timedelta(hours=48)  # Unleash's default session TTL
# One answer for an unknown account and a wrong password, so sign-in reveals nobody.
WRONG_CREDENTIALS: Final = (
    "The combination of password and username you provided is invalid. If you have forgotten "
    "your password, visit /forgotten-password or get in touch with your instance administrator."
)
PAT_LIMIT: Final = 10  # a person's own tokens, as Unleash's default
# Service accounts are machines an admin manages, often one token per deployment: a wider bound.
SERVICE_ACCOUNT_TOKEN_LIMIT: Final = 1000
MAX_LIFETIME: Final = timedelta(days=36525)
RESET_LIFETIME: Final = timedelta(days=1)  # a reset link's, as Unleash's
OLD_PASSWORD_WRONG: Final = (
    "The old password you provided is invalid. If you have forgotten your password, visit "
    "/forgotten-password or get in touch with your instance administrator."
)
INVALID_TOKEN: Final = "Token was not valid"
NO_USER: Final = "No user found"


class Account(msgspec.Struct, frozen=True, kw_only=True):
    """A user or service account as decisions about it need it (its row, locked)."""

    id: int
    account_type: str
    name: str | None
    username: str | None
    email: str | None
    root_role: int
    login_attempts: int


def user_stream(user_id: int) -> tuple[str, str]:
    return ("user", str(user_id))


def account_stream(account_type: str, account_id: int) -> tuple[str, str]:
    """Personal access tokens live on their owner's stream."""
    kind = "user" if account_type == USER else "service-account"
    return (kind, str(account_id))


def user_missing(user_id: object) -> NotFound:
    return NotFound(f"Could not find user with id {user_id}")


def service_account_missing(account_id: object) -> NotFound:
    return NotFound(f"Could not find service account with id {account_id}")


def _found(account: Account | None, account_id: int, account_type: str = USER) -> Account:
    if account is None or account.account_type != account_type:
        if account_type == USER:
            raise user_missing(account_id)
        raise service_account_missing(account_id)
    return account


# --- fields -------------------------------------------------------------------------------------


def root_role_id(ref: RootRoleRef, path: str = "$.rootRole") -> int:
    """A root role given by id or by name (any case)."""
    if isinstance(ref, int):
        if ref in ROOT_ROLES:
            return ref
    else:
        for role in ROOT_ROLES.values():
            if role.name.lower() == ref.strip().lower():
                return role.id
    raise ValidationError(f"Could not find rootRole={ref}; root roles are 1, 2, 3 - at `{path}`")


def clean_text(value: str | None, path: str) -> str | None:
    """Surrounding spaces dropped, empty is null, control characters refused."""
    if value is None:
        return None
    if _CONTROL.search(value):
        raise ValidationError(f"Control characters are not allowed - at `{path}`")
    return value.strip() or None


def looks_like_email(value: str) -> bool:
    return _EMAIL.match(value) is not None


def clean_email(value: str | None, path: str = "$.email") -> str | None:
    """Stored lower-cased, as Unleash does."""
    email = clean_text(value, path)
    if email is not None and not _EMAIL.match(email):
        raise ValidationError(f'"{email}" is not a valid email - at `{path}`')
    return email.lower() if email is not None else None


# --- people -----------------------------------------------------------------------------------


def create_user(
    cmd: CreateUser, *, user_id: int, password_hash: str | None, now: datetime
) -> list[UserCreated | PasswordChanged]:
    """Uniqueness is the read model's unique indexes' job (sql/0009): of the e-mail in any case,
    of the username as written ("bob" and "BOB" are two accounts).
    password_hash: of the password given (checked for strength before it was hashed)."""
    email = clean_email(cmd.email)
    username = clean_text(cmd.username, "$.username")
    if email is None and username is None:
        raise ValidationError("You must specify username or email")
    created = UserCreated(
        user_id=user_id,
        name=clean_text(cmd.name, "$.name"),
        username=username,
        email=email,
        root_role=root_role_id(cmd.root_role),
        created_at=now,
    )
    if password_hash is None:
        return [created]
    return [created, PasswordChanged(user_id=user_id, password_hash=password_hash)]


def update_user(user_id: int, account: Account | None, cmd: UpdateUser) -> UserUpdated | None:
    """The account after the update, or None when nothing changes. As in Unleash, a field
    left out, null or blank keeps its value."""
    current = _found(account, user_id)
    name = clean_text(cmd.name, "$.name") or current.name
    email = clean_email(cmd.email) or current.email
    role = current.root_role if cmd.root_role is None else root_role_id(cmd.root_role)
    if (name, email, role) == (current.name, current.email, current.root_role):
        return None
    return UserUpdated(user_id=user_id, name=name, email=email, root_role=role)


def delete_user(user_id: int, account: Account | None) -> UserDeleted:
    current = _found(account, user_id)
    return UserDeleted(
        user_id=user_id, name=current.name, username=current.username, email=current.email
    )


def change_password(user_id: int, account: Account | None, password_hash: str) -> PasswordChanged:
    _found(account, user_id)
    return PasswordChanged(user_id=user_id, password_hash=password_hash)


def change_own_password(
    account: Account | None,
    *,
    user_id: int,
    old_password_ok: bool,
    hash_unchanged: bool,
    password_hash: str,
) -> PasswordChanged:
    """A person's own new password: only with their current one (a password replaced while the
    old one was being checked voids the check, as at sign-in)."""
    current = _found(account, user_id)
    if not (old_password_ok and hash_unchanged):
        raise PasswordMismatch(OLD_PASSWORD_WRONG)
    return PasswordChanged(user_id=current.id, password_hash=password_hash)


def continue_session(user_id: int, session_hash: str, now: datetime) -> UserSignedIn:
    """The session that changed its own password goes on as a new one (the change ends the
    others, and the one it was)."""
    return UserSignedIn(
        user_id=user_id,
        seen_at=now,
        session_hash=session_hash,
        session_expires_at=now + SESSION_LIFETIME,
    )


def own_password_request(
    password: str, confirm_password: str | None, old_password: str | None
) -> str:
    """The old password a change of one's own needs, after the shape of the request is checked
    in Unleash's order: a confirmation that differs, then a missing old password."""
    if confirm_password is not None and confirm_password != password:
        raise ValidationError("Passwords do not match - at `$.confirmPassword`")
    if old_password is None:
        raise ValidationError("The old password is required - at `$.oldPassword`")
    return old_password


def request_password_reset(
    account: Account | None, *, token_hash: str, now: datetime
) -> PasswordResetRequested:
    """A reset link for a person (not a service account, which has no password)."""
    if account is None or account.account_type != USER:
        raise NotFound(NO_USER)
    return PasswordResetRequested(
        user_id=account.id, token_hash=token_hash, expires_at=now + RESET_LIFETIME
    )


def reset_password(
    account: Account | None,
    *,
    link_user: int | None,
    link_expires_at: datetime | None,
    password_hash: str,
    now: datetime,
) -> PasswordChanged:
    """A new password with a reset link: link_user and link_expires_at are the link's (None:
    no such link), account the person's, locked. The PasswordChanged ends the link."""
    if (
        link_user is None
        or link_expires_at is None
        or link_expires_at <= now
        or account is None
        or account.id != link_user
        or account.account_type != USER
    ):
        raise InvalidToken(INVALID_TOKEN)
    return PasswordChanged(user_id=account.id, password_hash=password_hash)


# A replica records at most one UserSignInFailed per account per minute; the wrong passwords in
# between are counted in memory and recorded together, so guessing cannot grow a stream unbounded.
FAILURES_RECORDED_EVERY: Final = timedelta(minutes=1)


class Unrecorded(msgspec.Struct, frozen=True, kw_only=True):
    """Wrong passwords of one account counted in memory since its last UserSignInFailed."""

    count: int
    first_at: datetime
    last_at: datetime


class SignInFailures(msgspec.Struct, frozen=True, kw_only=True):
    """What one replica knows of an account's failed sign-ins: the attempts it counted but has
    not recorded yet, and when it last recorded a UserSignInFailed of the account (None: not
    since the process started)."""

    unrecorded: Unrecorded | None = None
    recorded_at: datetime | None = None

    def recorded_within_a_minute(self, now: datetime) -> bool:
        """A clock that went back counts as the minute being over."""
        return (
            self.recorded_at is not None
            and timedelta(0) <= now - self.recorded_at < FAILURES_RECORDED_EVERY
        )

    def merged(self, other: SignInFailures) -> SignInFailures:
        """Both counts as one: what a replica gives back when an event could not be stored."""
        mine, theirs = self.unrecorded, other.unrecorded
        unrecorded = (
            Unrecorded(
                count=mine.count + theirs.count,
                first_at=min(mine.first_at, theirs.first_at),
                last_at=max(mine.last_at, theirs.last_at),
            )
            if mine is not None and theirs is not None
            else mine or theirs
        )
        times = [t for t in (self.recorded_at, other.recorded_at) if t is not None]
        return SignInFailures(unrecorded=unrecorded, recorded_at=max(times, default=None))


def _failed(account: Account, unrecorded: Unrecorded) -> UserSignInFailed:
    return UserSignInFailed(
        user_id=account.id,
        attempts=unrecorded.count,
        first_attempted_at=unrecorded.first_at,
        attempted_at=unrecorded.last_at,
        login_attempts=account.login_attempts + unrecorded.count,
    )


def sign_in(  # noqa: PLR0913 - the check, its validity, the session, the counted failures, the time
    account: Account | None,
    *,
    password_ok: bool,
    hash_unchanged: bool,
    session_hash: str,
    failures: SignInFailures,
    now: datetime,
) -> tuple[list[UserSignInFailed | UserSignedIn], SignInFailures]:
    """account: found by what was typed and locked; failures: what this replica counted of
    it. Returns the events and what the replica keeps counting.

    A wrong password is counted (the caller answers 401 once that is committed): recorded at
    once, with the attempts counted before it, unless a UserSignInFailed of the account was
    recorded here less than a minute ago; then only counted, for record_failed_sign_ins. A
    success records the counted failures first, so the log keeps the true order. A password
    replaced while it was being checked, or an account deleted meanwhile, voids the check."""
    if account is None or not hash_unchanged:
        raise PasswordMismatch(WRONG_CREDENTIALS)
    if not password_ok:
        before = failures.unrecorded
        counted = Unrecorded(
            count=1 + (before.count if before else 0),
            first_at=before.first_at if before else now,
            last_at=now,
        )
        if failures.recorded_within_a_minute(now):
            return [], SignInFailures(unrecorded=counted, recorded_at=failures.recorded_at)
        return [_failed(account, counted)], SignInFailures(recorded_at=now)
    signed_in = UserSignedIn(
        user_id=account.id,
        seen_at=now,
        session_hash=session_hash,
        session_expires_at=now + SESSION_LIFETIME,
    )
    if failures.unrecorded is None:
        return [signed_in], failures
    return [_failed(account, failures.unrecorded), signed_in], SignInFailures(recorded_at=now)


def record_failed_sign_ins(
    account: Account | None, failures: SignInFailures
) -> UserSignInFailed | None:
    """The wrong passwords a replica counted since the account's last UserSignInFailed, once
    a minute has passed (or the replica stops); nothing when there are none, or when the
    account was deleted meanwhile (its stream has ended)."""
    if account is None or account.account_type != USER or failures.unrecorded is None:
        return None
    return _failed(account, failures.unrecorded)


def sign_out(owner: int | None, session_hash: str) -> UserSignedOut | None:
    """owner: the id of the session's account; None when there is no such session."""
    return None if owner is None else UserSignedOut(user_id=owner, session_hash=session_hash)


def delete_inactive(
    inactive: list[UserRecord], *, inactive_days: int, now: datetime
) -> UsersDeleted | None:
    """inactive: the listed users that are inactive now (locked), each as it is."""
    if not inactive:
        return None
    return UsersDeleted(users=inactive, inactive_days=inactive_days, deleted_at=now)


def split_inactive(
    inactive: list[UserRecord], deletions: Sequence[tuple[Collection[int], int]]
) -> list[list[UserRecord]]:
    """Deletions decided together, in order, each (the ids it lists, its caller's id): each
    gets the listed users among `inactive` but its caller and those an earlier one took, as
    if they ran one after another."""
    left = {u.user_id: u for u in inactive}
    shares: list[list[UserRecord]] = []
    for ids, caller in deletions:
        shares.append([left.pop(i) for i in sorted(set(ids)) if i != caller and i in left])
    return shares


def new_users(
    users: list[ImportedUser], *, taken_emails: set[str], taken_usernames: set[str]
) -> list[ImportedUser]:
    """The users of an import batch that are not there yet (by e-mail or username), each once
    (the first of a file's repeats)."""
    emails, usernames = set(taken_emails), set(taken_usernames)
    fresh: list[ImportedUser] = []
    for user in users:
        if (user.email and user.email in emails) or (user.username and user.username in usernames):
            continue
        fresh.append(user)
        emails.add(user.email or "")
        usernames.add(user.username or "")
    return fresh


def import_users(users: list[ImportedUser], *, ids: list[int], source: str) -> UsersImported:
    """One batch of `import-users`: the new users with the ids they get."""
    return UsersImported(
        users=[msgspec.structs.replace(u, user_id=i) for u, i in zip(users, ids, strict=True)],
        source=source,
    )


# --- service accounts -------------------------------------------------------------------------


def create_service_account(
    cmd: CreateServiceAccount, *, account_id: int, username_taken: bool, now: datetime
) -> ServiceAccountCreated:
    username = clean_text(cmd.username, "$.username")
    if username is None:
        raise ValidationError("username must not be blank - at `$.username`")
    if username_taken:
        raise NameExists(f"A user or service account named {username} exists")
    return ServiceAccountCreated(
        account_id=account_id,
        username=username,
        name=clean_text(cmd.name, "$.name"),
        root_role=root_role_id(cmd.root_role),
        created_at=now,
    )


def update_service_account(
    account_id: int, account: Account | None, cmd: UpdateServiceAccount
) -> ServiceAccountUpdated | None:
    current = _found(account, account_id, SERVICE_ACCOUNT)
    name = clean_text(cmd.name, "$.name") or current.name
    role = current.root_role if cmd.root_role is None else root_role_id(cmd.root_role)
    if (name, role) == (current.name, current.root_role):
        return None
    return ServiceAccountUpdated(account_id=account_id, name=name, root_role=role)


def delete_service_account(account_id: int, account: Account | None) -> ServiceAccountDeleted:
    current = _found(account, account_id, SERVICE_ACCOUNT)
    assert current.username is not None  # a service account always has one
    return ServiceAccountDeleted(
        account_id=account_id, username=current.username, name=current.name
    )


# --- personal access tokens -------------------------------------------------------------------


class NewSecret(msgspec.Struct, frozen=True, kw_only=True):
    """A token's secret as stored: its hash and the hint listings show (never the secret)."""

    hash: str
    hint: str


def create_personal_access_token(  # noqa: PLR0913 - every part of the new token is decided here
    cmd: CreatePersonalAccessToken,
    account: Account | None,
    *,
    account_id: int,
    account_type: str,
    token_id: int,
    existing: list[str],
    secret: NewSecret,
    now: datetime,
) -> PersonalAccessTokenCreated:
    """existing: descriptions of the account's current tokens. Checked in Unleash's order:
    expiry, then the limit, then the description."""
    owner = _found(account, account_id, account_type)
    description = cmd.description.strip()
    if not description:
        raise ValidationError("PAT description cannot be empty. - at `$.description`")
    if cmd.expires_at <= now:
        raise ValidationError("The expiry date should be in future. - at `$.expiresAt`")
    if cmd.expires_at - now > MAX_LIFETIME:
        raise ValidationError("expiresAt must be within 100 years - at `$.expiresAt`")
    limit = PAT_LIMIT if account_type == USER else SERVICE_ACCOUNT_TOKEN_LIMIT
    if len(existing) >= limit:
        raise PatLimit(f"Too many PATs ({limit}) already exist for this user.")
    if description in existing:
        raise NameExists("PAT description already exists.")
    return PersonalAccessTokenCreated(
        token_id=token_id,
        user_id=owner.id,
        description=description,
        secret_hash=secret.hash,
        secret_hint=secret.hint,
        created_at=now,
        expires_at=cmd.expires_at,
    )


def delete_personal_access_token(
    account: Account | None,
    *,
    account_id: int,
    account_type: str,
    token_id: int,
    token_exists: bool,
) -> PersonalAccessTokenDeleted:
    owner = _found(account, account_id, account_type)
    if not token_exists:
        raise NotFound("No PAT found.")
    return PersonalAccessTokenDeleted(token_id=token_id, user_id=owner.id)


def record_token_use(last_use: dict[int, datetime]) -> PersonalAccessTokensSeen | None:
    """The last use of each token since the previous record, in token order."""
    if not last_use:
        return None
    return PersonalAccessTokensSeen(
        seen=[TokenUse(token_id=t, seen_at=at) for t, at in sorted(last_use.items())]
    )


# What one person may have told the web UI, at most: a bound on their rows and events.
UI_PREFERENCES_LIMIT: Final = 1000


def see_splash(
    account: Account | None, user_id: int, splash_id: str, *, seen: bool, count: int
) -> list[SplashSeen]:
    """A person closes a splash screen or tip: recorded the first time only."""
    _found(account, user_id)
    if seen:
        return []
    if count >= UI_PREFERENCES_LIMIT:
        raise ValidationError(
            f"A person sees at most {UI_PREFERENCES_LIMIT} splash screens - at `id`"
        )
    return [SplashSeen(user_id=user_id, splash_id=splash_id)]


def record_feedback(  # noqa: PLR0913 - the prompt, its answer, what is known of the person
    account: Account | None,
    user_id: int,
    feedback_id: str,
    *,
    given: datetime,
    never_show: bool,
    answered: bool,
    count: int,
) -> FeedbackRecorded:
    """A person answers a feedback prompt (again: the new answer replaces the old)."""
    _found(account, user_id)
    if not answered and count >= UI_PREFERENCES_LIMIT:
        raise ValidationError(
            f"A person answers at most {UI_PREFERENCES_LIMIT} feedback prompts - at `feedbackId`"
        )
    return FeedbackRecorded(
        user_id=user_id, feedback_id=feedback_id, given=given, never_show=never_show
    )
