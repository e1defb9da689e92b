"""Pure decisions of accounts: people, sign-in, imports, service accounts and their tokens."""

from __future__ import annotations

import itertools
from datetime import UTC, datetime, timedelta

import msgspec
import pytest
from hypothesis import given
from hypothesis import strategies as st

from eventlog.events.users import (
    ImportedUser,
    PasswordChanged,
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
from service.errors import NameExists, NotFound, PasswordMismatch, PatLimit, ValidationError
from service.users import domain
from service.users.commands import (
    CreatePersonalAccessToken,
    CreateServiceAccount,
    CreateUser,
    UpdateServiceAccount,
    UpdateUser,
)

NOW = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
SECRET = domain.NewSecret(hash="f" * 64, hint="user:abcd********")


def person(
    *,
    account_id: int = 7,
    name: str | None = "Ada",
    username: str | None = "ada",
    email: str | None = "ada@example.com",
    root_role: int = 3,
    login_attempts: int = 0,
) -> domain.Account:
    return domain.Account(
        id=account_id,
        account_type=domain.USER,
        name=name,
        username=username,
        email=email,
        root_role=root_role,
        login_attempts=login_attempts,
    )


def robot(
    *, account_id: int = 9, name: str | None = "CI bot", root_role: int = 2
) -> domain.Account:
    return domain.Account(
        id=account_id,
        account_type=domain.SERVICE_ACCOUNT,
        name=name,
        username="ci-bot",
        email=None,
        root_role=root_role,
        login_attempts=0,
    )


def create_user_cmd(raw: bytes) -> CreateUser:
    return msgspec.json.decode(raw, type=CreateUser)


def pat_cmd(
    *, description: str = "deploys", expires_at: datetime = NOW + timedelta(days=30)
) -> CreatePersonalAccessToken:
    return CreatePersonalAccessToken(description=description, expires_at=expires_at)


def create_pat(
    cmd: CreatePersonalAccessToken,
    account: domain.Account | None,
    *,
    account_type: str = domain.USER,
    existing: list[str] | None = None,
) -> PersonalAccessTokenCreated:
    return domain.create_personal_access_token(
        cmd,
        account,
        account_id=7 if account_type == domain.USER else 9,
        account_type=account_type,
        token_id=42,
        existing=existing or [],
        secret=SECRET,
        now=NOW,
    )


def imported(
    *, email: str | None = None, username: str | None = None, user_id: int = 0
) -> ImportedUser:
    return ImportedUser(
        user_id=user_id,
        name=None,
        username=username,
        email=email,
        root_role=3,
        created_at=NOW,
        password_hash=None,
    )


# --- root_role_id, clean_email ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("ref", "role"),
    [(1, 1), (2, 2), (3, 3), ("Admin", 1), ("editor", 2), (" VIEWER ", 3), ("aDmIn", 1)],
)
def test_root_role_id_takes_a_role_by_id_or_by_name_in_any_case(ref: int | str, role: int) -> None:
    assert domain.root_role_id(ref) == role


@pytest.mark.parametrize("ref", [0, 4, 2**31 - 1, "Owner", "", "1"])
def test_root_role_id_refuses_an_unknown_role(ref: int | str) -> None:
    with pytest.raises(ValidationError) as caught:
        domain.root_role_id(ref)
    assert caught.value.message == (
        f"Could not find rootRole={ref}; root roles are 1, 2, 3 - at `$.rootRole`"
    )


def test_root_role_id_names_the_path_it_is_given() -> None:
    with pytest.raises(ValidationError) as caught:
        domain.root_role_id(9, "$[3].rootRole")
    assert caught.value.message.endswith("- at `$[3].rootRole`")


@pytest.mark.parametrize(
    ("value", "cleaned"),
    [
        (None, None),
        ("", None),
        ("   ", None),
        ("  Ada.Lovelace@Example.CO.UK ", "ada.lovelace@example.co.uk"),
        ("a+tag@sub.example.org", "a+tag@sub.example.org"),
    ],
)
def test_clean_email_trims_lowercases_and_treats_blank_as_null(
    value: str | None, cleaned: str | None
) -> None:
    assert domain.clean_email(value) == cleaned


