"""One event as one request per provider: headers, bodies, details, warnings."""

import gzip
import json
from typing import Any

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from service.addons import formats
from service.addons.formats import BAD_HEADERS_JSON, BAD_HEADERS_SHAPE, Outgoing, render
from service.addons.providers import PROVIDERS, required

HOST = "http://host"
LINK = "http://host/projects/default/features/checkout"
SENTENCE = (
    "*admin* created *[checkout](http://host/projects/default/features/checkout)* "
    "in project *[default](http://host/projects/default)*"
)


def event(**fields: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "id": 12,
        "type": "feature-created",
        "createdBy": "admin",
        "createdByUserId": 1,
        "createdAt": "2024-05-01T10:00:00.000Z",
        "data": {"name": "checkout", "type": "release", "enabled": True},
        "preData": None,
        "tags": [{"type": "simple", "value": "team-a"}],
        "featureName": "checkout",
        "project": "default",
        "environment": None,
        "position": 12,
        "stream": "feature-checkout",
        "streamVersion": 1,
        "hash": "ab12",
        "storedType": "FeatureCreated",
    }
    return base | fields


def json_body(out: Outgoing) -> Any:
    return msgspec.json.decode(out.body)


# The webhook.


def test_webhook_default_body_is_the_event() -> None:
    out = render("webhook", {"url": "https://hook.example/x"}, event(), unleash_url=HOST)
    assert out.url == "https://hook.example/x"
    assert out.headers == {"Content-Type": "application/json"}
    assert json_body(out) == event()
    assert out.details == {
        "url": "https://hook.example/x",
        "contentType": "application/json",
        "body": event(),
    }
    assert out.warnings == []


def test_webhook_headers_content_type_authorization_and_custom() -> None:
    params = {
        "url": "https://hook.example/x",
        "contentType": "text/plain",
        "authorization": "Bearer s3cret",
        "customHeaders": '{"X-Team": "a", "content-type": "application/x-custom"}',
    }
    out = render("webhook", params, event(), unleash_url=HOST)
    # A custom header replaces ours of the same name whatever its case.
    assert out.headers == {
        "content-type": "application/x-custom",
        "Authorization": "Bearer s3cret",
        "X-Team": "a",
    }
    # The details say the type that went.
    assert out.details["contentType"] == "application/x-custom"
    broken = render(
        "webhook", {"url": "u", "contentType": "a\r\nX-Inj: 1"}, event(), unleash_url=HOST
    )
    assert broken.headers == {}
    assert broken.details["contentType"] == "application/octet-stream"
    assert broken.warnings == ["Left out the header 'Content-Type': HTTP cannot carry it."]
    blank = render("webhook", {"url": "u", "authorization": ""}, event(), unleash_url=HOST)
    assert blank.headers == {"Content-Type": "application/json"}


def test_webhook_template_with_event_fields_json_and_markdown() -> None:
    template = (
        '{"event": "{{event.type}}", "by": "{{event.createdBy}}", '
        '"flag": "{{event.data.name}}", "on": {{event.data.enabled}}, '
        '"json": {{{eventJson}}}, "text": "{{eventMarkdown}}"}'
    )
    params = {"url": "u", "bodyTemplate": template}
    out = render("webhook", params, event(), unleash_url=HOST)
    body = json_body(out)
    assert body["event"] == "feature-created"
    assert body["by"] == "admin"
    assert body["flag"] == "checkout"
    assert body["on"] is True
    assert msgspec.json.decode(body["json"]) == event()
    # {{ }} escapes as Mustache.js does: the link's slashes are entities.
    assert body["text"] == SENTENCE.replace("/", "&#x2F;")
    assert out.details["body"] == out.body.decode()
    assert out.warnings == []


def test_webhook_template_triple_braces_do_not_escape_and_partials_read_nothing() -> None:
    params = {"url": "u", "bodyTemplate": "{{{eventMarkdown}}}|{{> /etc/passwd}}|{{nothing}}"}
    out = render("webhook", params, event(), unleash_url=HOST)
    assert out.body.decode() == SENTENCE + "||"


