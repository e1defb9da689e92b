"""What each integration provider is, as Unleash's `GET /api/admin/addons` lists it (pure)."""

from __future__ import annotations

import msgspec


class Alert(msgspec.Struct, frozen=True, kw_only=True):
    """A notice the UI shows above a provider's form."""

    type: str
    text: str


class TagType(msgspec.Struct, frozen=True, kw_only=True):
    """A tag type a provider reads from flags (Slack's channels, Datadog's tags)."""

    name: str
    description: str
    icon: str


class Parameter(msgspec.Struct, frozen=True, kw_only=True, rename="camel", omit_defaults=True):
    """One field of a provider's form; `sensitive` ones are never shown back."""

    name: str
    display_name: str
    placeholder: str | None = None
    description: str
    type: str
    required: bool
    sensitive: bool


class Provider(msgspec.Struct, frozen=True, kw_only=True, rename="camel", omit_defaults=True):
    """One provider: its form, the events it can subscribe to, the tag types it reads."""

    name: str
    display_name: str
    description: str
    documentation_url: str
    how_to: str | None = None
    deprecated: str | None = None
    alerts: tuple[Alert, ...] | None = None
    parameters: tuple[Parameter, ...]
    events: tuple[str, ...]
    tag_types: tuple[TagType, ...] | None = None


_HEADERS_DESCRIPTION = (
    "(Optional) Used to add extra HTTP Headers to the request the plugin fires off. This must "
    "be a valid json object of key-value pairs where both the key and the value are strings"
)
_HEADERS_PLACEHOLDER = (
    '{\n  "ISTIO_USER_KEY": "hunter2",\n  "SOME_OTHER_CUSTOM_HTTP_HEADER": "SOMEVALUE"\n}'
)
_HEADERS_PLACEHOLDER_GENERIC = (
    '{\n  "SOME_CUSTOM_HTTP_HEADER": "SOME_VALUE",\n'
    '  "SOME_OTHER_CUSTOM_HTTP_HEADER": "SOME_OTHER_VALUE"\n}'
)


def _custom_headers(placeholder: str) -> Parameter:
    return Parameter(
        name="customHeaders",
        display_name="Extra HTTP Headers",
        placeholder=placeholder,
        description=_HEADERS_DESCRIPTION,
        type="textfield",
        required=False,
        sensitive=True,
    )


# The events of flags that every chat and monitoring provider offers.
_FLAG_EVENTS_HEAD = (
    "feature-created",
    "feature-updated",
    "feature-archived",
    "feature-revived",
    "feature-stale-on",
    "feature-stale-off",
)
_FLAG_EVENTS_MIDDLE = (
    "feature-environment-enabled",
    "feature-environment-disabled",
    "feature-strategy-remove",
    "feature-strategy-update",
    "feature-strategy-add",
    "feature-metadata-updated",
)
_CHAT_EVENTS = (
    *_FLAG_EVENTS_HEAD,
    *_FLAG_EVENTS_MIDDLE,
    "feature-variants-updated",
    "feature-project-change",
    "feature-potentially-stale-on",
)
_MONITORING_EVENTS = (
    *_FLAG_EVENTS_HEAD,
    *_FLAG_EVENTS_MIDDLE,
    "feature-project-change",
    "feature-environment-variants-updated",
    "feature-potentially-stale-on",
)
_WEBHOOK_EVENTS = (
    *_FLAG_EVENTS_HEAD,
    "feature-completed",
    *_FLAG_EVENTS_MIDDLE,
    "feature-variants-updated",
    "feature-project-change",
    "feature-tagged",
    "feature-untagged",
    "change-request-created",
    "change-request-discarded",
    "change-added",
    "change-discarded",
    "change-request-approved",
    "change-request-approval-added",
    "change-request-cancelled",
    "change-request-sent-to-review",
    "change-request-applied",
    "change-request-scheduled",
    "change-request-scheduled-application-success",
    "change-request-scheduled-application-failure",
    "change-request-schedule-suspended",
    "feature-potentially-stale-on",
)

_SLACK_DEPRECATED = (
    "This integration is deprecated. Please try the new Slack App integration instead."
)

