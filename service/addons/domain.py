"""Integrations: pure decisions, no I/O. A decision sees every parameter in plain text (the
handler opens the stored secrets first) and seals the secret ones with the function it is
given, which is deterministic: an unchanged secret seals to the text it had."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Final, Protocol

import msgspec

from eventlog.events.addons import AddonCreated, AddonDeleted, AddonUpdated, ParameterValue
from service.addons import providers
from service.errors import NotFound, ValidationError

if TYPE_CHECKING:
    from datetime import datetime

    from service.addons.commands import SaveAddon

MASK: Final = "*****"  # what answers show for a secret, and what a save gives to keep one
SIGNING_SECRET: Final = "signingSecret"  # every integration's HMAC key, sealed like a secret
ALL: Final = "*"

Seal = Callable[[str, str], str]  # (parameter name, plain value) -> sealed text


class Row(Protocol):
    """A row as the database driver gives it (asyncpg's Record), read by column name."""

    def __getitem__(self, key: str, /) -> Any: ...


class Addon(msgspec.Struct, frozen=True, kw_only=True):
    """An integration as decisions need it (its row, locked), secrets still sealed."""

    id: int
    provider: str
    description: str | None
    enabled: bool
    parameters: dict[str, ParameterValue]
    sealed: dict[str, str]
    events: list[str]
    projects: list[str]
    environments: list[str]

    @classmethod
    def from_row(cls, row: Row) -> Addon:
        """From a row of queries.GET_ADDON (its jsonb columns as text)."""
        return cls(
            id=row["id"],
            provider=row["provider"],
            description=row["description"],
            enabled=row["enabled"],
            parameters=_parameters.decode(row["parameters"]),
            sealed=_sealed.decode(row["sealed"]),
            events=list(row["events"]),
            projects=list(row["projects"]),
            environments=list(row["environments"]),
        )


_parameters = msgspec.json.Decoder(dict[str, ParameterValue])
_sealed = msgspec.json.Decoder(dict[str, str])


STREAM_TYPE = "addon"


def stream(addon_id: int) -> tuple[str, str]:
    return (STREAM_TYPE, str(addon_id))


def addon_missing() -> NotFound:
    return NotFound("Could not find the integration (addon) with that id")


def given_parameters(
    cmd: SaveAddon, opened: Mapping[str, str] | None = None
) -> dict[str, ParameterValue]:
    """The parameters a save means: a secret given as `*****` is the stored one (`opened`,
    the stored secrets in plain text); one that is not stored is left out."""
    opened = opened or {}
    meant: dict[str, ParameterValue] = {}
    for name, value in cmd.parameters.items():
        if value == MASK:
            if name in opened:
                meant[name] = opened[name]
        else:
            meant[name] = value
    return meant


def _checked(cmd: SaveAddon, parameters: Mapping[str, ParameterValue]) -> providers.Provider:
    provider = providers.provider(cmd.provider)
    if provider is None:
        known = ", ".join(p.name for p in providers.PROVIDERS)
        raise ValidationError(f"Unknown addon provider {cmd.provider} (known: {known})")
    names = {p.name for p in provider.parameters}
    unknown = sorted(set(parameters) - names - {SIGNING_SECRET})
    if unknown:
        raise ValidationError(
            f"Unknown parameters for {provider.name}: {', '.join(unknown)} - at `$.parameters`"
        )
    missing = [
        name
        for name in providers.required(provider.name)
        if str(parameters.get(name, "")).strip() == ""
    ]
    if missing:
        raise ValidationError(f"Missing required parameters: {','.join(missing)}")
    wrong = [e for e in cmd.events if e not in provider.events]
    if wrong:
        raise ValidationError(
            f"{provider.name} does not send {', '.join(wrong)}: it sends "
            f"{', '.join(provider.events)} - at `$.events`"
        )
    return provider


def _split(
    provider: providers.Provider,
    parameters: Mapping[str, ParameterValue],
    signing_secret: str,
    seal: Seal,
) -> tuple[dict[str, ParameterValue], dict[str, str]]:
    """The plain parameters and the sealed ones (the provider's secrets, the signing key)."""
    secret = providers.sensitive(provider.name)
    plain = {k: v for k, v in sorted(parameters.items()) if k not in secret and k != SIGNING_SECRET}
    sealed = {k: seal(k, str(v)) for k, v in sorted(parameters.items()) if k in secret}
    sealed[SIGNING_SECRET] = seal(SIGNING_SECRET, signing_secret)
    return plain, sealed


def _listed(names: list[str]) -> list[str]:
    """Names without repeats, in the order given; `["*"]` stands for all, as an empty list."""
    unique = list(dict.fromkeys(n.strip() for n in names if n.strip()))
    return [] if ALL in unique else unique


def _configuration(
    cmd: SaveAddon,
    provider: providers.Provider,
    parameters: Mapping[str, ParameterValue],
    signing_secret: str,
    seal: Seal,
) -> dict[str, Any]:
    """The fields a save sets, in AddonCreated and AddonUpdated alike; the signing key is the
    one given, else `signing_secret` (a new one, or the stored one)."""
    given = str(parameters.get(SIGNING_SECRET, "")).strip()
    plain, sealed = _split(provider, parameters, given or signing_secret, seal)
    return {
        "description": cmd.description,
        "enabled": cmd.enabled,
        "parameters": plain,
        "sealed": sealed,
        "events": list(dict.fromkeys(cmd.events)),
        "projects": _listed(cmd.projects),
        "environments": _listed(cmd.environments),
    }


def create_addon(  # noqa: PLR0913 - the save, and what it is made with
    cmd: SaveAddon,
    parameters: Mapping[str, ParameterValue],
    *,
    addon_id: int,
    new_secret: str,
    seal: Seal,
    now: datetime,
) -> AddonCreated:
    """`POST /api/admin/addons`. parameters: `given_parameters(cmd)`; new_secret: the signing
    key when none is given."""
    provider = _checked(cmd, parameters)
    saved = _configuration(cmd, provider, parameters, new_secret, seal)
    return AddonCreated(addon_id=addon_id, provider=provider.name, created_at=now, **saved)


def update_addon(
    addon: Addon | None,
    cmd: SaveAddon,
    parameters: Mapping[str, ParameterValue],
    *,
    signing_secret: str,
    seal: Seal,
) -> AddonUpdated | None:
    """`PUT /api/admin/addons/{id}`; None when nothing changes. parameters:
    `given_parameters(cmd, opened)`; signing_secret: the stored one, kept unless a new one is
    given."""
    if addon is None:
        raise addon_missing()
    if cmd.provider != addon.provider:
        raise ValidationError(
            f"An integration's provider does not change: this one is {addon.provider} "
            "- at `$.provider`"
        )
    provider = _checked(cmd, parameters)
    saved = _configuration(cmd, provider, parameters, signing_secret, seal)
    event = AddonUpdated(addon_id=addon.id, **saved)
    unchanged = (
        event.description == addon.description
        and event.enabled == addon.enabled
        and event.parameters == addon.parameters
        and event.sealed == addon.sealed
        and event.events == addon.events
        and event.projects == addon.projects
        and event.environments == addon.environments
    )
    return None if unchanged else event


def delete_addon(addon: Addon | None) -> AddonDeleted | None:
    """`DELETE /api/admin/addons/{id}`: None for one that does not exist (Unleash answers 200
    to that too)."""
    return None if addon is None else AddonDeleted(addon_id=addon.id)


def shown_parameters(
    provider: str,
    parameters: Mapping[str, ParameterValue],
    sealed: Mapping[str, str],
    *,
    signing_secret: str | None = None,
) -> dict[str, ParameterValue]:
    """Parameters as answers show them: secrets as `*****`, the signing key only to a
    provider that lists it, and in plain text only when given (the answer that creates it)."""
    definition = providers.provider(provider)
    named = {p.name for p in definition.parameters} if definition is not None else set()
    shown: dict[str, ParameterValue] = dict(parameters)
    for name in sealed:
        if name in named:
            shown[name] = MASK
    if signing_secret is not None and SIGNING_SECRET in named:
        shown[SIGNING_SECRET] = signing_secret
    return dict(sorted(shown.items()))
