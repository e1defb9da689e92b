"""Unleash's frontendApiFeaturesSchema: the flags enabled for one context, each with the variant
it resolves to (the shape Unleash's browser SDKs read). The variant carries both
`feature_enabled` and its deprecated twin `featureEnabled`, as Unleash's answers do."""

from __future__ import annotations

from typing import Literal

import msgspec


class FrontendPayload(msgspec.Struct, frozen=True, kw_only=True):
    type: str
    value: str


class FrontendVariant(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """`payload` is left out when the variant has none."""

    name: str
    enabled: bool
    payload: FrontendPayload | None = None
    feature_enabled: bool
    featureEnabled: bool  # noqa: N815 - Unleash's field name, beside feature_enabled


class FrontendFeature(msgspec.Struct, frozen=True, kw_only=True, rename="camel"):
    name: str
    enabled: Literal[True]  # only flags enabled for the context are listed
    variant: FrontendVariant
    impression_data: bool


class FrontendFeatures(msgspec.Struct, frozen=True, kw_only=True):
    """GET and POST /api/frontend, in name order."""

    toggles: list[FrontendFeature]
