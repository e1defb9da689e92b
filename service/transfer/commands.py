"""Request bodies of /api/admin/features-batch: what to export (Unleash's exportQuerySchema), and
an export file to import or check (importTogglesSchema: its `data` is exportResultSchema, read
as Unleash's own files hold it). Unknown fields are ignored, never honoured.

A file read outside HTTP (`python -m service import-unleash --file`) is read with the same
Structs (`read_file`), so it meets the same rules."""

from __future__ import annotations

import re
from typing import Annotated, ClassVar, Final

import msgspec

from service.context.commands import LegalValue
from service.errors import ValidationError
from service.features.commands import (
    Constraint,
    DependencyBody,
    Short,
    SortOrder,
    StrategyVariant,
    Value,
    Variant,
)

# A file's lists: as long as a large installation's export (the 1 MiB request limit is the
# tighter bound over HTTP; a file read from disk has only these).
MAX_FLAGS: Final = 100_000
MAX_ITEMS: Final = 1_000_000
Text = Annotated[str, msgspec.Meta(max_length=10_000)]
Flags = Annotated[list[Short], msgspec.Meta(max_length=MAX_FLAGS)]


class ExportQuery(msgspec.Struct, frozen=True, kw_only=True, rename="camel"):
    """Which flags, from which environment: by `tag` (a tag value, of any type), else by name
    (`features`; an empty list: every active flag), else every active flag of `project`."""

    example: ClassVar[dict[str, object]] = {
        "environment": "development",
        "features": ["new-checkout"],
        "downloadFile": False,
    }

    environment: Short
    download_file: bool = False
    features: Flags | None = None
    tag: Short | None = None
    project: Short | None = None

    def __post_init__(self) -> None:
        if self.features is None and self.tag is None and self.project is None:
            # Unleash's schema is anyOf: `features`, `tag` or `project` is required.
            raise ValueError(
                "Name the flags to export: `features` (an empty list: every flag), `tag` or"
                " `project` - at `$`"
            )


class FileFeature(msgspec.Struct, frozen=True, kw_only=True, rename="camel"):
    """A flag (Unleash's featureSchema as an export holds it). Its `project` and `archived`
    are the source's: an import puts the flag into the project it names and leaves it active."""

    name: Short
    type: Short = "release"
    description: Text | None = None
    project: Short | None = None
    stale: bool = False
    impression_data: bool = False
    archived: bool = False


class FileStrategy(msgspec.Struct, frozen=True, kw_only=True, rename="camel"):
    """A strategy of a flag in the file's environment (featureStrategySchema). `segments` are
    the source's ids, found here through the file's `segments` by name; `sortOrder`, which
    Unleash's own export leaves out, defaults to the strategy's place among the flag's."""

    name: Short
    feature_name: Short
    id: Short | None = None
    title: Annotated[str, msgspec.Meta(max_length=1000)] | None = None
    disabled: bool | None = False
    sort_order: SortOrder | None = None
    segments: Annotated[list[int], msgspec.Meta(max_length=100)] = []
    constraints: Annotated[list[Constraint], msgspec.Meta(max_length=100)] = []
    variants: Annotated[list[StrategyVariant], msgspec.Meta(max_length=100)] = []
    parameters: dict[Short, Value] = {}


class FileEnvironment(msgspec.Struct, frozen=True, kw_only=True, rename="camel"):
    """A flag's switch and variants in the file's environment (featureEnvironmentSchema):
    `name` is the flag's, as in Unleash's files; `featureName` wins when both are given."""

    name: Short
    enabled: bool
    feature_name: Short | None = None
    environment: Short | None = None
    variants: Annotated[list[Variant], msgspec.Meta(max_length=100)] = []

    @property
    def feature(self) -> str:
        return self.feature_name or self.name


class FileContextField(msgspec.Struct, frozen=True, kw_only=True, rename="camel"):
    """A context field the flags use (contextFieldSchema)."""

    name: Short
    description: Text | None = None
    stickiness: bool = False
    sort_order: SortOrder = 0
    legal_values: Annotated[list[LegalValue], msgspec.Meta(max_length=1000)] = []


