"""Read SQL of the account read models (users, service accounts, personal access tokens,
sessions): the state decisions need, read under row locks, and the rows responses are built from."""

from __future__ import annotations

from typing import TYPE_CHECKING

from service.users.domain import Account

if TYPE_CHECKING:
    from eventlog.connections import Conn

NEXT_USER_ID = "SELECT nextval('user_ids')"
LIST_USERS = """
SELECT u.id, u.account_type, u.name, u.username, u.email, u.root_role, u.login_attempts, u.seen_at,
       u.created_at
FROM users u WHERE u.account_type = 'User' ORDER BY u.id
"""
GET_USER = """
SELECT u.id, u.account_type, u.name, u.username, u.email, u.root_role, u.login_attempts, u.seen_at,
       u.created_at
FROM users u WHERE u.id = $1 AND u.account_type = 'User'
"""
# Changes to an account lock its row first: they queue, and each sees what the one before left
# (the row's own columns, read by the statement that waited for the lock, are its latest).
LOCK_ACCOUNT = """
SELECT u.id, u.account_type, u.name, u.username, u.email, u.root_role, u.login_attempts
FROM users u WHERE u.id = $1 FOR UPDATE
"""
GET_ACCOUNT = """
SELECT u.id, u.account_type, u.name, u.username, u.email, u.root_role, u.login_attempts, u.seen_at,
       u.created_at
FROM users u WHERE u.id = $1
"""
# Sign-in: what looks like an e-mail is looked up by e-mail (any case), anything else by
# username (as written), as Unleash does; so a username can never shadow someone's e-mail.
SIGN_IN_BY_EMAIL = """
SELECT u.id, u.account_type, u.name, u.username, u.email, u.root_role, u.login_attempts, u.seen_at,
       u.created_at, pw.password_hash
FROM users u LEFT JOIN user_passwords pw ON pw.user_id = u.id
WHERE u.account_type = 'User' AND lower(u.email) = lower($1)
"""
SIGN_IN_BY_USERNAME = """
SELECT u.id, u.account_type, u.name, u.username, u.email, u.root_role, u.login_attempts, u.seen_at,
       u.created_at, pw.password_hash
FROM users u LEFT JOIN user_passwords pw ON pw.user_id = u.id
WHERE u.account_type = 'User' AND u.username = $1
"""
PASSWORD_HASH = "SELECT password_hash FROM user_passwords WHERE user_id = $1"
LOCK_SESSION_OWNER = """
SELECT u.id, coalesce(u.name, u.username, u.email) AS name
FROM sessions s JOIN users u ON u.id = s.user_id
WHERE s.session_hash = $1
FOR UPDATE OF s
"""

# Inactive (docs/behavior.md, "Deleting inactive users"): a person (not a service account) who
# has not signed in since the threshold, was created before it, and whose tokens were all
# unused since it.
INACTIVE_USERS = """
SELECT u.id, u.name, u.email, u.username, u.seen_at, u.created_at,
       (SELECT max(p.seen_at) FROM personal_access_tokens p WHERE p.user_id = u.id) AS pat_seen_at
FROM users u
WHERE u.account_type = 'User'
  AND u.created_at <= $1 AND (u.seen_at IS NULL OR u.seen_at <= $1)
  AND NOT EXISTS (SELECT 1 FROM personal_access_tokens p
                  WHERE p.user_id = u.id AND p.seen_at > $1)
ORDER BY u.id
"""
# The same test on the listed ids, under row locks: a user who signs in meanwhile (the sign-in
# holds the row) is re-checked after it commits and is no longer inactive.
LOCK_INACTIVE = """
SELECT u.id, u.name, u.username, u.email, u.root_role, u.created_at, u.seen_at
FROM users u
WHERE u.id = ANY($2::bigint[]) AND u.id <> $3
  AND u.account_type = 'User'
  AND u.created_at <= $1 AND (u.seen_at IS NULL OR u.seen_at <= $1)
  AND NOT EXISTS (SELECT 1 FROM personal_access_tokens p
                  WHERE p.user_id = u.id AND p.seen_at > $1)
ORDER BY u.id
FOR UPDATE OF u
"""
# docs/behavior.md, "Searching users": exact matches, then prefixes, then other substrings; ties
# by name, then id. public.search_user_ids (sql/0020) finds the ids of the first offset + limit
# ($2) in one call, with the constants of service/users/handlers/search.py ($3 .. $9); the page
# is those after the offset ($10), in that order (s.n).
_SEARCH_FROM = """
FROM public.search_user_ids($1, $2, $3, $4, $5, $6, $7, $8, $9) AS f (ids)
     CROSS JOIN LATERAL unnest(f.ids[$10 + 1:]) WITH ORDINALITY AS s (id, n)
     JOIN users u ON u.id = s.id
"""
_SEARCH_PAGE = f"{_SEARCH_FROM}ORDER BY s.n\n"
# The page's rows.
SEARCH = f"""
SELECT u.id, u.account_type, u.name, u.username, u.email, u.root_role, u.login_attempts,
       u.seen_at, u.created_at{_SEARCH_PAGE}"""
# The same page as ids and row versions only (service/users/records.py: a replica keeps the
# encoded records of people it returned, each with the version it was encoded from). xmin is
# the transaction that wrote the row's version: any change to a row gives it another. One row
# of arrays (ids and versions in page order, the root roles on the page) rather than a row a
# person: a page decoded as a record a person costs the service a large share of its CPU per
# search (docs/benchmarks.md, "User search").
SEARCH_VERSIONS = f"""
SELECT coalesce(array_agg(u.id ORDER BY s.n), '{{}}') AS ids,
       coalesce(array_agg(u.xmin::text::bigint ORDER BY s.n), '{{}}') AS versions,
       coalesce(array_agg(DISTINCT u.root_role), '{{}}') AS root_roles{_SEARCH_FROM}"""