@pytest.mark.parametrize("template", ["{{#event}}never closed", "{{/event}}", "{{#a}}{{/b}}"])
def test_webhook_broken_template_sends_the_event_with_a_warning(template: str) -> None:
    out = render("webhook", {"url": "u", "bodyTemplate": template}, event(), unleash_url=HOST)
    assert json_body(out) == event()
    assert out.details["body"] == event()
    assert len(out.warnings) == 1
    assert out.warnings[0].startswith("Could not render the bodyTemplate (")


@pytest.mark.parametrize(
    ("raw", "warning"),
    [
        ("{not json", BAD_HEADERS_JSON),
        ("[1, 2]", BAD_HEADERS_SHAPE),
        ('{"X-Count": 3}', BAD_HEADERS_SHAPE),
        ('"text"', BAD_HEADERS_SHAPE),
    ],
)
def test_bad_custom_headers_are_left_out_with_a_warning(raw: str, warning: str) -> None:
    for provider, params in (
        ("webhook", {"url": "u"}),
        ("slack", {"url": "u", "defaultChannel": "general"}),
        ("teams", {"url": "u"}),
        ("datadog", {"apiKey": "k"}),
        ("new-relic", {"url": "u", "licenseKey": "k"}),
    ):
        out = render(provider, params | {"customHeaders": raw}, event(), unleash_url=HOST)
        assert warning in out.warnings, provider
        assert "X-Count" not in out.headers
        assert out.headers["Content-Type"] == "application/json"


def test_headers_http_cannot_carry_are_left_out() -> None:
    raw = '{"Bad Name": "x", "X-Split": "a\\r\\nInjected: 1", "X-Fine": "ok"}'
    out = render("webhook", {"url": "u", "customHeaders": raw}, event(), unleash_url=HOST)
    assert out.headers == {"Content-Type": "application/json", "X-Fine": "ok"}
    assert out.warnings == [
        "Left out the header 'Bad Name': HTTP cannot carry it.",
        "Left out the header 'X-Split': HTTP cannot carry it.",
    ]


# Slack.


def slack_body(channel: str, text: str = SENTENCE, url: str = LINK) -> dict[str, Any]:
    return {
        "username": "Unleash",
        "icon_emoji": ":unleash:",
        "text": text,
        "channel": channel,
        "attachments": [
            {
                "actions": [
                    {
                        "name": "featureToggle",
                        "text": "Open in Unleash",
                        "type": "button",
                        "value": "featureToggle",
                        "style": "primary",
                        "url": url,
                    }
                ]
            }
        ],
    }


def slack_sentence() -> str:
    return (
        "*admin* created *<http://host/projects/default/features/checkout|checkout>* "
        "in project *<http://host/projects/default|default>*"
    )


def test_slack_default_channel() -> None:
    params = {"url": "https://hooks.slack.example/T1", "defaultChannel": "general"}
    out = render("slack", params, event(), unleash_url=HOST)
    assert out.url == "https://hooks.slack.example/T1"
    assert out.headers == {"Content-Type": "application/json"}
    assert json_body(out) == slack_body("#general", slack_sentence())
    assert out.details == {
        "url": "https://hooks.slack.example/T1",
        "channels": ["general"],
        "username": "Unleash",
        "message": slack_sentence(),
    }


def test_slack_tags_choose_the_channels_first_one_gets_the_request() -> None:
    tags = [
        {"type": "slack", "value": "ops"},
        {"type": "simple", "value": "x"},
        {"type": "slack", "value": "alerts"},
    ]
    params = {
        "url": "u",
        "defaultChannel": "general",
        "username": "Flags",
        "emojiIcon": ":flag:",
        "customHeaders": '{"X-A": "1"}',
    }
    out = render("slack", params, event(tags=tags), unleash_url=HOST)
    body = json_body(out)
    assert body["channel"] == "#ops"
    assert body["username"] == "Flags"
    assert body["icon_emoji"] == ":flag:"
    assert out.headers == {"Content-Type": "application/json", "X-A": "1"}
    assert out.details["channels"] == ["ops", "alerts"]
    assert out.details["username"] == "Flags"