@pytest.mark.parametrize(
    ("value", "shown"),
    [
        ("ada", "ada"),
        ("ada@example", "ada@example"),
        (" Ada@@Example.com ", "Ada@@Example.com"),
        ("a da@example.com", "a da@example.com"),
        ("ada@example..com", "ada@example..com"),
        ("ada@.com", "ada@.com"),
    ],
)
def test_clean_email_refuses_an_address_no_mail_server_could_deliver_to(
    value: str, shown: str
) -> None:
    with pytest.raises(ValidationError) as caught:
        domain.clean_email(value)
    assert caught.value.message == f'"{shown}" is not a valid email - at `$.email`'


@pytest.mark.parametrize("value", ["ada@example.com\n", "ada\x00@example.com", "a\x7f@b.co"])
def test_clean_email_refuses_control_characters(value: str) -> None:
    with pytest.raises(ValidationError) as caught:
        domain.clean_email(value, "$[0].email")
    assert caught.value.message == "Control characters are not allowed - at `$[0].email`"


@given(
    st.from_regex(r"[A-Za-z0-9._+-]{1,20}", fullmatch=True),
    st.lists(st.from_regex(r"[A-Za-z0-9-]{1,10}", fullmatch=True), min_size=2, max_size=4),
)
def test_clean_email_keeps_any_plain_address_lowercased_and_is_idempotent(
    local: str, labels: list[str]
) -> None:
    address = f"{local}@{'.'.join(labels)}"
    cleaned = domain.clean_email(f" {address} ")
    assert cleaned == address.lower()
    assert domain.clean_email(cleaned) == cleaned


# --- create_user --------------------------------------------------------------------------------


def test_create_user_stores_the_cleaned_fields_and_the_password_hash() -> None:
    cmd = create_user_cmd(
        b'{"email": " Ada@Example.com ", "name": "  Ada Lovelace ", "username": " ada ",'
        b' "rootRole": "Editor", "password": "not stored", "sendEmail": true}'
    )
    events = domain.create_user(cmd, user_id=7, password_hash="$argon2id$x", now=NOW)
    assert events == [
        UserCreated(
            user_id=7,
            name="Ada Lovelace",
            username="ada",
            email="ada@example.com",
            root_role=2,
            created_at=NOW,
        ),
        PasswordChanged(user_id=7, password_hash="$argon2id$x"),
    ]


def test_create_user_without_a_password_records_no_password() -> None:
    cmd = create_user_cmd(b'{"username": "ada", "rootRole": 3, "name": "  "}')
    assert domain.create_user(cmd, user_id=7, password_hash=None, now=NOW) == [
        UserCreated(user_id=7, name=None, username="ada", email=None, root_role=3, created_at=NOW)
    ]


@pytest.mark.parametrize(
    "raw",
    [
        b'{"rootRole": 1}',
        b'{"rootRole": 1, "email": "  ", "username": ""}',
        b'{"rootRole": 1, "email": null, "username": null, "name": "Ada"}',
    ],
)
def test_create_user_needs_a_username_or_an_email(raw: bytes) -> None:
    with pytest.raises(ValidationError) as caught:
        domain.create_user(create_user_cmd(raw), user_id=7, password_hash=None, now=NOW)
    assert caught.value.message == "You must specify username or email"


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        (b'{"rootRole": 1, "email": "nope"}', '"nope" is not a valid email - at `$.email`'),
        (
            b'{"rootRole": 1, "username": "a\\tb"}',
            "Control characters are not allowed - at `$.username`",
        ),
        (
            b'{"rootRole": 1, "username": "ada", "name": "A\\nB"}',
            "Control characters are not allowed - at `$.name`",
        ),
        (
            b'{"rootRole": 4, "username": "ada"}',
            "Could not find rootRole=4; root roles are 1, 2, 3 - at `$.rootRole`",
        ),
    ],
)
def test_create_user_refuses_an_invalid_field(raw: bytes, message: str) -> None:
    with pytest.raises(ValidationError) as caught:
        domain.create_user(create_user_cmd(raw), user_id=7, password_hash=None, now=NOW)
    assert caught.value.message == message


def test_create_user_checks_email_then_username_then_that_one_is_given_then_name_and_role() -> None:
    def refusal(raw: bytes) -> str:
        with pytest.raises(ValidationError) as caught:
            domain.create_user(create_user_cmd(raw), user_id=7, password_hash=None, now=NOW)
        return caught.value.message

    assert refusal(b'{"rootRole": 9, "name": "\\u0007", "email": "x", "username": "\\u0007"}') == (
        '"x" is not a valid email - at `$.email`'
    )
    assert refusal(b'{"rootRole": 9, "name": "\\u0007", "username": "\\u0007"}').endswith(
        "$.username`"
    )
    assert refusal(b'{"rootRole": 9, "name": "\\u0007"}') == "You must specify username or email"
    assert refusal(b'{"rootRole": 9, "name": "\\u0007", "username": "u"}').endswith("$.name`")


