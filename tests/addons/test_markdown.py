"""One event as Unleash's integrations word it: the sentence and the link."""

from typing import Any

from service.addons.markdown import format_event, js_string

HOST = "http://host"


def event(**fields: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "id": 1,
        "type": "feature-created",
        "createdBy": "admin",
        "createdByUserId": 1,
        "createdAt": "2024-05-01T10:00:00.000Z",
        "data": {"name": "checkout"},
        "preData": None,
        "tags": [],
        "featureName": "checkout",
        "project": "default",
        "environment": None,
    }
    return base | fields


def test_created_flag_in_markdown_and_in_slack_style() -> None:
    md = format_event(event(), unleash_url=HOST)
    assert md.label == "Flag created"
    assert md.text == (
        "*admin* created *[checkout](http://host/projects/default/features/checkout)* "
        "in project *[default](http://host/projects/default)*"
    )
    assert md.url == "http://host/projects/default/features/checkout"
    slack = format_event(event(), unleash_url=HOST + "/", slack=True)
    assert slack.text == (
        "*admin* created *<http://host/projects/default/features/checkout|checkout>* "
        "in project *<http://host/projects/default|default>*"
    )


def test_enabled_in_an_environment() -> None:
    text = format_event(
        event(type="feature-environment-enabled", environment="production"), unleash_url=HOST
    ).text
    assert text == (
        "*admin* enabled *[checkout](http://host/projects/default/features/checkout)* for the "
        "*production* environment in project *[default](http://host/projects/default)*"
    )


def test_archived_links_to_the_archive() -> None:
    found = format_event(event(type="feature-archived"), unleash_url=HOST)
    assert (
        found.text
        == "*admin* archived *checkout* in project *[default](http://host/projects/default)*"
    )
    assert found.url == "http://host/projects/default/archive"


def test_tagged_and_untagged() -> None:
    tagged = format_event(
        event(type="feature-tagged", data={"type": "simple", "value": "team-a"}), unleash_url=HOST
    )
    assert "with *simple:team-a* in project" in tagged.text
    untagged = format_event(
        event(type="feature-untagged", data=None, preData={"type": "slack", "value": "ops"}),
        unleash_url=HOST,
    )
    assert "untagged" in untagged.text
    assert "with *slack:ops* in project" in untagged.text


def test_flexible_rollout_update_says_what_changed() -> None:
    found = format_event(
        event(
            type="feature-strategy-update",
            environment="development",
            preData={
                "name": "flexibleRollout",
                "parameters": {"rollout": "50", "stickiness": "default", "groupId": "checkout"},
                "constraints": [],
            },
            data={
                "name": "flexibleRollout",
                "title": "Half",
                "parameters": {"rollout": "75", "stickiness": "default", "groupId": "checkout"},
                "constraints": [
                    {"contextName": "userId", "operator": "IN", "values": ["1", "2"]},
                ],
                "segments": [3],
            },
        ),
        unleash_url=HOST,
    )
    assert found.text.endswith(
        "by updating strategy *Half* in *development* rollout from 50% to 75%; constraints "
        "from empty set of constraints to [userId is one of (1,2)]; segments from empty set "
        "of segments to (3)"
    )


def test_user_ids_update() -> None:
    found = format_event(
        event(
            type="feature-strategy-update",
            environment="development",
            preData={"name": "userWithId", "parameters": {"userIds": "a"}},
            data={"name": "userWithId", "parameters": {"userIds": "a,b"}},
        ),
        unleash_url=HOST,
    )
    assert found.text.endswith("in *development* userIds from [a] to [a,b]")


def test_an_event_type_without_a_sentence() -> None:
    found = format_event(event(type="feature-favorited", featureName=None), unleash_url=HOST)
    assert found.label == "feature-favorited"
    assert found.text == "*admin* triggered *feature-favorited*"
    assert found.url is None


def test_change_request_links_to_it() -> None:
    found = format_event(
        event(
            type="change-request-approved",
            environment="production",
            data={"changeRequestId": 7},
        ),
        unleash_url=HOST,
    )
    assert found.text == (
        "*admin* approved change request *[#7](http://host/projects/default/change-requests/7)*"
        " for feature flag *[checkout](http://host/projects/default/features/checkout)* in the "
        "*production* environment in project *[default](http://host/projects/default)*"
    )
    assert found.url == "http://host/projects/default/change-requests/7"


def test_instance_wide_things_link_to_their_page() -> None:
    found = format_event(
        event(type="segment-deleted", featureName=None, project=None, preData={"name": "beta"}),
        unleash_url=HOST,
    )
    assert found.text == "*admin* deleted segment *beta*"
    assert found.url == "http://host/segments"


def test_odd_shapes_read_as_empty() -> None:
    found = format_event(
        {"type": "feature-strategy-update", "data": [1], "preData": "x", "createdBy": 3},
        unleash_url=HOST,
    )
    assert found.text.startswith("*3* updated ** in project **")


def test_js_string() -> None:
    assert [js_string(v) for v in (None, True, False, 1, 1.0, 1.5, "a", [1, "b"], {"a": 1})] == [
        "",
        "true",
        "false",
        "1",
        "1",
        "1.5",
        "a",
        "1,b",
        "[object Object]",
    ]