WEBHOOK = Provider(
    name="webhook",
    display_name="Webhook",
    description=(
        "A Webhook is a generic way to post messages from Unleash to third party services."
    ),
    documentation_url="https://docs.getunleash.io/docs/addons/webhook",
    how_to=(
        "The Webhook Addon introduces a generic way to post messages from Unleash to third "
        "party services. Unleash allows you to define a webhook which listens for changes in "
        "Unleash and posts them to a third party services."
    ),
    parameters=(
        Parameter(
            name="url",
            display_name="Webhook URL",
            # Our deliveries are retried for hours and signed: the text says so.
            description=(
                "(Required) Unleash will perform a HTTP Post to the specified URL. A delivery "
                "that fails is retried with backoff until the URL answers (for several "
                "hours), and each request is signed (see the signing secret)."
            ),
            type="url",
            required=True,
            sensitive=True,
        ),
        Parameter(
            name="contentType",
            display_name="Content-Type",
            placeholder="application/json",
            description=(
                '(Optional) The Content-Type header to use. Defaults to "application/json".'
            ),
            type="text",
            required=False,
            sensitive=False,
        ),
        Parameter(
            name="authorization",
            display_name="Authorization",
            placeholder="",
            description="(Optional) The Authorization header to use. Not used if left blank.",
            type="text",
            required=False,
            sensitive=True,
        ),
        Parameter(
            name="signingSecret",
            display_name="Signing secret",
            description=(
                "(Optional) The key of the HMAC-SHA256 signature in the Flagstore-Signature "
                "header of each request. Left blank, one is generated and shown once in the "
                "answer that creates the integration."
            ),
            type="text",
            required=False,
            sensitive=True,
        ),
        Parameter(
            name="customHeaders",
            display_name="Extra HTTP Headers",
            placeholder=(
                '{\n"ISTIO_USER_KEY": "hunter2",\n"SOME_OTHER_CUSTOM_HTTP_HEADER": "SOMEVALUE"\n}'
            ),
            description=_HEADERS_DESCRIPTION,
            type="textfield",
            required=False,
            sensitive=True,
        ),
        Parameter(
            name="bodyTemplate",
            display_name="Body template",
            placeholder=(
                '{\n  "event": "{{event.type}}",\n  "createdBy": "{{event.createdBy}}",\n'
                '  "featureToggle": "{{event.data.name}}",\n'
                '  "timestamp": "{{event.data.createdAt}}",\n  "json": {{{eventJson}}}\n}'
            ),
            description=(
                "(Optional) You may format the body using a mustache template. If you don't "
                "specify anything, the format will be similar to the [events format]"
                "(https://docs.getunleash.io/reference/api/legacy/unleash/admin/events). You "
                "can use `{{{eventJson}}}` to include the entire serialized event, or "
                '`"{{eventMarkdown}}"` for the formatted description.'
            ),
            type="textfield",
            required=False,
            sensitive=False,
        ),
    ),
    events=_WEBHOOK_EVENTS,
)

SLACK = Provider(
    name="slack",
    display_name="Slack",
    description="Allows Unleash to post updates to Slack.",
    documentation_url="https://docs.getunleash.io/docs/addons/slack",
    deprecated=_SLACK_DEPRECATED,
    alerts=(Alert(type="warning", text=_SLACK_DEPRECATED),),
    parameters=(
        Parameter(
            name="url",
            display_name="Slack webhook URL",
            description="(Required)",
            type="url",
            required=True,
            sensitive=True,
        ),
        Parameter(
            name="username",
            display_name="Username",
            placeholder="Unleash",
            description=(
                'The username to use when posting messages to slack. Defaults to "Unleash".'
            ),
            type="text",
            required=False,
            sensitive=False,
        ),
        Parameter(
            name="emojiIcon",
            display_name="Emoji Icon",
            placeholder=":unleash:",
            description=(
                'The emoji_icon to use when posting messages to slack. Defaults to ":unleash:".'
            ),
            type="text",
            required=False,
            sensitive=False,
        ),
        Parameter(
            name="defaultChannel",
            display_name="Default channel",
            description=(
                "(Required) Default channel to post updates to if not specified in the slack-tag"
            ),
            type="text",
            required=True,
            sensitive=False,
        ),
        _custom_headers(_HEADERS_PLACEHOLDER),
    ),
    events=_CHAT_EVENTS,
    tag_types=(
        TagType(
            name="slack",
            description="Slack tag used by the slack-addon to specify the slack channel.",
            icon="S",
        ),
    ),
)

TEAMS = Provider(
    name="teams",
    display_name="Microsoft Teams",
    description="Allows Unleash to post updates to Microsoft Teams.",
    documentation_url="https://docs.getunleash.io/docs/addons/teams",
    how_to=(
        "The Microsoft Teams integration allows Unleash to post Updates when a feature flag "
        "is updated."
    ),
    parameters=(
        Parameter(
            name="url",
            display_name="Microsoft Teams webhook URL",
            description="(Required)",
            type="url",
            required=True,
            sensitive=True,
        ),
        _custom_headers(_HEADERS_PLACEHOLDER),
    ),
    events=_CHAT_EVENTS,
)

