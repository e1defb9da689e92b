"""Settings from the environment: defaults, validation and clear messages."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from service.errors import ConfigError
from service.settings import Settings, load_settings


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
