"""Request bodies of the integration routes (Unleash's addonCreateUpdateSchema).

Each Struct's `example` is the request body the OpenAPI document shows (service/openapi.py).
"""

from __future__ import annotations

from typing import Annotated, ClassVar

import msgspec

Name = Annotated[str, msgspec.Meta(min_length=1, max_length=100)]
Description = Annotated[str, msgspec.Meta(max_length=1000)]
ParameterName = Annotated[str, msgspec.Meta(min_length=1, max_length=100)]
# A template or a set of headers is text of some length; a URL is checked apart.
ParameterText = Annotated[str, msgspec.Meta(max_length=65_536)]
# Every provider's parameters are text, as Unleash's UI sends them; a number or a switch would
# be stored and then read as absent at delivery, so it is refused when saved.
Parameter = ParameterText
Listed = Annotated[str, msgspec.Meta(min_length=1, max_length=255)]
Names = Annotated[list[Listed], msgspec.Meta(max_length=1000)]


class SaveAddon(msgspec.Struct, frozen=True, kw_only=True):
    """`POST /api/admin/addons` and `PUT /api/admin/addons/{id}`. A secret parameter given as
    `*****` (what the answers show) keeps its stored value; the provider of an integration
    never changes. Empty `projects` or `environments` (or `["*"]`) mean all."""

    example: ClassVar[dict[str, object]] = {
        "provider": "webhook",
        "enabled": True,
        "description": "Tell our deploy bot",
        "parameters": {"url": "https://hooks.example.com/unleash"},
        "events": ["feature-created", "feature-environment-enabled"],
        "projects": ["*"],
        "environments": ["*"],
    }
    # Required as in Unleash's schema: a save that leaves `enabled` out must not switch an
    # integration on.
    provider: Name
    enabled: bool
    description: Description | None = None
    parameters: Annotated[dict[ParameterName, Parameter], msgspec.Meta(max_length=50)]
    events: Names
    projects: Names = []
    environments: Names = []
