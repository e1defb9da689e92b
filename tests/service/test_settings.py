"""Settings from the environment: defaults, validation and clear messages."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

import pytest
from hypothesis import given
from hypothesis import strategies as st

from eventlog.errors import ConfigError
from service import embedded
from service.cli import embedded_pool
from service.settings import FILE_SETTINGS, Settings, load_settings
from tests import ROOT

if TYPE_CHECKING:
    from pathlib import Path


def test_defaults() -> None:
    settings = load_settings({"LOG_FORMAT": "json"})
    assert settings == Settings(log_format="json")
    assert (settings.host, settings.port, settings.data_dir) == ("127.0.0.1", 4242, ".data")
    assert settings.user_inactivity_threshold_in_days == 180
    assert settings.database_url is None
    assert settings.init_admin_api_tokens == ()


ONE, TWO = "*:*.one-" + "a" * 32, "*:*.two-" + "b" * 32


def test_values_are_read_and_converted() -> None:
    settings = load_settings(
        {
            "HOST": "0.0.0.0",
            "PORT": "8080",
            "DATABASE_URL": "postgresql://db/flags",
            "DATA_DIR": "/var/lib/flags",
            "INIT_ADMIN_API_TOKENS": f" {ONE}, {TWO}",
            "LOG_FORMAT": "console",
            "LOG_LEVEL": "DEBUG",
            "USER_INACTIVITY_THRESHOLD_IN_DAYS": "30",
        }
    )
    assert settings.port == 8080
    assert settings.init_admin_api_tokens == (
        "*:*.one-aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
        "*:*.two-bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb",
    )
    assert settings.log_level == "debug"
    assert settings.user_inactivity_threshold_in_days == 30


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("PORT", "http"),
        ("PORT", "70000"),
        ("LOG_FORMAT", "xml"),
        ("LOG_LEVEL", "loud"),
        ("USER_INACTIVITY_THRESHOLD_IN_DAYS", "0"),
        ("USER_INACTIVITY_THRESHOLD_IN_DAYS", "soon"),
    ],
)
def test_a_bad_value_names_the_variable(name: str, value: str) -> None:
    with pytest.raises(ConfigError, match=f"Invalid setting: {name}: "):
        load_settings({name: value})


@pytest.mark.parametrize("value", ["secret", "*:*.", "default:development.abc", "*:*.ok,bad"])
def test_init_admin_tokens_must_be_admin_tokens(value: str) -> None:
    with pytest.raises(ConfigError, match="INIT_ADMIN_API_TOKENS"):
        load_settings({"INIT_ADMIN_API_TOKENS": value})


@pytest.mark.parametrize("secret", ["x", "short-secret", "a" * 31])
def test_an_init_admin_token_shorter_than_32_characters_is_refused(secret: str) -> None:
    with pytest.raises(ConfigError, match=r"at least 32 characters .*unsalted sha256"):
        load_settings({"INIT_ADMIN_API_TOKENS": f"*:*.{'a' * 40},*:*.{secret}"})
    assert load_settings({"INIT_ADMIN_API_TOKENS": "*:*." + "a" * 32}).init_admin_api_tokens


@given(st.integers(min_value=0, max_value=65535))
def test_every_valid_port_is_accepted(port: int) -> None:
    assert load_settings({"PORT": str(port), "LOG_FORMAT": "json"}).port == port


def test_settings_are_frozen() -> None:
    settings = load_settings({"LOG_FORMAT": "json"})
    with pytest.raises(AttributeError):
        settings.port = 1  # type: ignore[misc]


# The `<NAME>_FILE` form of the secrets: a Kubernetes Secret mounted as a file.

URL = "postgresql://flagstore:s3cret-password@db.example:5432/flagstore"


def test_secrets_are_read_from_the_files_their_file_variables_name(tmp_path: Path) -> None:
    (tmp_path / "uri").write_text(URL + "\n")
    (tmp_path / "tokens").write_text(f"{ONE}\n{TWO}\n")
    settings = load_settings(
        {
            "DATABASE_URL_FILE": str(tmp_path / "uri"),
            "INIT_ADMIN_API_TOKENS_FILE": str(tmp_path / "tokens"),
            "LOG_FORMAT": "json",
        }
    )
    assert settings.database_url == URL
    assert settings.init_admin_api_tokens == (ONE, TWO)


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        (URL, URL),
        (URL + "\n", URL),
        (URL + "\r\n", URL),
        (f"  {URL}  \n", URL),  # as the plain variable's value: surrounding blanks go
    ],
)
def test_a_file_loses_its_trailing_newline(tmp_path: Path, content: str, expected: str) -> None:
    (tmp_path / "uri").write_bytes(content.encode())
    assert load_settings({"DATABASE_URL_FILE": str(tmp_path / "uri")}).database_url == expected


def test_comma_separated_tokens_in_a_file_work_too(tmp_path: Path) -> None:
    (tmp_path / "tokens").write_text(f"{ONE},{TWO}")
    env = {"INIT_ADMIN_API_TOKENS_FILE": str(tmp_path / "tokens")}
    assert load_settings(env).init_admin_api_tokens == (ONE, TWO)


@pytest.mark.parametrize("name", ["DATABASE_URL", "INIT_ADMIN_API_TOKENS"])
def test_setting_both_forms_is_an_error_naming_both(tmp_path: Path, name: str) -> None:
    (tmp_path / "secret").write_text(URL if name == "DATABASE_URL" else ONE)
    plain = URL if name == "DATABASE_URL" else ONE
    with pytest.raises(ConfigError) as caught:
        load_settings({name: plain, f"{name}_FILE": str(tmp_path / "secret")})
    assert f"{name} and {name}_FILE are both set" in str(caught.value)
    assert "s3cret" not in str(caught.value)


def test_an_empty_plain_variable_beside_the_file_counts_as_unset(tmp_path: Path) -> None:
    (tmp_path / "uri").write_text(URL)
    env = {"DATABASE_URL": "", "DATABASE_URL_FILE": str(tmp_path / "uri")}
    assert load_settings(env).database_url == URL
    assert load_settings({"DATABASE_URL": URL, "DATABASE_URL_FILE": ""}).database_url == URL


def test_an_unreadable_file_names_the_variable_and_the_path(tmp_path: Path) -> None:
    missing = tmp_path / "no-such-file"
    with pytest.raises(ConfigError) as caught:
        load_settings({"DATABASE_URL_FILE": str(missing)})
    message = str(caught.value)
    assert message.startswith("Invalid setting: DATABASE_URL_FILE: cannot read ")
    assert str(missing) in message
    assert "No such file or directory" in message
    with pytest.raises(ConfigError, match=r"INIT_ADMIN_API_TOKENS_FILE: cannot read .*directory"):
        load_settings({"INIT_ADMIN_API_TOKENS_FILE": str(tmp_path)})


@pytest.mark.parametrize(
    ("content", "reason"),
    [
        (b"", "is empty"),
        (b"\n", "is empty"),
        (b"postgresql://u:s3cret\xff@db/x", "is not UTF-8 text"),
        (b"postgresql://u:s3cret@db/" + b"x" * 70_000, "is larger than 65536 bytes"),
    ],
)
def test_a_file_that_holds_no_usable_value_is_an_error(
    tmp_path: Path, content: bytes, reason: str
) -> None:
    (tmp_path / "uri").write_bytes(content)
    with pytest.raises(ConfigError) as caught:
        load_settings({"DATABASE_URL_FILE": str(tmp_path / "uri")})
    assert str(caught.value) == (
        f"Invalid setting: DATABASE_URL_FILE: {str(tmp_path / 'uri')!r} {reason}"
    )


def test_a_bad_value_from_a_file_names_the_file_variable_never_the_content(
    tmp_path: Path,
) -> None:
    (tmp_path / "uri").write_text("mysql://root:s3cret@db/flags\n")
    with pytest.raises(ConfigError) as caught:
        load_settings({"DATABASE_URL_FILE": str(tmp_path / "uri")})
    assert str(caught.value).startswith("Invalid setting: DATABASE_URL_FILE: must be a postgres")
    assert "s3cret" not in str(caught.value)
    (tmp_path / "tokens").write_text("*:*.s3cret-but-short\n")
    with pytest.raises(ConfigError) as caught:
        load_settings({"INIT_ADMIN_API_TOKENS_FILE": str(tmp_path / "tokens")})
    assert str(caught.value).startswith("Invalid setting INIT_ADMIN_API_TOKENS_FILE: the secret")
    assert "s3cret" not in str(caught.value)


def test_only_the_secrets_have_a_file_form(tmp_path: Path) -> None:
    (tmp_path / "port").write_text("8080")
    assert load_settings({"PORT_FILE": str(tmp_path / "port")}).port == 4242
    assert FILE_SETTINGS == (
        "database_url",
        "init_admin_api_tokens",
        "pii_master_key",
        "pii_previous_master_keys",
    )


def test_every_file_form_is_in_the_readme() -> None:
    text = (ROOT / "README.md").read_text()
    assert [f for f in FILE_SETTINGS if f"`{f.upper()}_FILE`" not in text] == []


@pytest.mark.parametrize(
    ("url", "problem"),
    [
        ("postgresql://u:secret-pw@127.0.0.1:notaport/db", "a port in the URL is not a number"),
        ("postgresql://u:secret-pw@h:70000/db", "a port in the URL is not a number"),
        ("postgresql://u:secret-pw@h1:5432,h2:x/db", "a port in the URL is not a number"),
        ("postgresql://u:secret-pw@[::1/db", "not a valid URL"),
    ],
)
def test_a_database_url_that_cannot_be_parsed_stops_the_start_without_quoting_it(
    url: str, problem: str
) -> None:
    with pytest.raises(ConfigError) as caught:
        load_settings({"DATABASE_URL": url})
    assert str(caught.value).startswith(f"Invalid setting: DATABASE_URL: {problem}")
    assert "secret-pw" not in str(caught.value)


@pytest.mark.parametrize(
    "url",
    [
        "postgresql://u:pw@h1:5432,h2:5433/db",  # several hosts (libpq and asyncpg take them)
        "postgresql://u:pw@[::1]:5432/db",
        "postgresql:///db?host=/run/postgresql",
        "postgres://h/db",
    ],
)
def test_database_urls_asyncpg_takes_are_accepted(url: str) -> None:
    assert load_settings({"DATABASE_URL": url}).database_url == url


@pytest.mark.parametrize(("cores", "size"), [(1, 3), (2, 5), (4, 9), (64, 10)])
def test_the_embedded_server_gets_a_pool_of_twice_the_cores_plus_one(cores: int, size: int) -> None:
    """It shares the machine's cores with the service: at most the default of 10."""
    assert embedded.pool_size(cores) == size
    assert Settings().db_pool_size == embedded.POOL_MOST


def test_the_pool_size_set_or_a_server_elsewhere_keeps_its_pool() -> None:
    env = {"LOG_FORMAT": "json"}
    cores = len(os.sched_getaffinity(0))
    assert embedded_pool(load_settings(env), env).db_pool_size == embedded.pool_size(cores)
    with_size = {**env, "DB_POOL_SIZE": "7"}
    assert embedded_pool(load_settings(with_size), with_size).db_pool_size == 7
    elsewhere = {**env, "DATABASE_URL": "postgresql://u@db/flags"}
    assert embedded_pool(load_settings(elsewhere), elsewhere).db_pool_size == 10
