"""One event as one outgoing HTTP request for one integration's provider (pure: no I/O).

Each provider's request has the shape Unleash 6.10.1 sends (src/lib/addons/<provider>.ts):
the same headers, the same JSON fields, the same `details` for the integration's events.
Where we differ, on purpose:

- Slack: Unleash posts once per channel (the event's `slack` tags, else the default
  channel). We send one request per event and integration, to the first of those channels,
  and list them all in `details.channels`: one delivery, one state, one retry schedule.
- customHeaders: a value that is not a JSON object of strings, or a header that HTTP cannot
  carry (a bad name, a line break in a value), is left out with a warning; a custom header
  replaces ours of the same name whatever its case (Unleash would send both).
- A Mustache template that does not parse gives the default body and a warning instead of
  failing the delivery. A blank parameter counts as not given.
- New Relic: a body template, when given, is the body (Unleash renders it and sends its
  fixed body anyway); the body is gzipped, as Unleash sends it.
"""

from __future__ import annotations

import gzip
import re
from collections.abc import Mapping
from datetime import datetime
from typing import Any

import msgspec
import pystache
from pystache.renderer import Renderer

from service.addons.markdown import format_event, js_string

OCTETS = "application/octet-stream"
JSON = "application/json"
DATADOG_URL = "https://api.datadoghq.com/api/v1/events"
SLACK_MAX_TEXT = 3000

# Headers that say how the body is framed, encoded or carried: set by us (and the HTTP client)
# alone, since a custom one would corrupt the request or its signature.
FRAMING = frozenset(
    {
        "content-length",
        "transfer-encoding",
        "content-encoding",
        "host",
        "connection",
        "keep-alive",
        "upgrade",
        "te",
        "trailer",
        "proxy-connection",
    }
)
# A rendered body larger than this is not sent: the default body goes instead, with a warning.
MAX_BODY_BYTES = 1024 * 1024
BAD_HEADERS_JSON = "Could not parse the JSON in the customHeaders parameter."
BAD_HEADERS_SHAPE = (
    "The customHeaders parameter is not a JSON object whose values are strings; no extra "
    "headers were sent."
)


class Outgoing(msgspec.Struct, frozen=True, kw_only=True):
    """One request to send: where, with which headers and body; what the events list shows."""

    url: str
    headers: dict[str, str]
    body: bytes
    details: dict[str, Any]
    warnings: list[str]


# Mustache.js's escapes (what Unleash's templates produce), not only HTML's four.
_ESCAPES = str.maketrans(
    {
        "&": "&amp;",
        "<": "&lt;",
        ">": "&gt;",
        '"': "&quot;",
        "'": "&#39;",
        "/": "&#x2F;",
        "`": "&#x60;",
        "=": "&#x3D;",
    }
)


class _Renderer(Renderer):  # type: ignore[misc]
    """Mustache with JavaScript's way of writing values and no partials from files."""

    def __init__(self) -> None:
        # An empty partials dict: `{{> name}}` renders nothing instead of reading a file.
        super().__init__(
            escape=lambda text: text.translate(_ESCAPES), partials={}, missing_tags="ignore"
        )

    def str_coerce(self, val: Any) -> str:
        return js_string(val)


_RENDERER = _Renderer()


def _mustache(template: str, context: Mapping[str, Any]) -> str:
    """The rendered template; raises on a template that does not parse."""
    parsed = pystache.parse(template, raise_on_mismatch=True)
    return str(_RENDERER.render(parsed, context))


def _template(template: str, context: Mapping[str, Any], warnings: list[str]) -> str | None:
    """The rendered template, or None (and a warning) when it cannot be rendered."""
    try:
        rendered = _mustache(template, context)
    except Exception as error:  # a user's template: any failure is a warning, never a crash
        warnings.append(f"Could not render the bodyTemplate ({error}); sent the default body.")
        return None
    if len(rendered) > MAX_BODY_BYTES:  # characters: at least as many bytes
        warnings.append(
            f"The bodyTemplate rendered over {MAX_BODY_BYTES} bytes; sent the default body."
        )
        return None
    return rendered


def _param(parameters: Mapping[str, str], name: str) -> str | None:
    value = parameters.get(name)
    return value if isinstance(value, str) and value.strip() else None


_TOKEN = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
_BAD_VALUE = re.compile(r"[\x00-\x08\x0a-\x1f\x7f]")


