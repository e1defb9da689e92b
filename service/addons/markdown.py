"""One event as a short Markdown sentence and a link, as Unleash's integrations word it (pure).

The sentences mean what Unleash's `FeatureEventFormatterMd` says for each event type
(`*admin* created *[checkout](http://host/projects/default/features/checkout)* in project
*[default](http://host/projects/default)*`); an event type without a sentence of its own
reads `*admin* triggered *some-type*`. Links are Markdown `[text](url)`, or Slack's
`<url|text>` for Slack. Nothing here raises on an event of an unexpected shape: a missing
or odd field reads as empty.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any

import msgspec


class Formatted(msgspec.Struct, frozen=True, kw_only=True):
    """An event's sentence: its label, its Markdown text, the page it is about (if any)."""

    label: str
    text: str
    url: str | None


def _js_number(value: float) -> str:
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    if value.is_integer() and abs(value) < 1e21:
        return str(int(value))
    return repr(value)


def js_string(value: Any) -> str:
    """A JSON value as JavaScript's String() writes it (what Unleash's templates show)."""
    if value is None or isinstance(value, bool):
        return {None: "", True: "true", False: "false"}[value]
    if isinstance(value, str):
        return value
    if isinstance(value, float):
        return _js_number(value)
    if isinstance(value, list | tuple):
        return ",".join(js_string(v) for v in value)
    if isinstance(value, Mapping):
        return "[object Object]"
    return str(value)


def _get(value: Any, key: str) -> Any:
    return value.get(key) if isinstance(value, Mapping) else None


def _bold(text: str) -> str:
    return f"*{text}*"


class _Event:
    """The parts of one event the sentences use, each read defensively."""

    def __init__(self, event: Mapping[str, Any], unleash_url: str, *, slack: bool) -> None:
        self.raw = event
        self.base = unleash_url.rstrip("/")
        self.slack = slack
        self.type = js_string(event.get("type"))
        self.user = js_string(event.get("createdBy"))
        self.feature_name = js_string(event.get("featureName"))
        self.project_name = js_string(event.get("project"))
        self.environment = js_string(event.get("environment"))
        self.data = event.get("data")
        self.pre_data = event.get("preData")

    def link(self, text: str, url: str) -> str:
        return f"<{url}|{text}>" if self.slack else f"[{text}]({url})"

    def d(self, key: str) -> str:
        return js_string(_get(self.data, key))

    def pre(self, key: str) -> str:
        return js_string(_get(self.pre_data, key))

    @property
    def feature_url(self) -> str | None:
        if self.type == "feature-archived":
            if self.project_name:
                return f"{self.base}/projects/{self.project_name}/archive"
            return f"{self.base}/archive"
        if self.feature_name:
            return f"{self.base}/projects/{self.project_name}/features/{self.feature_name}"
        return None

    @property
    def feature(self) -> str:
        url = self.feature_url
        return self.link(self.feature_name, url) if self.feature_name and url else ""

    @property
    def project(self) -> str:
        if not self.project_name:
            return ""
        return self.link(self.project_name, f"{self.base}/projects/{self.project_name}")

    @property
    def strategy_title(self) -> str:
        for value in (
            _get(self.pre_data, "title"),
            _get(self.data, "title"),
            _get(self.pre_data, "name"),
            _get(self.data, "name"),
        ):
            if value:
                return js_string(value)
        return ""

    @property
    def change_request_id(self) -> str:
        return self.d("changeRequestId") or self.pre("changeRequestId")

    @property
    def change_request(self) -> str:
        number = self.change_request_id
        if not (self.project_name and number):
            return ""
        url = f"{self.base}/projects/{self.project_name}/change-requests/{number}"
        text = _bold(self.link(f"#{number}", url))
        if self.feature_name:
            text += f" for feature flag {_bold(self.feature)}"
        if self.environment:
            text += f" in the {_bold(self.environment)} environment"
        return f"{text} in project {_bold(self.project)}"

    @property
    def in_env(self) -> str:
        return f"for the {_bold(self.environment)} environment in project {_bold(self.project)}"

    def path(self, path: str) -> str:
        return self.base + path

    @property
    def feature_path(self) -> str:
        return self.path(f"/projects/{self.project_name}/features/{self.feature_name}")

    @property
    def change_request_path(self) -> str:
        return self.path(
            f"/projects/{self.project_name}/change-requests/{self.d('changeRequestId')}"
        )


