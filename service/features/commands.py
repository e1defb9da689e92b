"""Request bodies of the feature routes. Unknown fields are ignored, never honoured."""

from __future__ import annotations

from typing import Annotated, Literal

import msgspec

FeatureType = Literal["experiment", "kill-switch", "release", "operational", "permission"]
Description = Annotated[str, msgspec.Meta(max_length=10_000)]


class CreateFeature(msgspec.Struct, frozen=True, kw_only=True, rename="camel"):
    name: str
    type: FeatureType = "release"
    description: Description | None = None
    impression_data: bool = False


class ReviveFeatures(msgspec.Struct, frozen=True, kw_only=True):
    features: Annotated[list[str], msgspec.Meta(min_length=1, max_length=1000)]
