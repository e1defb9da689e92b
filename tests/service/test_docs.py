"""The docs stay true: every event type is documented, every setting is in the README."""

from __future__ import annotations

from eventlog.codec import EVENT_TYPES
from service.settings import Settings
from tests import ROOT


def test_every_event_type_is_documented() -> None:
    text = (ROOT / "docs" / "events.md").read_text()
    missing = [name for name in sorted(EVENT_TYPES) if f"### {name}\n" not in text]
    assert missing == []
    for name, cls in EVENT_TYPES.items():
        for field in cls.__struct_fields__:
            assert f"`{field}`" in text, f"{name}.{field} is not documented"


def test_every_setting_is_in_the_readme() -> None:
    text = (ROOT / "README.md").read_text()
    missing = [f for f in Settings.__struct_fields__ if f"`{f.upper()}`" not in text]
    assert missing == []


def test_readme_starts_with_the_two_commands() -> None:
    head = (ROOT / "README.md").read_text()[:300]
    assert "make run" in head
    assert "make test" in head