def _constraints_text(constraints: Any) -> str:
    if not isinstance(constraints, list) or not constraints:
        return "empty set of constraints"
    operators = {
        "IN": "is one of",
        "NOT_IN": "is not one of",
        "STR_CONTAINS": "is a string that contains",
        "STR_STARTS_WITH": "is a string that starts with",
        "STR_ENDS_WITH": "is a string that ends with",
        "NUM_EQ": "is a number equal to",
        "NUM_GT": "is a number greater than",
        "NUM_GTE": "is a number greater than or equal to",
        "NUM_LT": "is a number less than",
        "NUM_LTE": "is a number less than or equal to",
        "DATE_BEFORE": "is a date before",
        "DATE_AFTER": "is a date after",
        "SEMVER_EQ": "is a SemVer equal to",
        "SEMVER_GT": "is a SemVer greater than",
        "SEMVER_LT": "is a SemVer less than",
    }
    parts = []
    for constraint in constraints:
        c = constraint if isinstance(constraint, Mapping) else {}
        value = js_string(c["value"]) if "value" in c else f"({js_string(c.get('values'))})"
        operator = js_string(c.get("operator"))
        described = operators.get(operator, operator)
        inverted = "not " if c.get("inverted") else ""
        parts.append(f"{js_string(c.get('contextName'))} {inverted}{described} {value}")
    return f"[{', '.join(parts)}]"


def _segments_text(segments: Any) -> str:
    if not isinstance(segments, list) or not segments:
        return "empty set of segments"
    return f"({','.join(js_string(s) for s in segments)})"


def _change(label: str, old: Any, new: Any, show: Callable[[Any], str] = js_string) -> str:
    if old == new:
        return ""
    if not old:
        return f" {label} to {show(new)}"
    return f" {label} from {show(old)} to {show(new)}"


def _strategy_change(e: _Event) -> str:
    """What changed in an updated strategy, for the strategies whose parameters are known."""
    name = js_string(_get(e.data or e.pre_data, "name"))
    old = _get(e.pre_data, "parameters")
    new = _get(e.data, "parameters")
    changes: list[str] = []
    if name == "flexibleRollout":
        changes += [
            _change("stickiness", _get(old, "stickiness"), _get(new, "stickiness")),
            _change(
                "rollout",
                _get(old, "rollout"),
                _get(new, "rollout"),
                lambda v: f"{js_string(v)}%",
            ),
            _change("groupId", _get(old, "groupId"), _get(new, "groupId")),
        ]
    values = {"userWithId": "userIds", "remoteAddress": "IPs", "applicationHostname": "hostNames"}
    if name in values:
        key = values[name]

        def show(v: Any) -> str:
            return f"empty set of {key}" if not v else f"[{js_string(v)}]"

        before, after = _get(old, key), _get(new, key)
        if before != after:
            changes.append(
                f" {key} to {show(after)}"
                if e.pre_data is None
                else f" {key} from {show(before)} to {show(after)}"
            )
    if name in {"flexibleRollout", "default", *values}:
        old_c = _constraints_text(_get(e.pre_data, "constraints"))
        new_c = _constraints_text(_get(e.data, "constraints"))
        if old_c != new_c:
            changes.append(f" constraints from {old_c} to {new_c}")
        old_s = _segments_text(_get(e.pre_data, "segments"))
        new_s = _segments_text(_get(e.data, "segments"))
        if old_s != new_s:
            changes.append(f" segments from {old_s} to {new_s}")
    detail = ";".join(c for c in changes if c)
    return f"by updating strategy {_bold(e.strategy_title)} in {_bold(e.environment)}{detail}"


