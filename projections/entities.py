"""What each read-model row is part of, for the audit's states and diffs: the entity it
belongs to (a flag, a user...), under which part of it, and which of its columns hold secrets
(hashes of tokens, sessions and passwords), which no state file or diff ever shows. Every
table of every projection is declared here (tests/audit/test_audit_states.py)."""

from __future__ import annotations

from typing import Final, NamedTuple

from projections import (
    accounts,
    activity,
    addons,
    api_tokens,
    applications,
    collaborators,
    context_fields,
    favorites,
    feature_types,
    features,
    flag_extras,
    instance_settings,
    invite_links,
    lead_times,
    preferences,
    project_activity,
    projects,
    search,
    segments,
    strategy_definitions,
    tag_types,
)


class Part(NamedTuple):
    """Rows of `table` belong to the entity `kind` named by `owner` (a column). `part` None:
    the entity's own row; else the rows are that part of it, each named by the rest of its
    key. `kind` "account": a user or a service account, as the users row says."""

    kind: str
    owner: str
    part: str | None = None
    secret: tuple[str, ...] = ()


PARTS: Final[dict[str, Part | None]] = {
    api_tokens.API_TOKENS.name: Part("api-token", "id", secret=("secret_hash",)),
    accounts.USERS.name: Part("account", "id"),
    accounts.USER_PASSWORDS.name: Part("account", "user_id", "password", ("password_hash",)),
    accounts.PERSONAL_ACCESS_TOKENS.name: Part("account", "user_id", "tokens", ("secret_hash",)),
    # Sessions are named by a secret's hash: not shown (a sign-in shows as the user's seen_at).
    accounts.SESSIONS.name: None,
    # Reset links likewise: named by a secret's hash, and short-lived.
    accounts.PASSWORD_RESET_TOKENS.name: None,
    projects.ENVIRONMENTS.name: Part("environment", "name"),
    projects.PROJECTS.name: Part("project", "id"),
    projects.PROJECT_ENVIRONMENTS.name: Part("project", "project_id", "environments"),
    segments.SEGMENTS.name: Part("segment", "id"),
    features.FEATURES.name: Part("flag", "name"),
    features.FEATURE_ENVIRONMENTS.name: Part("flag", "feature_name", "environments"),
    features.FEATURE_STRATEGIES.name: Part("flag", "feature_name", "strategies"),
    features.FEATURE_TAGS.name: Part("flag", "feature_name", "tags"),
    features.FEATURE_DEPENDENCIES.name: Part("flag", "child", "dependencies"),
    tag_types.TAG_TYPES.name: Part("tag-type", "name"),
    tag_types.TAGS.name: Part("tag-type", "type", "tags"),
    feature_types.FEATURE_TYPES.name: Part("feature-type", "id"),
    strategy_definitions.STRATEGY_DEFINITIONS.name: Part("strategy-type", "name"),
    strategy_definitions.STRATEGY_DEPRECATIONS.name: Part("strategy-type", "name", "deprecation"),
    context_fields.CONTEXT_FIELDS.name: Part("context-field", "name"),
    favorites.FAVORITE_FEATURES.name: Part("account", "user_id", "favoriteFlags"),
    favorites.FAVORITE_PROJECTS.name: Part("account", "user_id", "favoriteProjects"),
    search.FEATURE_CREATORS.name: Part("flag", "feature_name", "creator"),
    # Counts per actor and day (reporting), not the state of anything.
    activity.ACTIVITY_DAILY.name: None,
    project_activity.PROJECT_ACTIVITY_DAILY.name: None,
    # Who changed each flag: the log's authors, not the flag's state (every change of a flag
    # would show there a second time).
    collaborators.FEATURE_COLLABORATORS.name: None,
    preferences.USER_SPLASHES.name: Part("account", "user_id", "splashes"),
    preferences.USER_FEEDBACK.name: Part("account", "user_id", "feedback"),
    flag_extras.FEATURE_LINKS.name: Part("flag", "feature_name", "links"),
    flag_extras.FEATURE_LIFECYCLE.name: Part("flag", "feature_name", "lifecycle"),
    # Which versions of a flag's stream first enabled it where: what its lifecycle's times are
    # read from, not its state (the enablings show in `environments`).
    flag_extras.FEATURE_FIRST_ENABLED.name: None,
    invite_links.INVITE_LINKS.name: Part("invite-link", "id", secret=("secret_hash",)),
    invite_links.INVITE_LINK_USERS.name: Part("invite-link", "link_id", "users"),
    instance_settings.MAINTENANCE_MODE.name: Part("setting", "id"),
    instance_settings.FRONTEND_SETTINGS.name: Part("setting", "id"),
    applications.APPLICATIONS.name: Part("application", "app_name"),
    # An integration's secrets are sealed with its key, which only delivery opens.
    addons.ADDONS.name: Part("addon", "id", secret=("sealed",)),
    # When flags were first enabled: read from the log's times, not a flag's state.
    lead_times.FEATURE_LEAD_TIMES.name: None,
}
# Secret columns of tables that are no entity's part, left out of state files all the same.
SECRET: Final[dict[str, tuple[str, ...]]] = {accounts.SESSIONS.name: ("session_hash",)}


def secret_columns(table: str) -> tuple[str, ...]:
    part = PARTS[table]
    return part.secret if part is not None else SECRET.get(table, ())