def test_slack_long_text_is_trimmed_and_the_details_say_so() -> None:
    long_name = "f" * 4000
    ev = event(featureName=long_name)
    out = render("slack", {"url": "u", "defaultChannel": "g"}, ev, unleash_url=HOST)
    assert len(json_body(out)["text"]) == 3000
    assert out.details["message"].endswith(" (trimmed to 3000 characters)")


def test_slack_without_a_link_sends_no_url() -> None:
    ev = event(type="feature-favorited", featureName=None)
    out = render("slack", {"url": "u", "defaultChannel": "g"}, ev, unleash_url=HOST)
    assert "url" not in json_body(out)["attachments"][0]["actions"][0]


# Teams.


def test_teams_message_card() -> None:
    out = render("teams", {"url": "https://teams.example/hook"}, event(), unleash_url=HOST)
    body = {
        "themeColor": "0076D7",
        "summary": "Message",
        "sections": [
            {
                "activityTitle": SENTENCE,
                "activitySubtitle": "Unleash notification update",
                "facts": [
                    {"name": "User", "value": "admin"},
                    {"name": "Action", "value": "feature-created"},
                ],
            }
        ],
        "potentialAction": [
            {
                "@type": "OpenUri",
                "name": "Go to feature",
                "targets": [{"os": "default", "uri": LINK}],
            }
        ],
    }
    assert json_body(out) == body
    assert out.headers == {"Content-Type": "application/json"}
    assert out.details == {"url": "https://teams.example/hook", "body": body}


# Datadog.


def test_datadog_default_url_markdown_and_tags() -> None:
    out = render("datadog", {"apiKey": "dd-key"}, event(), unleash_url=HOST)
    body = {
        "text": f"%%% \n {SENTENCE} \n %%% ",
        "title": "Unleash notification update",
        "tags": ["simple:team-a"],
    }
    assert out.url == "https://api.datadoghq.com/api/v1/events"
    assert out.headers == {"Content-Type": "application/json", "DD-API-KEY": "dd-key"}
    assert json_body(out) == body
    assert out.details == {"url": "https://api.datadoghq.com/api/v1/events", "body": body}


def test_datadog_url_source_type_and_template() -> None:
    params = {
        "url": "https://api.datadoghq.eu/api/v1/events",
        "apiKey": "k",
        "sourceTypeName": "my_apps",
        "bodyTemplate": "{{event.type}} by {{event.createdBy}}",
    }
    out = render("datadog", params, event(tags=[]), unleash_url=HOST)
    assert out.url == "https://api.datadoghq.eu/api/v1/events"
    assert json_body(out) == {
        "text": "feature-created by admin",
        "title": "Unleash notification update",
        "tags": [],
        "source_type_name": "my_apps",
    }


def test_datadog_broken_template_sends_the_markdown() -> None:
    params = {"apiKey": "k", "bodyTemplate": "{{#x}}"}
    out = render("datadog", params, event(), unleash_url=HOST)
    assert json_body(out)["text"] == f"%%% \n {SENTENCE} \n %%% "
    assert len(out.warnings) == 1


# New Relic.


def test_new_relic_gzipped_fields_and_data() -> None:
    params = {"url": "https://insights-collector.example/v1/accounts/1/events", "licenseKey": "L"}
    out = render("new-relic", params, event(environment="production"), unleash_url=HOST)
    assert out.headers == {
        "Api-Key": "L",
        "Content-Type": "application/json",
        "Content-Encoding": "gzip",
    }
    body = {
        "eventType": "UnleashServiceEvent",
        "unleashEventType": "feature-created",
        "featureName": "checkout",
        "environment": "production",
        "createdBy": "admin",
        "createdByUserId": 1,
        "createdAt": 1714557600000,
        "name": "checkout",
        "type": "release",
        "enabled": True,
    }
    assert msgspec.json.decode(gzip.decompress(out.body)) == body
    assert out.details == {"url": params["url"], "body": body}
    again = render("new-relic", params, event(environment="production"), unleash_url=HOST)
    assert again.body == out.body