# --- update_user, delete_user, change_password --------------------------------------------------


def test_update_user_records_the_account_as_it_is_after_the_change() -> None:
    cmd = UpdateUser(name=" Ada King ", email="ADA@king.org", root_role="admin")
    assert domain.update_user(7, person(), cmd) == UserUpdated(
        user_id=7, name="Ada King", email="ada@king.org", root_role=1
    )


def test_update_user_keeps_fields_left_out_null_or_blank() -> None:
    assert domain.update_user(7, person(), UpdateUser(root_role=1)) == UserUpdated(
        user_id=7, name="Ada", email="ada@example.com", root_role=1
    )


@pytest.mark.parametrize(
    "cmd",
    [
        UpdateUser(),
        UpdateUser(name="  ", email="", root_role=None),
        UpdateUser(name="Ada", email=" ADA@example.com ", root_role="Viewer"),
    ],
)
def test_update_user_records_nothing_when_nothing_changes(cmd: UpdateUser) -> None:
    assert domain.update_user(7, person(), cmd) is None


@pytest.mark.parametrize("account", [None, robot(account_id=7)])
def test_update_user_refuses_an_account_that_is_no_user(account: domain.Account | None) -> None:
    with pytest.raises(NotFound) as caught:
        domain.update_user(7, account, UpdateUser(email="bad"))
    assert caught.value.message == "Could not find user with id 7"
    assert caught.value.status == 404


@pytest.mark.parametrize(
    ("cmd", "message"),
    [
        (UpdateUser(email="bad"), '"bad" is not a valid email - at `$.email`'),
        (UpdateUser(name="\x1b[31m"), "Control characters are not allowed - at `$.name`"),
        (
            UpdateUser(root_role=0),
            "Could not find rootRole=0; root roles are 1, 2, 3 - at `$.rootRole`",
        ),
    ],
)
def test_update_user_refuses_an_invalid_field(cmd: UpdateUser, message: str) -> None:
    with pytest.raises(ValidationError) as caught:
        domain.update_user(7, person(), cmd)
    assert caught.value.message == message


def test_delete_user_records_who_the_user_was() -> None:
    assert domain.delete_user(7, person(name=None)) == UserDeleted(
        user_id=7, name=None, username="ada", email="ada@example.com"
    )


@pytest.mark.parametrize("account", [None, robot(account_id=7)])
def test_delete_user_refuses_an_account_that_is_no_user(account: domain.Account | None) -> None:
    with pytest.raises(NotFound) as caught:
        domain.delete_user(7, account)
    assert caught.value.message == "Could not find user with id 7"


def test_change_password_records_the_new_hash() -> None:
    assert domain.change_password(7, person(), "$argon2id$new") == PasswordChanged(
        user_id=7, password_hash="$argon2id$new"
    )


@pytest.mark.parametrize("account", [None, robot(account_id=7)])
def test_change_password_refuses_an_account_that_is_no_user(
    account: domain.Account | None,
) -> None:
    with pytest.raises(NotFound) as caught:
        domain.change_password(7, account, "$argon2id$new")
    assert caught.value.message == "Could not find user with id 7"


# --- sign_in, sign_out --------------------------------------------------------------------------


NONE = domain.SignInFailures()
MINUTE = timedelta(minutes=1)


def sign_in(
    account: domain.Account | None = None,
    *,
    password_ok: bool,
    hash_unchanged: bool = True,
    failures: domain.SignInFailures = NONE,
    now: datetime = NOW,
) -> tuple[list[UserSignInFailed | UserSignedIn], domain.SignInFailures]:
    return domain.sign_in(
        account,
        password_ok=password_ok,
        hash_unchanged=hash_unchanged,
        session_hash="h",
        failures=failures,
        now=now,
    )


def counted(count: int, first_at: datetime, last_at: datetime) -> domain.Unrecorded:
    return domain.Unrecorded(count=count, first_at=first_at, last_at=last_at)


SIGNED_IN = UserSignedIn(
    user_id=7,
    seen_at=NOW,
    session_hash="h",
    session_expires_at=datetime(2026, 1, 4, 3, 4, 5, tzinfo=UTC),
)