# The rows of the people a page holds that the replica has no record of, at their version.
USERS_BY_ID = """
SELECT u.id, u.xmin::text::bigint AS version, u.account_type, u.name, u.username, u.email,
       u.root_role, u.login_attempts, u.seen_at, u.created_at
FROM users u WHERE u.id = ANY($1::bigint[]) AND u.account_type = 'User'
"""

USERNAME_TAKEN = "SELECT EXISTS (SELECT 1 FROM users WHERE username = $1)"
NEXT_PAT_ID = "SELECT nextval('personal_access_token_ids')"
PAT_DESCRIPTIONS = "SELECT description FROM personal_access_tokens WHERE user_id = $1"
LOCK_PAT = "SELECT id FROM personal_access_tokens WHERE id = $1 AND user_id = $2 FOR UPDATE"
_PAT_COLUMNS = (
    "p.id, p.secret_hint, p.created_at, p.seen_at, p.user_id, p.description, p.expires_at"
)
PAT = f"SELECT {_PAT_COLUMNS} FROM personal_access_tokens p WHERE p.id = $1"  # noqa: S608
OWN_PATS = f"SELECT {_PAT_COLUMNS} FROM personal_access_tokens p WHERE p.user_id = $1 ORDER BY p.id"  # noqa: S608
# One round trip answers both: no row when the id is not a service account's, one row with
# NULL columns when it has no token, else its tokens in id order.
SERVICE_ACCOUNT_PATS = f"""
SELECT {_PAT_COLUMNS}
FROM users u LEFT JOIN personal_access_tokens p ON p.user_id = u.id
WHERE u.id = $1 AND u.account_type = 'Service Account'
ORDER BY p.id
"""  # noqa: S608 - constants
LIST_SERVICE_ACCOUNTS = """
SELECT u.id, u.account_type, u.name, u.username, u.email, u.root_role, u.login_attempts, u.seen_at,
       u.created_at
FROM users u WHERE u.account_type = 'Service Account'
ORDER BY u.id
"""
GET_SERVICE_ACCOUNT = """
SELECT u.id, u.account_type, u.name, u.username, u.email, u.root_role, u.login_attempts, u.seen_at,
       u.created_at
FROM users u WHERE u.id = $1 AND u.account_type = 'Service Account'
"""


async def lock_account(conn: Conn, account_id: int) -> Account | None:
    row = await conn.fetchrow(LOCK_ACCOUNT, account_id)
    if row is None:
        return None
    return Account(
        id=row["id"],
        account_type=row["account_type"],
        name=row["name"],
        username=row["username"],
        email=row["email"],
        root_role=row["root_role"],
        login_attempts=row["login_attempts"],
    )


# What a person told the web UI (projections/preferences.py): GET /api/admin/user shows it.
SPLASHES = "SELECT splash_id FROM user_splashes WHERE user_id = $1 ORDER BY splash_id"
FEEDBACK = """
SELECT feedback_id, given, never_show FROM user_feedback WHERE user_id = $1 ORDER BY feedback_id
"""
# Under the account's row lock: whether this one is known, and how many there are.
SPLASH_STATE = """
SELECT EXISTS (SELECT FROM user_splashes WHERE user_id = $1 AND splash_id = $2) AS known,
       (SELECT count(*) FROM user_splashes WHERE user_id = $1) AS count
"""
FEEDBACK_STATE = """
SELECT EXISTS (SELECT FROM user_feedback WHERE user_id = $1 AND feedback_id = $2) AS known,
       (SELECT count(*) FROM user_feedback WHERE user_id = $1) AS count
"""

# The users page's list (GET /api/admin/user-admin) as ids and row versions, in id order, in
# one row of arrays: the records remembered at those versions answer (service/users/records.py).
LIST_VERSIONS = """
SELECT coalesce(array_agg(u.id ORDER BY u.id), '{}') AS ids,
       coalesce(array_agg(u.xmin::text::bigint ORDER BY u.id), '{}') AS versions
FROM users u WHERE u.account_type = 'User'
"""

# Admins (root role 1) by kind: people with a password, people without, service accounts.
ADMIN_COUNT = """
SELECT count(*) FILTER (WHERE u.account_type = 'User' AND pw.user_id IS NOT NULL) AS password,
       count(*) FILTER (WHERE u.account_type = 'User' AND pw.user_id IS NULL) AS no_password,
       count(*) FILTER (WHERE u.account_type = 'Service Account') AS service
FROM users u LEFT JOIN user_passwords pw ON pw.user_id = u.id
WHERE u.root_role = 1
"""
ACCESS = """
SELECT u.id, u.name, u.email, u.username, u.account_type FROM users u ORDER BY u.id
"""
# Whose reset link: an e-mail (any case), else a username (as written), of a person.
PERSON_BY_EMAIL_OR_USERNAME = """
SELECT u.id FROM users u
WHERE u.account_type = 'User' AND (lower(u.email) = lower($1) OR u.username = $1)
ORDER BY (lower(u.email) = lower($1)) DESC NULLS LAST, u.id
LIMIT 1
"""
RESET_LINK = """
SELECT r.user_id, r.expires_at FROM password_reset_tokens r WHERE r.token_hash = $1
"""
ENVIRONMENT_EXISTS = "SELECT EXISTS (SELECT FROM environments WHERE name = $1)"