def test_new_relic_template_is_the_body() -> None:
    params = {"url": "u", "licenseKey": "L", "bodyTemplate": '{"eventType": "{{event.type}}"}'}
    out = render("new-relic", params, event(), unleash_url=HOST)
    assert gzip.decompress(out.body) == b'{"eventType": "feature-created"}'
    assert out.details["body"] == '{"eventType": "feature-created"}'


def test_unknown_provider() -> None:
    with pytest.raises(ValueError, match="slack-app"):
        render("slack-app", {}, event(), unleash_url=HOST)


# Any event: no provider raises, the body is bytes, the webhook's default body is JSON.

_json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=20,
)
_keys = st.sampled_from(
    [
        "id",
        "type",
        "createdBy",
        "createdAt",
        "data",
        "preData",
        "tags",
        "featureName",
        "project",
        "environment",
    ]
)
_events = st.dictionaries(_keys | st.text(), _json_values, max_size=12) | st.builds(
    event,
    type=st.sampled_from(sorted({e for p in PROVIDERS for e in p.events})) | st.text(),
    data=_json_values,
    preData=_json_values,
    tags=_json_values,
    featureName=st.none() | st.text(),
    project=st.none() | st.text(),
    environment=st.none() | st.text(),
)


@settings(max_examples=200, deadline=None)
@given(
    ev=_events,
    provider=st.sampled_from([p.name for p in PROVIDERS]),
    template=st.none() | st.text() | st.sampled_from(["{{#event.data}}{{.}}{{/event.data}}"]),
    headers=st.none() | st.text(),
)
def test_render_never_raises(
    ev: dict[str, Any], provider: str, template: str | None, headers: str | None
) -> None:
    params = dict.fromkeys(required(provider), "x")
    if template is not None:
        params["bodyTemplate"] = template
    if headers is not None:
        params["customHeaders"] = headers
    out = render(provider, params, ev, unleash_url=HOST)
    assert isinstance(out.body, bytes)
    msgspec.json.encode(out.details)
    if provider == "webhook" and template is None:
        assert msgspec.json.decode(out.body) == msgspec.json.decode(msgspec.json.encode(ev))


@pytest.mark.parametrize(
    "name", ["Content-Length", "transfer-encoding", "Content-Encoding", "Host", "Connection"]
)
def test_custom_headers_never_frame_the_request(name: str) -> None:
    parameters = {
        "url": "http://127.0.0.1/x",
        "customHeaders": json.dumps({name: "5", "X-Ok": "1"}),
    }
    sent = formats.render("webhook", parameters, EVENT_FOR_FRAMING, unleash_url="http://u")
    assert name.lower() not in {k.lower() for k in sent.headers}
    assert sent.headers["X-Ok"] == "1"
    assert any("framed" in w for w in sent.warnings)


def test_a_body_template_that_renders_too_much_sends_the_default_body() -> None:
    template = "{{#event.tags}}" + "x" * 1000 + "{{/event.tags}}"
    event = EVENT_FOR_FRAMING | {"tags": [{"type": "t", "value": str(i)} for i in range(1100)]}
    parameters = {"url": "http://127.0.0.1/x", "bodyTemplate": template}
    sent = formats.render("webhook", parameters, event, unleash_url="http://u")
    assert json.loads(sent.body)["type"] == "feature-created"
    assert any("rendered over" in w for w in sent.warnings)


EVENT_FOR_FRAMING: dict[str, object] = {
    "id": 1,
    "type": "feature-created",
    "createdBy": "admin",
    "data": {"name": "f"},
    "tags": [],
    "featureName": "f",
    "project": "default",
    "environment": None,
}