def test_sign_in_opens_a_session_for_48_hours() -> None:
    assert sign_in(person(login_attempts=2), password_ok=True) == ([SIGNED_IN], NONE)


def test_a_first_wrong_password_is_recorded_at_once() -> None:
    events, kept = sign_in(person(login_attempts=2), password_ok=False)
    assert events == [
        UserSignInFailed(
            user_id=7, attempts=1, first_attempted_at=NOW, attempted_at=NOW, login_attempts=3
        )
    ]
    assert kept == domain.SignInFailures(recorded_at=NOW)


def test_wrong_passwords_within_a_minute_of_a_record_are_only_counted() -> None:
    recorded = domain.SignInFailures(recorded_at=NOW - timedelta(seconds=30))
    events, kept = sign_in(person(), password_ok=False, failures=recorded)
    assert events == []
    assert kept == domain.SignInFailures(
        unrecorded=counted(1, NOW, NOW), recorded_at=recorded.recorded_at
    )
    later = NOW + timedelta(seconds=1)
    events, kept = sign_in(person(), password_ok=False, failures=kept, now=later)
    assert events == []
    assert kept.unrecorded == counted(2, NOW, later)


def test_a_wrong_password_a_minute_after_the_record_records_those_counted_with_it() -> None:
    earlier = NOW - timedelta(seconds=50)
    failures = domain.SignInFailures(
        unrecorded=counted(4, earlier, NOW - timedelta(seconds=10)), recorded_at=NOW - MINUTE
    )
    events, kept = sign_in(person(login_attempts=1), password_ok=False, failures=failures)
    assert events == [
        UserSignInFailed(
            user_id=7, attempts=5, first_attempted_at=earlier, attempted_at=NOW, login_attempts=6
        )
    ]
    assert kept == domain.SignInFailures(recorded_at=NOW)


def test_a_clock_that_went_back_does_not_hold_failures_back() -> None:
    failures = domain.SignInFailures(recorded_at=NOW + timedelta(seconds=5))
    events, _ = sign_in(person(), password_ok=False, failures=failures)
    assert [e.attempts for e in events if isinstance(e, UserSignInFailed)] == [1]


def test_a_sign_in_records_the_failures_counted_before_it_first() -> None:
    earlier = NOW - timedelta(seconds=30)
    failures = domain.SignInFailures(
        unrecorded=counted(3, earlier, NOW - timedelta(seconds=1)),
        recorded_at=NOW - timedelta(seconds=40),
    )
    events, kept = sign_in(person(login_attempts=1), password_ok=True, failures=failures)
    assert events == [
        UserSignInFailed(
            user_id=7,
            attempts=3,
            first_attempted_at=earlier,
            attempted_at=NOW - timedelta(seconds=1),
            login_attempts=4,
        ),
        SIGNED_IN,
    ]
    assert kept == domain.SignInFailures(recorded_at=NOW)


@pytest.mark.parametrize(
    ("account", "password_ok", "hash_unchanged"),
    [
        (None, False, True),
        (None, True, True),
        (person(), True, False),  # the password changed while it was being checked
        (person(), False, False),  # ... a wrong password then is not counted either
    ],
)
def test_sign_in_refuses_a_missing_account_or_a_void_check_with_one_answer(
    account: domain.Account | None, password_ok: bool, hash_unchanged: bool
) -> None:
    failures = domain.SignInFailures(unrecorded=counted(2, NOW, NOW), recorded_at=NOW)
    with pytest.raises(PasswordMismatch) as caught:
        sign_in(account, password_ok=password_ok, hash_unchanged=hash_unchanged, failures=failures)
    assert caught.value.message == (
        "The combination of password and username you provided is invalid. If you have "
        "forgotten your password, visit /forgotten-password or get in touch with your "
        "instance administrator."
    )
    assert caught.value.status == 401
    assert caught.value.name == "PasswordMismatch"


