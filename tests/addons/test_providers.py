"""The providers as GET /api/admin/addons lists them: the fields Unleash's UI renders."""

import msgspec
import pytest

from service.addons import providers
from service.addons.providers import EVENT_TYPES, PROVIDERS, provider, required, sensitive


def listed() -> list[dict[str, object]]:
    return msgspec.json.decode(msgspec.json.encode(PROVIDERS))  # type: ignore[no-any-return]


def by_name() -> dict[str, dict[str, object]]:
    return {str(p["name"]): p for p in listed()}


def test_the_five_providers_in_unleash_order_without_slack_app() -> None:
    assert [p["name"] for p in listed()] == ["webhook", "slack", "teams", "datadog", "new-relic"]
    assert provider("slack-app") is None
    assert provider("datadog") is providers.DATADOG


def test_top_level_fields_as_unleash_lists_them() -> None:
    found = by_name()
    base = {"name", "displayName", "description", "documentationUrl", "parameters", "events"}
    assert {name: set(p) for name, p in found.items()} == {
        "webhook": base | {"howTo"},
        "slack": base | {"deprecated", "alerts", "tagTypes"},
        "teams": base | {"howTo"},
        "datadog": base | {"howTo", "tagTypes"},
        "new-relic": base | {"howTo", "tagTypes"},
    }
    assert {n: p["displayName"] for n, p in found.items()} == {
        "webhook": "Webhook",
        "slack": "Slack",
        "teams": "Microsoft Teams",
        "datadog": "Datadog",
        "new-relic": "New Relic",
    }
    deprecation = (
        "This integration is deprecated. Please try the new Slack App integration instead."
    )
    assert found["slack"]["deprecated"] == deprecation
    assert found["slack"]["alerts"] == [{"type": "warning", "text": deprecation}]
    assert found["slack"]["tagTypes"] == [
        {
            "name": "slack",
            "description": "Slack tag used by the slack-addon to specify the slack channel.",
            "icon": "S",
        }
    ]
    assert found["datadog"]["documentationUrl"] == "https://docs.getunleash.io/docs/addons/datadog"


def parameters(name: str) -> list[tuple[object, ...]]:
    found = by_name()[name]["parameters"]
    assert isinstance(found, list)
    return [
        (
            p["name"],
            p["displayName"],
            p["type"],
            p["required"],
            p["sensitive"],
            p.get("placeholder"),
        )
        for p in found
    ]


def test_parameters_as_unleash_gives_them_plus_the_webhooks_signing_secret() -> None:
    assert parameters("webhook") == [
        ("url", "Webhook URL", "url", True, True, None),
        ("contentType", "Content-Type", "text", False, False, "application/json"),
        ("authorization", "Authorization", "text", False, True, ""),
        ("signingSecret", "Signing secret", "text", False, True, None),
        (
            "customHeaders",
            "Extra HTTP Headers",
            "textfield",
            False,
            True,
            providers.WEBHOOK.parameters[4].placeholder,
        ),
        (
            "bodyTemplate",
            "Body template",
            "textfield",
            False,
            False,
            providers.WEBHOOK.parameters[5].placeholder,
        ),
    ]
    assert [p[:5] for p in parameters("slack")] == [
        ("url", "Slack webhook URL", "url", True, True),
        ("username", "Username", "text", False, False),
        ("emojiIcon", "Emoji Icon", "text", False, False),
        ("defaultChannel", "Default channel", "text", True, False),
        ("customHeaders", "Extra HTTP Headers", "textfield", False, True),
    ]
    assert [p[:5] for p in parameters("teams")] == [
        ("url", "Microsoft Teams webhook URL", "url", True, True),
        ("customHeaders", "Extra HTTP Headers", "textfield", False, True),
    ]
    assert [p[:5] for p in parameters("datadog")] == [
        ("url", "Datadog Events URL", "url", False, False),
        ("apiKey", "Datadog API key", "text", True, True),
        ("sourceTypeName", "Datadog Source Type Name", "text", False, False),
        ("customHeaders", "Extra HTTP Headers", "textfield", False, True),
        ("bodyTemplate", "Body template", "textfield", False, False),
    ]
    assert [p[:5] for p in parameters("new-relic")] == [
        ("url", "New Relic Event URL", "url", True, False),
        ("licenseKey", "New Relic License Key", "text", True, True),
        ("customHeaders", "Extra HTTP Headers", "textfield", False, True),
        ("bodyTemplate", "Body template", "textfield", False, False),
    ]


def test_the_webhook_url_says_we_retry_and_sign() -> None:
    url, secret = providers.WEBHOOK.parameters[0], providers.WEBHOOK.parameters[3]
    assert "one retry" not in url.description
    assert "retried with backoff" in url.description
    assert "signed" in url.description
    assert "HMAC-SHA256" in secret.description
    assert "Flagstore-Signature" in secret.description
    assert "shown once" in secret.description


def test_a_parameter_without_a_placeholder_has_none_in_json() -> None:
    url = by_name()["webhook"]["parameters"][0]  # type: ignore[index]
    assert "placeholder" not in url
    assert by_name()["webhook"]["parameters"][2]["placeholder"] == ""  # type: ignore[index]


def test_events_lists() -> None:
    found = by_name()
    chat = [
        "feature-created",
        "feature-updated",
        "feature-archived",
        "feature-revived",
        "feature-stale-on",
        "feature-stale-off",
        "feature-environment-enabled",
        "feature-environment-disabled",
        "feature-strategy-remove",
        "feature-strategy-update",
        "feature-strategy-add",
        "feature-metadata-updated",
        "feature-variants-updated",
        "feature-project-change",
        "feature-potentially-stale-on",
    ]
    monitoring = [e for e in chat if e != "feature-variants-updated"]
    monitoring.insert(-1, "feature-environment-variants-updated")
    assert found["slack"]["events"] == chat
    assert found["teams"]["events"] == chat
    assert found["datadog"]["events"] == monitoring
    assert found["new-relic"]["events"] == monitoring
    webhook = found["webhook"]["events"]
    assert isinstance(webhook, list)
    assert len(webhook) == 31
    assert webhook[6] == "feature-completed"
    assert webhook[-1] == "feature-potentially-stale-on"
    assert "change-request-schedule-suspended" in webhook
    assert len(EVENT_TYPES) == 32
    assert set(chat) | set(monitoring) | set(webhook) == EVENT_TYPES


def test_sensitive_and_required() -> None:
    assert sensitive("webhook") == {"url", "authorization", "signingSecret", "customHeaders"}
    assert sensitive("slack") == {"url", "customHeaders"}
    assert sensitive("teams") == {"url", "customHeaders"}
    assert sensitive("datadog") == {"apiKey", "customHeaders"}
    assert sensitive("new-relic") == {"licenseKey", "customHeaders"}
    assert required("webhook") == ("url",)
    assert required("slack") == ("url", "defaultChannel")
    assert required("teams") == ("url",)
    assert required("datadog") == ("apiKey",)
    assert required("new-relic") == ("url", "licenseKey")
    for name in ("slack-app", "nope"):
        with pytest.raises(ValueError, match="Unknown integration provider"):
            sensitive(name)
        with pytest.raises(ValueError, match="Unknown integration provider"):
            required(name)
