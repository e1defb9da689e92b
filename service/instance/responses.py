"""Response bodies of the instance's settings and statistics (Unleash's maintenanceSchema,
instanceAdminStatsSchema, telemetrySettingsSchema), built here and only here."""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import msgspec

if TYPE_CHECKING:
    import asyncpg


class Maintenance(msgspec.Struct, frozen=True, kw_only=True):
    enabled: bool


class TelemetrySettings(msgspec.Struct, frozen=True, kw_only=True, rename="camel"):
    """Nothing about this instance is ever sent anywhere: both collections are off."""

    version_info_collection_enabled: bool = False
    feature_info_collection_enabled: bool = False


class ActiveUsers(msgspec.Struct, frozen=True, kw_only=True):
    last7: int
    last30: int
    last60: int
    last90: int


class ProductionChanges(msgspec.Struct, frozen=True, kw_only=True):
    last30: int = 0
    last60: int = 0
    last90: int = 0


class ClientApps(msgspec.Struct, frozen=True, kw_only=True):
    range: str
    count: int


class MetricsBuckets(msgspec.Struct, frozen=True, kw_only=True, rename="camel"):
    enabled_count: int
    variant_count: int


class InstanceStats(msgspec.Struct, frozen=True, kw_only=True, rename="camel"):
    """Unleash's instanceAdminStatsSchema, in its order. What this service has no counterpart
    of is 0 or false, as Unleash's open-source edition shows it: licensed users, groups, custom
    root roles, SAML, OIDC, SCIM, flag exports and imports (issue 44), and the changes in
    production environments (Unleash counts them in a table of its own; here only the log
    holds them, and reads never read the log)."""

    timestamp: datetime
    instance_id: str
    version_oss: str = msgspec.field(name="versionOSS")
    version_enterprise: str = ""
    users: int
    service_accounts: int
    api_tokens: dict[str, int]
    active_users: ActiveUsers
    licensed_users: int = 0
    feature_toggles: int
    archived_feature_toggles: int
    projects: int
    context_fields: int
    roles: int
    custom_root_roles: int = 0
    custom_root_roles_in_use: int = 0
    groups: int = 0
    environments: int
    segments: int
    strategies: int
    saml_enabled: bool = msgspec.field(default=False, name="SAMLenabled")
    oidc_enabled: bool = msgspec.field(default=False, name="OIDCenabled")
    password_auth_enabled: bool = True
    scim_enabled: bool = msgspec.field(default=False, name="SCIMenabled")
    client_apps: list[ClientApps]
    feature_exports: int = 0
    feature_imports: int = 0
    production_changes: ProductionChanges = msgspec.field(default_factory=ProductionChanges)
    previous_day_metrics_buckets_count: MetricsBuckets
    max_environment_strategies: int
    max_constraint_values: int
    max_constraints: int
    sum: str

    @classmethod
    def from_row(  # noqa: PLR0913 - the row and what is not in the read models
        cls,
        row: asyncpg.Record,
        *,
        instance_id: str,
        version: str,
        roles: int,
        context_fields: int,
        strategies: int,
    ) -> InstanceStats:
        counts = {
            "users": row["users"],
            "flags": row["flags"],
            "projects": row["projects"],
            "roles": roles,
            "groups": 0,
            "environments": row["environments"],
            "segments": row["segments"],
        }
        return cls(
            timestamp=datetime.now(UTC),
            instance_id=instance_id,
            version_oss=version,
            users=row["users"],
            service_accounts=row["service_accounts"],
            api_tokens=msgspec.json.decode(row["api_tokens"], type=dict[str, int]),
            active_users=ActiveUsers(
                last7=row["active_7"],
                last30=row["active_30"],
                last60=row["active_60"],
                last90=row["active_90"],
            ),
            feature_toggles=row["flags"],
            archived_feature_toggles=row["archived_flags"],
            projects=row["projects"],
            context_fields=context_fields,
            roles=roles,
            environments=row["environments"],
            segments=row["segments"],
            strategies=strategies,
            client_apps=[
                ClientApps(range="7d", count=row["apps_7"]),
                ClientApps(range="30d", count=row["apps_30"]),
                ClientApps(range="allTime", count=row["apps_all"]),
            ],
            previous_day_metrics_buckets_count=MetricsBuckets(
                enabled_count=row["enabled_buckets"], variant_count=row["variant_buckets"]
            ),
            max_environment_strategies=row["max_environment_strategies"],
            max_constraint_values=row["max_constraint_values"],
            max_constraints=row["max_constraints"],
            sum=signature(instance_id, counts),
        )

    def csv(self) -> str:
        """One header line and one line of values, as Unleash's json2csv writes them: every
        name and text quoted, numbers and booleans bare, objects and lists as their JSON."""
        shown: dict[str, Any] = msgspec.to_builtins(self)
        header = ",".join(_quoted(name) for name in shown)
        return header + "\n" + ",".join(_cell(value) for value in shown.values())


def signature(instance_id: str, counts: dict[str, int]) -> str:
    """Unleash's `sum`: the sha256 of the instance id and these counts, in this order, so that
    a report's figures can be told apart from edited ones."""
    text = instance_id + "".join(str(counts[k]) for k in SIGNED)
    return hashlib.sha256(text.encode()).hexdigest()


SIGNED = ("users", "flags", "projects", "roles", "groups", "environments", "segments")


def _quoted(text: str) -> str:
    return '"' + text.replace('"', '""') + '"'


def _cell(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return str(value)
    if isinstance(value, str):
        return _quoted(value)
    return _quoted(msgspec.json.encode(value).decode())