@given(gaps=st.lists(st.integers(min_value=0, max_value=150), min_size=1, max_size=40))
def test_every_wrong_password_is_counted_once_and_records_are_a_minute_apart(
    gaps: list[int],
) -> None:
    """Wrong passwords `gaps` seconds apart, then a last record (the flush): the events stand
    for every attempt exactly once, in order, with the count rising, a minute apart at least."""
    failures, now, recorded, attempts = NONE, NOW, [], 0
    for gap in gaps:
        now += timedelta(seconds=gap)
        events, failures = sign_in(
            person(login_attempts=attempts), password_ok=False, failures=failures, now=now
        )
        for event in events:
            assert isinstance(event, UserSignInFailed)
            attempts = event.login_attempts
        recorded += events
    last = domain.record_failed_sign_ins(person(login_attempts=attempts), failures)
    recorded += [last] if last else []
    failed = [e for e in recorded if isinstance(e, UserSignInFailed)]
    assert sum(e.attempts for e in failed) == len(gaps)
    assert [e.login_attempts for e in failed] == [
        sum(e.attempts for e in failed[: i + 1]) for i in range(len(failed))
    ]
    for before, after in itertools.pairwise(failed[:-1] if last else failed):
        assert after.attempted_at - before.attempted_at >= MINUTE
    for event in failed:
        assert event.first_attempted_at <= event.attempted_at


def test_record_failed_sign_ins_records_what_was_counted() -> None:
    failures = domain.SignInFailures(
        unrecorded=counted(10, NOW - timedelta(seconds=59), NOW), recorded_at=NOW - MINUTE
    )
    assert domain.record_failed_sign_ins(person(login_attempts=1), failures) == UserSignInFailed(
        user_id=7,
        attempts=10,
        first_attempted_at=NOW - timedelta(seconds=59),
        attempted_at=NOW,
        login_attempts=11,
    )


@pytest.mark.parametrize(
    ("account", "failures"),
    [
        (person(), domain.SignInFailures(recorded_at=NOW)),  # nothing counted
        (None, domain.SignInFailures(unrecorded=counted(1, NOW, NOW))),  # deleted meanwhile
        (robot(), domain.SignInFailures(unrecorded=counted(1, NOW, NOW))),  # not a person
    ],
)
def test_record_failed_sign_ins_records_nothing_without_attempts_or_account(
    account: domain.Account | None, failures: domain.SignInFailures
) -> None:
    assert domain.record_failed_sign_ins(account, failures) is None


def test_failures_given_back_merge_with_those_counted_meanwhile() -> None:
    mine = domain.SignInFailures(
        unrecorded=counted(2, NOW, NOW + timedelta(seconds=5)), recorded_at=NOW
    )
    back = domain.SignInFailures(unrecorded=counted(3, NOW - timedelta(seconds=9), NOW))
    assert mine.merged(back) == domain.SignInFailures(
        unrecorded=counted(5, NOW - timedelta(seconds=9), NOW + timedelta(seconds=5)),
        recorded_at=NOW,
    )
    assert NONE.merged(back) == back
    assert mine.merged(NONE) == mine


def test_sign_out_ends_the_session_of_its_owner() -> None:
    assert domain.sign_out(7, "h") == UserSignedOut(user_id=7, session_hash="h")


def test_sign_out_of_an_unknown_session_records_nothing() -> None:
    assert domain.sign_out(None, "h") is None


# --- delete_inactive, new_users, import_users ---------------------------------------------------


def test_delete_inactive_deletes_the_users_as_they_were() -> None:
    users = [
        UserRecord(user_id=1, name="A", username=None, email="a@x.io", root_role=3, created_at=NOW),
        UserRecord(
            user_id=2,
            name=None,
            username="b",
            email=None,
            root_role=2,
            created_at=NOW,
            seen_at=NOW - timedelta(days=200),
        ),
    ]
    assert domain.delete_inactive(users, inactive_days=180, now=NOW) == UsersDeleted(
        users=users, inactive_days=180, deleted_at=NOW
    )


def test_delete_inactive_records_nothing_when_nobody_is_inactive() -> None:
    assert domain.delete_inactive([], inactive_days=180, now=NOW) is None


def test_deletions_decided_together_share_as_if_one_after_another() -> None:
    """domain.split_inactive (group commit): each deletion takes the inactive users it lists,
    except its caller and those an earlier one took."""
    users = {
        i: UserRecord(
            user_id=i, name=None, username=f"u{i}", email=None, root_role=3, created_at=NOW
        )
        for i in (1, 2, 3, 4)
    }
    shares = domain.split_inactive(
        [users[1], users[2], users[3], users[4]],
        [([2, 1, 1], -1), ([2, 3, 4], 4), ([4, 9], -1), ([], -1)],
    )
    assert shares == [[users[1], users[2]], [users[3]], [users[4]], []]
    assert domain.split_inactive([], [([1], -1)]) == [[]]