class FileTag(msgspec.Struct, frozen=True, kw_only=True, rename="camel"):
    """A tag of a flag (featureTagSchema); `type` and `value` are its deprecated names."""

    feature_name: Short
    tag_value: Short | None = None
    tag_type: Short | None = None
    type: Short | None = None
    value: Short | None = None

    @property
    def kind(self) -> str | None:
        return self.tag_type or self.type

    @property
    def text(self) -> str | None:
        return self.value if self.tag_value is None else self.tag_value


class FileSegment(msgspec.Struct, frozen=True, kw_only=True):
    """A segment the strategies use, by the source's id and its name (no constraints: a file
    names segments, which must exist here by name)."""

    id: int
    name: Short


class FileTagType(msgspec.Struct, frozen=True, kw_only=True):
    name: Short
    description: Text | None = None
    icon: Annotated[str, msgspec.Meta(max_length=255)] | None = None
    color: Annotated[str, msgspec.Meta(max_length=100)] | None = None


class FileDependencies(msgspec.Struct, frozen=True, kw_only=True):
    """A flag's parents (featureDependenciesSchema)."""

    feature: Short
    dependencies: Annotated[list[DependencyBody], msgspec.Meta(max_length=100)]


class ExportData(msgspec.Struct, frozen=True, kw_only=True, rename="camel"):
    """An export file: what one environment holds of the flags it lists."""

    features: Annotated[list[FileFeature], msgspec.Meta(max_length=MAX_FLAGS)]
    feature_strategies: Annotated[list[FileStrategy], msgspec.Meta(max_length=MAX_ITEMS)]
    tag_types: Annotated[list[FileTagType], msgspec.Meta(max_length=MAX_ITEMS)]
    feature_environments: Annotated[list[FileEnvironment], msgspec.Meta(max_length=MAX_FLAGS)] = []
    context_fields: Annotated[list[FileContextField], msgspec.Meta(max_length=MAX_ITEMS)] = []
    feature_tags: Annotated[list[FileTag], msgspec.Meta(max_length=MAX_ITEMS)] = []
    segments: Annotated[list[FileSegment], msgspec.Meta(max_length=MAX_ITEMS)] = []
    dependencies: Annotated[list[FileDependencies], msgspec.Meta(max_length=MAX_FLAGS)] = []


class ImportToggles(msgspec.Struct, frozen=True, kw_only=True):
    """An export file and where it goes: the project its flags are created or updated in, and
    the environment whose strategies, switches and variants it sets."""

    example: ClassVar[dict[str, object]] = {
        "project": "default",
        "environment": "development",
        "data": {
            "features": [{"name": "new-checkout", "type": "release", "project": "default"}],
            "featureStrategies": [
                {
                    "name": "flexibleRollout",
                    "featureName": "new-checkout",
                    "parameters": {"rollout": "50", "stickiness": "default", "groupId": "x"},
                }
            ],
            "featureEnvironments": [
                {"name": "new-checkout", "featureName": "new-checkout", "enabled": True}
            ],
            "tagTypes": [],
        },
    }

    project: Short
    environment: Short
    data: ExportData


_file = msgspec.json.Decoder(ExportData)
# PostgreSQL text cannot hold NUL: its JSON escape (not an escaped backslash before it).
_NUL_ESCAPE = re.compile(rb"(?<!\\)(?:\\\\)*\\u0000")


def read_file(content: bytes) -> ExportData:
    """An export file's JSON (Unleash's or ours) as the import reads it; a file that is not one
    is a ValidationError naming the JSON path, as the request body's would be."""
    if _NUL_ESCAPE.search(content):
        raise ValidationError("Strings may not contain the NUL character (\\u0000)")
    try:
        return _file.decode(content)
    except msgspec.DecodeError as exc:  # ValidationError is a DecodeError
        raise ValidationError(str(exc)) from None