def _headers(
    own: Mapping[str, str | None], parameters: Mapping[str, str], warnings: list[str]
) -> dict[str, str]:
    """Our headers, then customHeaders over them (by name, whatever its case)."""
    merged: dict[str, tuple[str, str]] = {
        name.lower(): (name, value) for name, value in own.items() if value is not None
    }
    raw = _param(parameters, "customHeaders")
    if raw is not None:
        try:
            extra = msgspec.json.decode(raw)
        except msgspec.DecodeError:
            warnings.append(BAD_HEADERS_JSON)
            extra = {}
        if not isinstance(extra, dict) or not all(isinstance(v, str) for v in extra.values()):
            warnings.append(BAD_HEADERS_SHAPE)
            extra = {}
        for name, value in extra.items():
            if name.lower() in FRAMING:
                warnings.append(
                    f"Left out the header {name!r}: how the request is framed and sent is ours."
                )
            else:
                merged[name.lower()] = (name, value)
    headers: dict[str, str] = {}
    for name, value in merged.values():
        if _TOKEN.fullmatch(name) and not _BAD_VALUE.search(value):
            headers[name] = value
        else:
            warnings.append(f"Left out the header {name!r}: HTTP cannot carry it.")
    return headers


def _json(value: Any) -> bytes:
    return msgspec.json.encode(value)


def _event(event: Mapping[str, Any]) -> dict[str, Any]:
    """A JSON copy of the event: templates and bodies never touch the caller's."""
    copy: Any = msgspec.json.decode(_json(dict(event)))
    return copy if isinstance(copy, dict) else {}


def _webhook(p: Mapping[str, str], event: dict[str, Any], unleash_url: str) -> Outgoing:
    warnings: list[str] = []
    url = p.get("url", "")
    content_type = _param(p, "contentType") or JSON
    event_json = _json(event)
    body: bytes = event_json
    shown: Any = event
    template = _param(p, "bodyTemplate")
    if template is not None:
        context = {
            "event": event,
            # Encoded twice: `{{{eventJson}}}` writes the event as one JSON string.
            "eventJson": _json(event_json.decode()).decode(),
            "eventMarkdown": format_event(event, unleash_url=unleash_url).text,
        }
        rendered = _template(template, context, warnings)
        if rendered is not None:
            body, shown = rendered.encode(), rendered
    own = {"Content-Type": content_type, "Authorization": _param(p, "authorization")}
    headers = _headers(own, p, warnings)
    # The details say the type that goes: custom headers may replace it, and one HTTP cannot
    # carry is left out (the client then sends bytes as such).
    sent = next((v for k, v in headers.items() if k.lower() == "content-type"), OCTETS)
    return Outgoing(
        url=url,
        headers=headers,
        body=body,
        details={"url": url, "contentType": sent, "body": shown},
        warnings=warnings,
    )


def _slack_channels(event: Mapping[str, Any], default: str) -> list[str]:
    tags = event.get("tags")
    channels = [
        js_string(tag.get("value"))
        for tag in (tags if isinstance(tags, list) else [])
        if isinstance(tag, Mapping) and tag.get("type") == "slack"
    ]
    return channels or [default]


def _slack(p: Mapping[str, str], event: dict[str, Any], unleash_url: str) -> Outgoing:
    warnings: list[str] = []
    url = p.get("url", "")
    username = _param(p, "username") or "Unleash"
    channels = _slack_channels(event, p.get("defaultChannel", ""))
    formatted = format_event(event, unleash_url=unleash_url, slack=True)
    text = formatted.text[:SLACK_MAX_TEXT]
    action: dict[str, Any] = {
        "name": "featureToggle",
        "text": "Open in Unleash",
        "type": "button",
        "value": "featureToggle",
        "style": "primary",
    }
    if formatted.url is not None:
        action["url"] = formatted.url
    body = {
        "username": username,
        "icon_emoji": _param(p, "emojiIcon") or ":unleash:",
        "text": text,
        "channel": f"#{channels[0]}",
        "attachments": [{"actions": [action]}],
    }
    trimmed = f" (trimmed to {SLACK_MAX_TEXT} characters)" if text != formatted.text else ""
    return Outgoing(
        url=url,
        headers=_headers({"Content-Type": JSON}, p, warnings),
        body=_json(body),
        details={
            "url": url,
            "channels": channels,
            "username": username,
            "message": formatted.text + trimmed,
        },
        warnings=warnings,
    )