def test_new_users_skips_users_already_there_and_repeats_in_the_file() -> None:
    users = [
        imported(email="taken@x.io", username="fresh1"),
        imported(email="fresh@x.io", username="taken"),
        imported(email="new@x.io"),
        imported(email="new@x.io", username="other"),
        imported(username="solo"),
        imported(email="b@x.io", username="solo"),
        imported(email="c@x.io", username="Taken"),  # usernames are unique as written
    ]
    taken_emails, taken_usernames = {"taken@x.io"}, {"taken"}
    fresh = domain.new_users(users, taken_emails=taken_emails, taken_usernames=taken_usernames)
    assert fresh == [users[2], users[4], users[6]]
    assert (taken_emails, taken_usernames) == ({"taken@x.io"}, {"taken"})  # not changed


user_keys = st.one_of(st.none(), st.sampled_from(["a", "b", "c", "d"]))


@given(
    st.lists(st.tuples(user_keys, user_keys), max_size=12),
    st.sets(st.sampled_from(["a", "b"])),
    st.sets(st.sampled_from(["c", "d"])),
)
def test_new_users_keeps_a_subsequence_whose_emails_and_usernames_are_all_new(
    keys: list[tuple[str | None, str | None]], taken_emails: set[str], taken_usernames: set[str]
) -> None:
    users = [imported(email=e, username=u) for e, u in keys]
    fresh = domain.new_users(users, taken_emails=taken_emails, taken_usernames=taken_usernames)
    emails = [u.email for u in fresh if u.email]
    usernames = [u.username for u in fresh if u.username]
    assert len(emails) == len(set(emails))
    assert len(usernames) == len(set(usernames))
    assert not set(emails) & taken_emails
    assert not set(usernames) & taken_usernames
    kept = [i for i, user in enumerate(users) if any(user is f for f in fresh)]
    assert [users[i] for i in kept] == fresh  # a subsequence, in file order
    for i, user in enumerate(users):  # left out only for a clash with one taken or kept before
        if i in kept:
            continue
        before = [users[k] for k in kept if k < i]
        seen_emails = taken_emails | {u.email for u in before if u.email}
        seen_usernames = taken_usernames | {u.username for u in before if u.username}
        assert user.email in seen_emails or user.username in seen_usernames


def test_import_users_gives_each_user_its_id() -> None:
    users = [imported(email="a@x.io"), imported(username="b")]
    assert domain.import_users(users, ids=[11, 12], source="old.jsonl") == UsersImported(
        users=[imported(email="a@x.io", user_id=11), imported(username="b", user_id=12)],
        source="old.jsonl",
    )


def test_import_users_refuses_a_number_of_ids_that_does_not_match() -> None:
    with pytest.raises(ValueError, match="zip"):
        domain.import_users([imported(email="a@x.io")], ids=[1, 2], source="old.jsonl")


# --- service accounts ---------------------------------------------------------------------------


def test_create_service_account_stores_the_cleaned_fields() -> None:
    cmd = msgspec.json.decode(
        b'{"username": " ci-bot ", "name": " CI ", "rootRole": "editor"}',
        type=CreateServiceAccount,
    )
    event = domain.create_service_account(cmd, account_id=9, username_taken=False, now=NOW)
    assert event == ServiceAccountCreated(
        account_id=9, username="ci-bot", name="CI", root_role=2, created_at=NOW
    )


def test_create_service_account_refuses_a_blank_username_before_looking_it_up() -> None:
    with pytest.raises(ValidationError) as caught:
        domain.create_service_account(
            CreateServiceAccount(username="   ", root_role=9),
            account_id=9,
            username_taken=True,
            now=NOW,
        )
    assert caught.value.message == "username must not be blank - at `$.username`"


def test_create_service_account_refuses_a_taken_username_before_other_fields() -> None:
    with pytest.raises(NameExists) as caught:
        domain.create_service_account(
            CreateServiceAccount(username=" ci-bot ", name="\x00", root_role=9),
            account_id=9,
            username_taken=True,
            now=NOW,
        )
    assert caught.value.message == "A user or service account named ci-bot exists"
    assert caught.value.status == 409