DATADOG = Provider(
    name="datadog",
    display_name="Datadog",
    description="Allows Unleash to post updates to Datadog.",
    documentation_url="https://docs.getunleash.io/docs/addons/datadog",
    how_to=(
        "The Datadog integration allows Unleash to post Updates to Datadog when a feature "
        "flag is updated."
    ),
    parameters=(
        Parameter(
            name="url",
            display_name="Datadog Events URL",
            description=(
                "Default URL: https://api.datadoghq.com/api/v1/events. Needs to be changed if "
                "your're not using the US1 site."
            ),
            type="url",
            required=False,
            sensitive=False,
        ),
        Parameter(
            name="apiKey",
            display_name="Datadog API key",
            placeholder="j96c23b0f12a6b3434a8d710110bd862",
            description="(Required) API key to connect to Datadog",
            type="text",
            required=True,
            sensitive=True,
        ),
        Parameter(
            name="sourceTypeName",
            display_name="Datadog Source Type Name",
            description=(
                "(Optional) source_type_name parameter to be included in Datadog events. Valid "
                "values: https://docs.datadoghq.com/integrations/faq/"
                "list-of-api-source-attribute-value/"
            ),
            type="text",
            required=False,
            sensitive=False,
        ),
        _custom_headers(_HEADERS_PLACEHOLDER_GENERIC),
        Parameter(
            name="bodyTemplate",
            display_name="Body template",
            placeholder=(
                '{\n  "event": "{{event.type}}",\n  "createdBy": "{{event.createdBy}}",\n'
                '  "featureToggle": "{{event.data.name}}",\n'
                '  "timestamp": "{{event.data.createdAt}}"\n}'
            ),
            description=(
                "(Optional) The default format is a markdown string formatted by Unleash. You "
                "may override the format of the body using a mustache template."
            ),
            type="textfield",
            required=False,
            sensitive=False,
        ),
    ),
    events=_MONITORING_EVENTS,
    tag_types=(
        TagType(
            name="datadog",
            description=(
                "All Datadog tags added to a specific feature are sent to datadog event stream."
            ),
            icon="D",
        ),
    ),
)

NEW_RELIC = Provider(
    name="new-relic",
    display_name="New Relic",
    description="Allows Unleash to post updates to New Relic Event API.",
    documentation_url="https://docs.getunleash.io/reference/integrations",
    how_to=(
        "The New Relic integration allows Unleash to post Updates to New Relic Event API when "
        "a feature flag is updated."
    ),
    parameters=(
        Parameter(
            name="url",
            display_name="New Relic Event URL",
            description=(
                "(Required) If data is hosted in EU then use the EU region endpoints "
                "(https://docs.newrelic.com/docs/using-new-relic/welcome-new-relic/"
                "getting-started/introduction-eu-region-data-center/#endpoints). Otherwise, it "
                "should be something like this: "
                "https://insights-collector.newrelic.com/v1/accounts/YOUR_ACCOUNT_ID/events"
            ),
            type="url",
            required=True,
            sensitive=False,
        ),
        Parameter(
            name="licenseKey",
            display_name="New Relic License Key",
            placeholder="eu01xx0f12a6b3434a8d710110bd862",
            description="(Required) License key to connect to New Relic",
            type="text",
            required=True,
            sensitive=True,
        ),
        _custom_headers(_HEADERS_PLACEHOLDER_GENERIC),
        Parameter(
            name="bodyTemplate",
            display_name="Body template",
            placeholder=(
                '{\n  "event": "{{event.type}}",\n  "eventType": "unleash",\n'
                '  "createdBy": "{{event.createdBy}}",\n'
                '  "featureToggle": "{{event.data.name}}",\n'
                '  "timestamp": "{{event.data.createdAt}}"\n}'
            ),
            description=(
                "(Optional) The default format is a markdown string formatted by Unleash. You "
                "may override the format of the body using a mustache template."
            ),
            type="textfield",
            required=False,
            sensitive=False,
        ),
    ),
    events=_MONITORING_EVENTS,
    tag_types=(
        TagType(
            name="new-relic",
            description=(
                "All New Relic tags added to a specific feature are sent to New Relic Event API."
            ),
            icon="D",
        ),
    ),
)

# Unleash's slack-app is left out: it needs Slack's OAuth app (docs/integrations.md).
PROVIDERS: tuple[Provider, ...] = (WEBHOOK, SLACK, TEAMS, DATADOG, NEW_RELIC)

_BY_NAME = {p.name: p for p in PROVIDERS}

# Every event type an integration can subscribe to.
EVENT_TYPES: frozenset[str] = frozenset(e for p in PROVIDERS for e in p.events)


def provider(name: str) -> Provider | None:
    """The provider of that name, or None."""
    return _BY_NAME.get(name)


def _known(name: str) -> Provider:
    found = _BY_NAME.get(name)
    if found is None:
        raise ValueError(f"Unknown integration provider: {name!r}")
    return found


def sensitive(name: str) -> frozenset[str]:
    """The names of the provider's parameters that are secrets (never shown back)."""
    return frozenset(p.name for p in _known(name).parameters if p.sensitive)


def required(name: str) -> tuple[str, ...]:
    """The names of the provider's required parameters, in the form's order."""
    return tuple(p.name for p in _known(name).parameters if p.required)