def _teams(p: Mapping[str, str], event: dict[str, Any], unleash_url: str) -> Outgoing:
    warnings: list[str] = []
    url = p.get("url", "")
    formatted = format_event(event, unleash_url=unleash_url)
    target: dict[str, Any] = {"os": "default"}
    if formatted.url is not None:
        target["uri"] = formatted.url
    body = {
        "themeColor": "0076D7",
        "summary": "Message",
        "sections": [
            {
                "activityTitle": formatted.text,
                "activitySubtitle": "Unleash notification update",
                "facts": [
                    {"name": "User", "value": event.get("createdBy")},
                    {"name": "Action", "value": event.get("type")},
                ],
            }
        ],
        "potentialAction": [
            {"@type": "OpenUri", "name": "Go to feature", "targets": [target]},
        ],
    }
    return Outgoing(
        url=url,
        headers=_headers({"Content-Type": JSON}, p, warnings),
        body=_json(body),
        details={"url": url, "body": body},
        warnings=warnings,
    )


def _markdown_text(event: dict[str, Any], unleash_url: str) -> str:
    return f"%%% \n {format_event(event, unleash_url=unleash_url).text} \n %%% "


def _datadog(p: Mapping[str, str], event: dict[str, Any], unleash_url: str) -> Outgoing:
    warnings: list[str] = []
    url = _param(p, "url") or DATADOG_URL
    template = _param(p, "bodyTemplate")
    text = None if template is None else _template(template, {"event": event}, warnings)
    body: dict[str, Any] = {
        "text": _markdown_text(event, unleash_url) if text is None else text,
        "title": "Unleash notification update",
    }
    tags = event.get("tags")
    if isinstance(tags, list):
        body["tags"] = [
            f"{js_string(_field(tag, 'type'))}:{js_string(_field(tag, 'value'))}" for tag in tags
        ]
    source_type = _param(p, "sourceTypeName")
    if source_type is not None:
        body["source_type_name"] = source_type
    own = {"Content-Type": JSON, "DD-API-KEY": p.get("apiKey", "")}
    return Outgoing(
        url=url,
        headers=_headers(own, p, warnings),
        body=_json(body),
        details={"url": url, "body": body},
        warnings=warnings,
    )


def _field(value: Any, key: str) -> Any:
    return value.get(key) if isinstance(value, Mapping) else None


def _epoch_ms(value: Any) -> Any:
    """An ISO time as milliseconds since the epoch, as Unleash sends New Relic its times."""
    if not isinstance(value, str):
        return value
    try:
        return int(datetime.fromisoformat(value).timestamp() * 1000)
    except (ValueError, OverflowError, OSError):
        return value


def _new_relic(p: Mapping[str, str], event: dict[str, Any], unleash_url: str) -> Outgoing:
    del unleash_url  # New Relic gets fields, no sentence
    warnings: list[str] = []
    url = p.get("url", "")
    body: dict[str, Any] = {
        "eventType": "UnleashServiceEvent",
        "unleashEventType": event.get("type"),
        "featureName": event.get("featureName"),
        "environment": event.get("environment"),
        "createdBy": event.get("createdBy"),
        "createdByUserId": event.get("createdByUserId"),
        "createdAt": _epoch_ms(event.get("createdAt")),
    }
    data = event.get("data")
    if isinstance(data, dict):
        body.update(data)
    shown: Any = body
    encoded = _json(body)
    template = _param(p, "bodyTemplate")
    rendered = None if template is None else _template(template, {"event": event}, warnings)
    if rendered is not None:
        shown, encoded = rendered, rendered.encode()
    own = {"Api-Key": p.get("licenseKey", ""), "Content-Type": JSON, "Content-Encoding": "gzip"}
    return Outgoing(
        url=url,
        headers=_headers(own, p, warnings),
        # mtime 0: the same event gives the same bytes (and the same signature).
        body=gzip.compress(encoded, mtime=0),
        details={"url": url, "body": shown},
        warnings=warnings,
    )


_RENDERERS = {
    "webhook": _webhook,
    "slack": _slack,
    "teams": _teams,
    "datadog": _datadog,
    "new-relic": _new_relic,
}


def render(
    provider: str, parameters: Mapping[str, str], event: Mapping[str, Any], *, unleash_url: str
) -> Outgoing:
    """The request that tells `provider` of `event` (parameters hold plain values)."""
    build = _RENDERERS.get(provider)
    if build is None:
        raise ValueError(f"Unknown integration provider: {provider!r}")
    return build(parameters, _event(event), unleash_url.rstrip("/"))