@pytest.mark.parametrize(
    ("cmd", "message"),
    [
        (
            CreateServiceAccount(username="a\rb", root_role=1),
            "Control characters are not allowed - at `$.username`",
        ),
        (
            CreateServiceAccount(username="ci", name="\x00", root_role=1),
            "Control characters are not allowed - at `$.name`",
        ),
        (
            CreateServiceAccount(username="ci", root_role="root"),
            "Could not find rootRole=root; root roles are 1, 2, 3 - at `$.rootRole`",
        ),
    ],
)
def test_create_service_account_refuses_an_invalid_field(
    cmd: CreateServiceAccount, message: str
) -> None:
    with pytest.raises(ValidationError) as caught:
        domain.create_service_account(cmd, account_id=9, username_taken=False, now=NOW)
    assert caught.value.message == message


def test_update_service_account_records_the_account_after_the_change() -> None:
    cmd = UpdateServiceAccount(name=" Deploy bot ", root_role=1)
    assert domain.update_service_account(9, robot(), cmd) == ServiceAccountUpdated(
        account_id=9, name="Deploy bot", root_role=1
    )


@pytest.mark.parametrize(
    "cmd",
    [UpdateServiceAccount(), UpdateServiceAccount(name=" ", root_role="EDITOR")],
)
def test_update_service_account_records_nothing_when_nothing_changes(
    cmd: UpdateServiceAccount,
) -> None:
    assert domain.update_service_account(9, robot(), cmd) is None


@pytest.mark.parametrize("account", [None, person(account_id=9)])
def test_update_service_account_refuses_an_account_that_is_no_service_account(
    account: domain.Account | None,
) -> None:
    with pytest.raises(NotFound) as caught:
        domain.update_service_account(9, account, UpdateServiceAccount(root_role=99))
    assert caught.value.message == "Could not find service account with id 9"


def test_update_service_account_refuses_an_unknown_role() -> None:
    with pytest.raises(ValidationError) as caught:
        domain.update_service_account(9, robot(), UpdateServiceAccount(root_role=99))
    assert caught.value.message == (
        "Could not find rootRole=99; root roles are 1, 2, 3 - at `$.rootRole`"
    )


def test_delete_service_account_records_who_it_was() -> None:
    assert domain.delete_service_account(9, robot()) == ServiceAccountDeleted(
        account_id=9, username="ci-bot", name="CI bot"
    )


@pytest.mark.parametrize("account", [None, person(account_id=9)])
def test_delete_service_account_refuses_an_account_that_is_no_service_account(
    account: domain.Account | None,
) -> None:
    with pytest.raises(NotFound) as caught:
        domain.delete_service_account(9, account)
    assert caught.value.message == "Could not find service account with id 9"


# --- personal access tokens ---------------------------------------------------------------------


def test_create_personal_access_token_stores_the_hash_and_hint_never_the_secret() -> None:
    cmd = msgspec.json.decode(
        b'{"description": "  deploys ", "expiresAt": "2026-02-01T00:00:00Z"}',
        type=CreatePersonalAccessToken,
    )
    assert create_pat(cmd, person(), existing=["other"]) == PersonalAccessTokenCreated(
        token_id=42,
        user_id=7,
        description="deploys",
        secret_hash="f" * 64,
        secret_hint="user:abcd********",
        created_at=NOW,
        expires_at=datetime(2026, 2, 1, tzinfo=UTC),
    )


def test_create_personal_access_token_for_a_service_account() -> None:
    event = create_pat(pat_cmd(), robot(), account_type=domain.SERVICE_ACCOUNT)
    assert event == PersonalAccessTokenCreated(
        token_id=42,
        user_id=9,
        description="deploys",
        secret_hash="f" * 64,
        secret_hint="user:abcd********",
        created_at=NOW,
        expires_at=NOW + timedelta(days=30),
    )


@pytest.mark.parametrize(
    ("account", "account_type", "message"),
    [
        (None, domain.USER, "Could not find user with id 7"),
        (robot(account_id=7), domain.USER, "Could not find user with id 7"),
        (None, domain.SERVICE_ACCOUNT, "Could not find service account with id 9"),
        (person(account_id=9), domain.SERVICE_ACCOUNT, "Could not find service account with id 9"),
    ],
)
def test_create_personal_access_token_refuses_a_missing_owner_first(
    account: domain.Account | None, account_type: str, message: str
) -> None:
    with pytest.raises(NotFound) as caught:
        create_pat(pat_cmd(description=" ", expires_at=NOW), account, account_type=account_type)
    assert caught.value.message == message


def test_create_personal_access_token_refuses_a_blank_description() -> None:
    with pytest.raises(ValidationError) as caught:
        create_pat(pat_cmd(description="   ", expires_at=NOW), person())
    assert caught.value.message == "PAT description cannot be empty. - at `$.description`"