def _u(e: _Event) -> str:
    return _bold(e.user)


def _flag(e: _Event) -> str:
    return _bold(e.feature)


def _in_project(e: _Event) -> str:
    return f"in project {_bold(e.project)}"


# Each event type: its label, its sentence, the page it links to.
_Sentence = tuple[str, Callable[[_Event], str], Callable[[_Event], str] | None]


def _admin(label: str, verb: str, noun: str, field: str, page: str) -> _Sentence:
    """An instance-wide thing created, updated or deleted: named from data or preData."""

    def text(e: _Event) -> str:
        name = e.d(field) if verb == "created" else e.pre(field)
        return f"{_u(e)} {verb} {noun} {_bold(name)}"

    return (label, text, lambda e: e.path(page))


def _cr(label: str, sentence: Callable[[_Event], str]) -> _Sentence:
    return (label, sentence, lambda e: e.change_request_path)


def _flag_sentence(label: str, sentence: Callable[[_Event], str]) -> _Sentence:
    return (label, sentence, lambda e: e.feature_path)


SENTENCES: dict[str, _Sentence] = {
    "addon-config-created": (
        "Integration configuration created",
        lambda e: f"{_u(e)} created a new {_bold(e.d('provider'))} integration configuration",
        lambda e: e.path("/integrations"),
    ),
    "addon-config-updated": (
        "Integration configuration updated",
        lambda e: f"{_u(e)} updated a {_bold(e.pre('provider'))} integration configuration",
        lambda e: e.path("/integrations"),
    ),
    "addon-config-deleted": (
        "Integration configuration deleted",
        lambda e: f"{_u(e)} deleted a {_bold(e.pre('provider'))} integration configuration",
        lambda e: e.path("/integrations"),
    ),
    "api-token-created": _admin(
        "API token created", "created", "API token", "username", "/admin/api"
    ),
    "api-token-deleted": _admin(
        "API token deleted", "deleted", "API token", "username", "/admin/api"
    ),
    "change-added": _cr(
        "Change added", lambda e: f"{_u(e)} added a change to change request {e.change_request}"
    ),
    "change-discarded": _cr(
        "Change discarded",
        lambda e: f"{_u(e)} discarded a change in change request {e.change_request}",
    ),
    "change-edited": _cr(
        "Change edited", lambda e: f"{_u(e)} edited a change in change request {e.change_request}"
    ),
    "change-request-applied": _cr(
        "Change request applied", lambda e: f"{_u(e)} applied change request {e.change_request}"
    ),
    "change-request-approval-added": _cr(
        "Change request approval added",
        lambda e: f"{_u(e)} added an approval to change request {e.change_request}",
    ),
    "change-request-approved": _cr(
        "Change request approved", lambda e: f"{_u(e)} approved change request {e.change_request}"
    ),
    "change-request-cancelled": _cr(
        "Change request cancelled",
        lambda e: f"{_u(e)} cancelled change request {e.change_request}",
    ),
    "change-request-created": _cr(
        "Change request created", lambda e: f"{_u(e)} created change request {e.change_request}"
    ),
    "change-request-discarded": _cr(
        "Change request discarded",
        lambda e: f"{_u(e)} discarded change request {e.change_request}",
    ),
    "change-request-rejected": _cr(
        "Change request rejected", lambda e: f"{_u(e)} rejected change request {e.change_request}"
    ),
    "change-request-sent-to-review": _cr(
        "Change request sent to review",
        lambda e: f"{_u(e)} sent to review change request {e.change_request}",
    ),
    "change-request-scheduled": _cr(
        "Change request scheduled",
        lambda e: (
            f"{_u(e)} scheduled change request {e.change_request} to be applied at "
            f"{e.d('scheduledDate')}."
        ),
    ),
    "change-request-scheduled-application-success": _cr(
        "Scheduled change request applied successfully",
        lambda e: (
            f"{_bold('Successfully')} applied the scheduled change request {e.change_request} "
            f"by {_u(e)}."
        ),
    ),
    "change-request-scheduled-application-failure": _cr(
        "Scheduled change request failed",
        lambda e: (
            f"{_bold('Failed')} to apply the scheduled change request {e.change_request} "
            f"by {_u(e)}."
        ),
    ),
    "change-request-schedule-suspended": _cr(
        "Change request suspended",
        lambda e: (
            f"Change request {e.change_request} was suspended for the following reason: "
            f"{e.d('reason')}"
        ),
    ),
    "context-field-created": _admin(
        "Context field created", "created", "context field", "name", "/context"
    ),
    "context-field-updated": _admin(
        "Context field updated", "updated", "context field", "name", "/context"
    ),
    "context-field-deleted": _admin(
        "Context field deleted", "deleted", "context field", "name", "/context"
    ),
    "feature-archived": (
        "Flag archived",
        lambda e: f"{_u(e)} archived {_bold(e.feature_name)} {_in_project(e)}",
        lambda e: e.path(f"/projects/{e.project_name}/archive"),
    ),
    "feature-created": _flag_sentence(
        "Flag created", lambda e: f"{_u(e)} created {_flag(e)} {_in_project(e)}"
    ),
    "feature-deleted": (
        "Flag deleted",
        lambda e: f"{_u(e)} deleted {_bold(e.feature_name)} {_in_project(e)}",
        lambda e: e.path(f"/projects/{e.project_name}"),
    ),
    "feature-environment-disabled": _flag_sentence(
        "Flag disabled", lambda e: f"{_u(e)} disabled {_flag(e)} {e.in_env}"
    ),
    "feature-environment-enabled": _flag_sentence(
        "Flag enabled", lambda e: f"{_u(e)} enabled {_flag(e)} {e.in_env}"
    ),
    "feature-environment-variants-updated": (
        "Flag variants updated",
        lambda e: f"{_u(e)} updated variants for {_flag(e)} {e.in_env}",
        lambda e: e.feature_path + "/variants",
    ),
    "feature-metadata-updated": _flag_sentence(
        "Flag metadata updated", lambda e: f"{_u(e)} updated {_flag(e)} metadata {_in_project(e)}"
    ),
    "feature-completed": _flag_sentence(
        "Flag marked as completed",
        lambda e: f"{_flag(e)} was marked as completed {_in_project(e)}",
    ),
    "feature-potentially-stale-on": _flag_sentence(
        "Flag potentially stale",
        lambda e: f"{_flag(e)} was marked as potentially stale {_in_project(e)}",
    ),
    "feature-project-change": _flag_sentence(
        "Flag moved to a new project",
        lambda e: f"{_u(e)} moved {_flag(e)} from {_bold(e.d('oldProject'))} to {_bold(e.project)}",
    ),
    "feature-revived": _flag_sentence(
        "Flag revived", lambda e: f"{_u(e)} revived {_flag(e)} {_in_project(e)}"
    ),
    "feature-stale-off": _flag_sentence(
        "Flag stale marking removed",
        lambda e: f"{_u(e)} removed the stale marking on {_flag(e)} {_in_project(e)}",
    ),
    "feature-stale-on": _flag_sentence(
        "Flag marked as stale", lambda e: f"{_u(e)} marked {_flag(e)} as stale {_in_project(e)}"
    ),
    "feature-strategy-add": _flag_sentence(
        "Flag strategy added",
        lambda e: f"{_u(e)} added strategy {_bold(e.strategy_title)} to {_flag(e)} {e.in_env}",
    ),
    "feature-strategy-remove": _flag_sentence(
        "Flag strategy removed",
        lambda e: f"{_u(e)} removed strategy {_bold(e.strategy_title)} from {_flag(e)} {e.in_env}",
    ),
    "feature-strategy-update": _flag_sentence(
        "Flag strategy updated",
        lambda e: f"{_u(e)} updated {_flag(e)} {_in_project(e)} {_strategy_change(e)}",
    ),
    "feature-tagged": _flag_sentence(
        "Flag tagged",
        lambda e: (
            f"{_u(e)} tagged {_flag(e)} with {_bold(e.d('type') + ':' + e.d('value'))} "
            f"{_in_project(e)}"
        ),
    ),
    "feature-untagged": _flag_sentence(
        "Flag untagged",
        lambda e: (
            f"{_u(e)} untagged {_flag(e)} with {_bold(e.pre('type') + ':' + e.pre('value'))} "
            f"{_in_project(e)}"
        ),
    ),
    "group-created": _admin("Group created", "created", "group", "name", "/admin/groups"),
    "group-updated": _admin("Group updated", "updated", "group", "name", "/admin/groups"),
    "group-deleted": _admin("Group deleted", "deleted", "group", "name", "/admin/groups"),
    "banner-created": _admin(
        "Banner created", "created", "banner", "message", "/admin/message-banners"
    ),
    "banner-updated": _admin(
        "Banner updated", "updated", "banner", "message", "/admin/message-banners"
    ),
    "banner-deleted": _admin(
        "Banner deleted", "deleted", "banner", "message", "/admin/message-banners"
    ),
    "project-created": (
        "Project created",
        lambda e: f"{_u(e)} created project {_bold(e.project)}",
        lambda e: e.path("/projects"),
    ),
    "project-archived": (
        "Project archived",
        lambda e: f"{_u(e)} archived project {_bold(e.project_name)}",
        lambda e: e.path("/projects-archive"),
    ),
    "project-deleted": (
        "Project deleted",
        lambda e: f"{_u(e)} deleted project {_bold(e.project_name)}",
        lambda e: e.path("/projects"),
    ),
    "segment-created": _admin("Segment created", "created", "segment", "name", "/segments"),
    "segment-updated": _admin("Segment updated", "updated", "segment", "name", "/segments"),
    "segment-deleted": _admin("Segment deleted", "deleted", "segment", "name", "/segments"),
    "service-account-created": _admin(
        "Service account created", "created", "service account", "name", "/admin/service-accounts"
    ),
    "service-account-updated": _admin(
        "Service account updated", "updated", "service account", "name", "/admin/service-accounts"
    ),
    "service-account-deleted": _admin(
        "Service account deleted", "deleted", "service account", "name", "/admin/service-accounts"
    ),
    "user-created": _admin("User created", "created", "user", "name", "/admin/users"),
    "user-updated": _admin("User updated", "updated", "user", "name", "/admin/users"),
    "user-deleted": _admin("User deleted", "deleted", "user", "name", "/admin/users"),
    "release-plan-added": _flag_sentence(
        "Release plan added",
        lambda e: f"{_u(e)} added release plan {_bold(e.d('name'))} to {_flag(e)} {e.in_env}",
    ),
    "release-plan-removed": _flag_sentence(
        "Release plan removed",
        lambda e: f"{_u(e)} removed release plan {_bold(e.pre('name'))} from {_flag(e)} {e.in_env}",
    ),
    "release-plan-milestone-started": _flag_sentence(
        "Release plan milestone started",
        lambda e: (
            f"{_u(e)} started milestone {_bold(e.d('milestoneName'))} in release plan "
            f"{_bold(e.d('name'))} for {_flag(e)} {e.in_env}"
        ),
    ),
}


def format_event(event: Mapping[str, Any], *, unleash_url: str, slack: bool = False) -> Formatted:
    """The event's sentence in Markdown (Slack's link style when `slack`) and its page."""
    e = _Event(event, unleash_url, slack=slack)
    found = SENTENCES.get(e.type)
    if found is None:
        return Formatted(label=e.type, text=f"{_u(e)} triggered {_bold(e.type)}", url=None)
    label, text, page = found
    return Formatted(label=label, text=text(e), url=page(e) if page else None)
