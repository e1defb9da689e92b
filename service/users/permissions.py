"""Unleash's permissions as its access overview lists them (id, name, what the UI shows), by
scope, in its order: what GET /api/admin/user-admin/:id/permissions says a user holds. Whether
a user holds one is what the user's root role lets them do here (service/auth.py: Admin holds
every one, a name this service does not enforce is held by nobody else)."""

from __future__ import annotations

from typing import Final

from service import auth

ROOT: Final = (
    (1, "ADMIN", "Admin"),
    (3, "CREATE_STRATEGY", "Create activation strategies"),
    (4, "CREATE_ADDON", "Create addons"),
    (5, "DELETE_ADDON", "Delete addons"),
    (6, "UPDATE_ADDON", "Update addons"),
    (9, "UPDATE_APPLICATION", "Update applications"),
    (10, "UPDATE_TAG_TYPE", "Update tag types"),
    (11, "DELETE_TAG_TYPE", "Delete tag types"),
    (12, "CREATE_PROJECT", "Create projects"),
    (15, "UPDATE_STRATEGY", "Update strategies"),
    (16, "DELETE_STRATEGY", "Delete strategies"),
    (17, "UPDATE_CONTEXT_FIELD", "Update context fields"),
    (18, "CREATE_CONTEXT_FIELD", "Create context fields"),
    (19, "DELETE_CONTEXT_FIELD", "Delete context fields"),
    (20, "READ_ROLE", "Read roles"),
    (50, "CREATE_CLIENT_API_TOKEN", "Create CLIENT API tokens"),
    (31, "CREATE_SEGMENT", "Create segments"),
    (32, "UPDATE_SEGMENT", "Edit segments"),
    (33, "DELETE_SEGMENT", "Delete segments"),
    (51, "UPDATE_CLIENT_API_TOKEN", "Update CLIENT API tokens"),
    (52, "DELETE_CLIENT_API_TOKEN", "Delete CLIENT API tokens"),
    (53, "READ_CLIENT_API_TOKEN", "Read CLIENT API tokens"),
    (54, "CREATE_FRONTEND_API_TOKEN", "Create FRONTEND API tokens"),
    (55, "UPDATE_FRONTEND_API_TOKEN", "Update FRONTEND API tokens"),
    (56, "DELETE_FRONTEND_API_TOKEN", "Delete FRONTEND API tokens"),
    (57, "READ_FRONTEND_API_TOKEN", "Read FRONTEND API tokens"),
    (59, "CREATE_TAG_TYPE", "Create tag types"),
    (70, "RELEASE_PLAN_TEMPLATE_CREATE", "Create release plan template"),
    (71, "RELEASE_PLAN_TEMPLATE_UPDATE", "Update release plan template"),
    (72, "RELEASE_PLAN_TEMPLATE_DELETE", "Delete release plan template"),
    (73, "UPDATE_MAINTENANCE_MODE", "Change maintenance mode state"),
    (74, "UPDATE_INSTANCE_BANNERS", "Change instance banners"),
    (75, "UPDATE_AUTH_CONFIGURATION", "Change authentication settings (SSO)"),
    (76, "READ_LOGS", "Read instance logs and login history"),
    (77, "UPDATE_CORS", "Update CORS settings"),
)
PROJECT: Final = (
    (13, "UPDATE_PROJECT", "Update project"),
    (14, "DELETE_PROJECT", "Delete project"),
    (29, "UPDATE_FEATURE_VARIANTS", "Create/edit variants"),
    (42, "READ_PROJECT_API_TOKEN", "Read api tokens for a specific project"),
    (43, "CREATE_PROJECT_API_TOKEN", "Create api tokens for a specific project"),
    (44, "DELETE_PROJECT_API_TOKEN", "Delete api tokens for a specific project"),
    (45, "UPDATE_PROJECT_SEGMENT", "Create/edit project segment"),
    (2, "CREATE_FEATURE", "Create feature flags"),
    (7, "UPDATE_FEATURE", "Update feature flags"),
    (8, "DELETE_FEATURE", "Delete feature flags"),
    (30, "MOVE_FEATURE_TOGGLE", "Change feature flag project"),
    (58, "UPDATE_FEATURE_DEPENDENCY", "Update feature dependency"),
    (60, "PROJECT_USER_ACCESS_READ", "View only access to Project User Access"),
    (
        61,
        "PROJECT_DEFAULT_STRATEGY_READ",
        "View only access to default strategy configuration for project",
    ),
    (
        62,
        "PROJECT_CHANGE_REQUEST_READ",
        "View only access to change request configuration for project",
    ),
    (63, "PROJECT_SETTINGS_READ", "View only access to project settings"),
    (64, "PROJECT_USER_ACCESS_WRITE", "Write access to Project User Access"),
    (
        65,
        "PROJECT_DEFAULT_STRATEGY_WRITE",
        "Write access to default strategy configuration for project",
    ),
    (
        66,
        "PROJECT_CHANGE_REQUEST_WRITE",
        "Write access to change request configuration for project",
    ),
    (67, "PROJECT_SETTINGS_WRITE", "Write access to project settings"),
)
ENVIRONMENT: Final = (
    (25, "CREATE_FEATURE_STRATEGY", "Create activation strategies"),
    (26, "UPDATE_FEATURE_STRATEGY", "Update activation strategies"),
    (27, "DELETE_FEATURE_STRATEGY", "Delete activation strategies"),
    (37, "UPDATE_FEATURE_ENVIRONMENT_VARIANTS", "Update variants"),
    (36, "APPLY_CHANGE_REQUEST", "Apply change requests"),
    (38, "SKIP_CHANGE_REQUEST", "Skip change request process"),
    (35, "APPROVE_CHANGE_REQUEST", "Approve/Reject change requests"),
    (28, "UPDATE_FEATURE_ENVIRONMENT", "Enable/disable flags"),
)


def held_names(root_role: int) -> frozenset[str] | None:
    """The Unleash permission names a root role holds; None: every one (Admin)."""
    role = auth.ROOT_ROLES.get(root_role)
    if role is None:
        return frozenset()
    if auth.ADMIN in role.permissions:
        return None
    return frozenset(auth.unleash_permissions(role.permissions))