@pytest.mark.parametrize("expires_at", [NOW, NOW - timedelta(seconds=1)])
def test_create_personal_access_token_refuses_an_expiry_that_is_not_in_the_future(
    expires_at: datetime,
) -> None:
    with pytest.raises(ValidationError) as caught:
        create_pat(pat_cmd(expires_at=expires_at), person(), existing=["x"] * 10)
    assert caught.value.message == "The expiry date should be in future. - at `$.expiresAt`"


def test_create_personal_access_token_refuses_an_expiry_beyond_100_years() -> None:
    with pytest.raises(ValidationError) as caught:
        create_pat(pat_cmd(expires_at=NOW + timedelta(days=36525, seconds=1)), person())
    assert caught.value.message == "expiresAt must be within 100 years - at `$.expiresAt`"


def test_create_personal_access_token_accepts_an_expiry_of_exactly_100_years() -> None:
    expires_at = NOW + timedelta(days=36525)
    assert create_pat(pat_cmd(expires_at=expires_at), person()).expires_at == expires_at


def test_create_personal_access_token_refuses_an_eleventh_token_of_a_person() -> None:
    existing = [f"t{i}" for i in range(10)]
    assert create_pat(pat_cmd(), person(), existing=existing[:9]).description == "deploys"
    with pytest.raises(PatLimit) as caught:
        create_pat(pat_cmd(description="t0"), person(), existing=existing)
    assert caught.value.message == "Too many PATs (10) already exist for this user."
    assert caught.value.status == 403
    assert caught.value.name == "OperationDeniedError"


def test_create_personal_access_token_allows_a_service_account_1000_tokens() -> None:
    existing = [f"t{i}" for i in range(1000)]
    event = create_pat(
        pat_cmd(), robot(), account_type=domain.SERVICE_ACCOUNT, existing=existing[:999]
    )
    assert event.description == "deploys"
    with pytest.raises(PatLimit) as caught:
        create_pat(pat_cmd(), robot(), account_type=domain.SERVICE_ACCOUNT, existing=existing)
    assert caught.value.message == "Too many PATs (1000) already exist for this user."


def test_create_personal_access_token_refuses_a_description_the_account_already_uses() -> None:
    with pytest.raises(NameExists) as caught:
        create_pat(pat_cmd(description=" deploys  "), person(), existing=["deploys"])
    assert caught.value.message == "PAT description already exists."


def test_create_personal_access_token_checks_expiry_then_limit_then_description() -> None:
    full = ["deploys"] + [f"t{i}" for i in range(9)]
    with pytest.raises(ValidationError, match="expiry date"):
        create_pat(pat_cmd(expires_at=NOW), person(), existing=full)
    with pytest.raises(PatLimit):
        create_pat(pat_cmd(), person(), existing=full)


def test_delete_personal_access_token_revokes_a_token_of_the_account() -> None:
    event = domain.delete_personal_access_token(
        person(), account_id=7, account_type=domain.USER, token_id=42, token_exists=True
    )
    assert event == PersonalAccessTokenDeleted(token_id=42, user_id=7)


def test_delete_personal_access_token_refuses_a_token_the_account_does_not_have() -> None:
    with pytest.raises(NotFound) as caught:
        domain.delete_personal_access_token(
            robot(),
            account_id=9,
            account_type=domain.SERVICE_ACCOUNT,
            token_id=42,
            token_exists=False,
        )
    assert caught.value.message == "No PAT found."


def test_delete_personal_access_token_refuses_a_missing_owner_first() -> None:
    with pytest.raises(NotFound) as caught:
        domain.delete_personal_access_token(
            robot(account_id=7),
            account_id=7,
            account_type=domain.USER,
            token_id=42,
            token_exists=False,
        )
    assert caught.value.message == "Could not find user with id 7"


def test_record_token_use_records_the_last_use_of_each_token_in_token_order() -> None:
    later = NOW + timedelta(seconds=5)
    assert domain.record_token_use({30: NOW, 4: later, 12: NOW}) == PersonalAccessTokensSeen(
        seen=[
            TokenUse(token_id=4, seen_at=later),
            TokenUse(token_id=12, seen_at=NOW),
            TokenUse(token_id=30, seen_at=NOW),
        ]
    )


def test_record_token_use_records_nothing_when_no_token_was_used() -> None:
    assert domain.record_token_use({}) is None
