"""Pure decisions of flags, strategies, variants, tags, dependencies, clones and segments."""

from __future__ import annotations

import itertools
from datetime import UTC, datetime
from typing import TYPE_CHECKING

import msgspec
import pytest
from hypothesis import given
from hypothesis import strategies as st

from eventlog.events.features import (
    ClonedDependency,
    ClonedEnvironment,
    ClonedTag,
    Constraint,
    DependencyAdded,
    DependencyRemoved,
    EnvironmentVariantsSet,
    FeatureCloned,
    FeatureCreated,
    FeatureEnvironmentDisabled,
    FeatureEnvironmentEnabled,
    FeatureStaleSet,
    FeatureTagged,
    FeatureUntagged,
    Override,
    Payload,
    SegmentCreated,
    SegmentDeleted,
    SegmentUpdated,
    StrategyAdded,
    StrategyData,
    StrategyRemoved,
    StrategyUpdated,
    StrategyVariant,
    Variant,
)
from service.errors import Conflict, InvalidOperation, NameExists, NotFound, ValidationError
from service.features import commands, domain

if TYPE_CHECKING:
    from collections.abc import Callable

NOW = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
BAD_NAME = (
    "Name may only contain letters, digits and - _ . ! ~ * ' ( ), "
    "and may not be '.' or '..' - at `$.name`"
)


# --- builders -----------------------------------------------------------------------------------


def create_cmd(raw: bytes = b'{"name": "my-flag"}') -> commands.CreateFeature:
    return msgspec.json.decode(raw, type=commands.CreateFeature)


def strategy_body(raw: bytes = b'{"name": "default"}') -> commands.StrategyBody:
    return msgspec.json.decode(raw, type=commands.StrategyBody)


def variants_of(raw: bytes) -> list[commands.Variant]:
    return msgspec.json.decode(raw, type=list[commands.Variant])


def target(*, feature: str = "f", project: str = "p", environment: str = "prod") -> domain.Target:
    return domain.Target(feature=feature, project=project, environment=environment)


def env_state(
    *, environment_enabled: bool = True, enabled: bool = False
) -> domain.EnvironmentState:
    return domain.EnvironmentState(environment_enabled=environment_enabled, enabled=enabled)


def constraint(
    *,
    context_name: str = "userId",
    operator: str = "IN",
    values: list[str] | None = None,
    value: str | None = None,
    case_insensitive: bool = False,
    inverted: bool = False,
) -> Constraint:
    return Constraint(
        context_name=context_name,
        operator=operator,
        case_insensitive=case_insensitive,
        inverted=inverted,
        values=values or [],
        value=value,
    )


def cmd_constraint(
    operator: commands.Operator, *, value: str | None = None, values: list[str] | None = None
) -> commands.Constraint:
    return commands.Constraint(
        context_name="ctx", operator=operator, value=value, values=values or []
    )


def accepted(c: commands.Constraint) -> list[Constraint]:
    """The constraints a segment with this one stores (check_constraints let it through)."""
    body = commands.SegmentBody(name="s", constraints=[c])
    return domain.create_segment(body, segment_id=1, name_taken=False, now=NOW).constraints


def stored_strategy(
    *,
    strategy_id: str = "s1",
    name: str = "flexibleRollout",
    sort_order: int = 0,
    parameters: dict[str, str] | None = None,
) -> StrategyData:
    return StrategyData(
        id=strategy_id,
        name=name,
        title=None,
        disabled=False,
        sort_order=sort_order,
        constraints=[],
        parameters={"rollout": "50", "groupId": "src"} if parameters is None else parameters,
        variants=[],
        segments=[],
    )


def dep_state(
    *,
    projects: dict[str, str] | None = None,
    parent_has_parents: bool = False,
    child_has_children: bool = False,
    current: list[domain.Dependency] | None = None,
) -> domain.DependencyState:
    return domain.DependencyState(
        projects={"child": "p", "parent": "p"} if projects is None else projects,
        parent_has_parents=parent_has_parents,
        child_has_children=child_has_children,
        current=current or [],
    )


def dep_body(raw: bytes = b'{"feature": "parent"}') -> commands.DependencyBody:
    return msgspec.json.decode(raw, type=commands.DependencyBody)


def counter_ids() -> tuple[list[str], Callable[[], str]]:
    """new_id for clone_feature: id-1, id-2, ... and the list of those handed out."""
    handed: list[str] = []
    numbers = itertools.count(1)

    def new_id() -> str:
        handed.append(f"id-{next(numbers)}")
        return handed[-1]

    return handed, new_id


def clone_source(
    *,
    environments: list[str] | None = None,
    strategies: list[tuple[str, StrategyData]] | None = None,
    variants: dict[str, list[Variant]] | None = None,
) -> domain.CloneSource:
    return domain.CloneSource(
        name="src",
        project="origin",
        feature_type="kill-switch",
        description="the source",
        impression_data=True,
        position=41,
        environments=["dev", "prod"] if environments is None else environments,
        strategies=[] if strategies is None else strategies,
        variants={} if variants is None else variants,
        dependencies=[ClonedDependency(parent="up", enabled=False, variants=[])],
        tags=[ClonedTag(tag_type="simple", value="team-a")],
    )


def clone(
    cmd: commands.CloneFeature,
    source: domain.CloneSource | None,
    *,
    project_active: bool = True,
    holder_archived: bool | None = None,
) -> FeatureCloned:
    _, new_id = counter_ids()
    return domain.clone_feature(
        cmd,
        "src",
        "p",
        source,
        project_active=project_active,
        holder_archived=holder_archived,
        new_id=new_id,
        now=NOW,
    )


def segment_body(raw: bytes = b'{"name": "beta", "constraints": []}') -> commands.SegmentBody:
    return msgspec.json.decode(raw, type=commands.SegmentBody)


# --- create_feature -----------------------------------------------------------------------------


def test_create_feature_records_the_request_in_the_project() -> None:
    cmd = create_cmd(
        b'{"name": "checkout.v2", "type": "kill-switch", "description": "New checkout",'
        b' "impressionData": true}'
    )
    event = domain.create_feature(cmd, "shop", project_active=True, holder_archived=None, now=NOW)
    assert event == FeatureCreated(
        name="checkout.v2",
        project="shop",
        feature_type="kill-switch",
        description="New checkout",
        impression_data=True,
        created_at=NOW,
    )


@pytest.mark.parametrize("raw", [b'{"name": "f"}', b'{"name": "f", "description": ""}'])
def test_create_feature_defaults_to_a_release_without_description(raw: bytes) -> None:
    event = domain.create_feature(
        create_cmd(raw), "p", project_active=True, holder_archived=None, now=NOW
    )
    assert event == FeatureCreated(
        name="f",
        project="p",
        feature_type="release",
        description=None,
        impression_data=False,
        created_at=NOW,
    )


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("", "Name must not be empty - at `$.name`"),
        ("x" * 101, "Name must be at most 100 characters - at `$.name`"),
        ("has space", BAD_NAME),
        ("slash/", BAD_NAME),
        (".", BAD_NAME),
        ("..", BAD_NAME),
    ],
)
def test_create_feature_refuses_a_name_that_is_not_url_safe(name: str, message: str) -> None:
    with pytest.raises(ValidationError) as caught:
        domain.create_feature(
            commands.CreateFeature(name=name),
            "p",
            project_active=True,
            holder_archived=None,
            now=NOW,
        )
    assert caught.value.message == message
    assert caught.value.status == 400


def test_create_feature_accepts_a_name_of_exactly_100_allowed_characters() -> None:
    name = "a-_.!~*'()9" * 9 + "z"
    assert len(name) == 100
    event = domain.create_feature(
        commands.CreateFeature(name=name), "p", project_active=True, holder_archived=None, now=NOW
    )
    assert event.name == name


def test_create_feature_refuses_a_missing_or_archived_project() -> None:
    with pytest.raises(NotFound) as caught:
        domain.create_feature(
            create_cmd(), "ghost", project_active=False, holder_archived=None, now=NOW
        )
    assert caught.value.message == "Project ghost does not exist"
    assert caught.value.status == 404


@pytest.mark.parametrize(
    ("holder_archived", "message"),
    [
        (False, "A flag with that name already exists"),
        (True, "An archived flag with that name already exists"),
    ],
)
def test_create_feature_refuses_a_taken_name_and_says_whether_it_is_archived(
    holder_archived: bool, message: str
) -> None:
    with pytest.raises(NameExists) as caught:
        domain.create_feature(
            create_cmd(), "p", project_active=True, holder_archived=holder_archived, now=NOW
        )
    assert caught.value.message == message
    assert caught.value.status == 409


def test_create_feature_checks_the_name_then_the_project_then_that_the_name_is_free() -> None:
    bad = commands.CreateFeature(name="bad name")
    with pytest.raises(ValidationError):
        domain.create_feature(bad, "p", project_active=False, holder_archived=True, now=NOW)
    with pytest.raises(NotFound):
        domain.create_feature(
            create_cmd(), "p", project_active=False, holder_archived=True, now=NOW
        )


# --- stale (archive and revive: test_decide_archive.py) -------------------------------------------


def test_mark_stale_records_only_flags_whose_staleness_changes() -> None:
    flags = {"a": ("p", False), "b": ("p", True), "c": ("p", False)}
    events = domain.mark_stale(["c", "a", "b", "unknown", "a"], "p", stale=True, flags=flags)
    assert events == [
        FeatureStaleSet(name="c", project="p", stale=True),
        FeatureStaleSet(name="a", project="p", stale=True),
    ]


def test_mark_stale_can_unmark_and_ignores_names_that_are_no_flag() -> None:
    flags = {"a": ("p", True), "b": ("p", False)}
    assert domain.mark_stale(["a", "b", "ghost"], "p", stale=False, flags=flags) == [
        FeatureStaleSet(name="a", project="p", stale=False)
    ]
    assert domain.mark_stale([], "p", stale=True, flags={}) == []


def test_mark_stale_refuses_the_whole_request_when_a_flag_is_in_another_project() -> None:
    flags = {"a": ("p", False), "b": ("zeta", False), "c": ("alpha", False), "d": ("zeta", True)}
    with pytest.raises(InvalidOperation) as caught:
        domain.mark_stale(["a", "b", "c", "d"], "p", stale=True, flags=flags)
    assert caught.value.message == (
        "The operation could not be completed. The features exist, but the provided project "
        'ids ("alpha,zeta") does not match the project provided in request URL ("p").'
    )
    assert caught.value.status == 403


# --- strategies ---------------------------------------------------------------------------------

FULL_STRATEGY = (
    b'{"name": "flexibleRollout", "title": "Half", "disabled": true,'
    b' "constraints": [{"contextName": "userId", "operator": "IN", "values": ["1", "2"]},'
    b'   {"contextName": "version", "operator": "SEMVER_GT", "value": "1.2.3",'
    b'    "caseInsensitive": true, "inverted": true}],'
    b' "parameters": {"rollout": "50", "stickiness": "default", "groupId": "f"},'
    b' "variants": [{"name": "a", "weight": 200, "weightType": "fix", "stickiness": "default",'
    b'    "payload": {"type": "json", "value": "{\\"x\\": 1}"}},'
    b'   {"name": "b", "weight": 0, "weightType": "variable", "stickiness": "userId"},'
    b'   {"name": "c", "weight": 999, "weightType": "variable", "stickiness": "userId"}],'
    b' "segments": [3, 1, 3]}'
)


def full_strategy_data(strategy_id: str, sort_order: int) -> StrategyData:
    return StrategyData(
        id=strategy_id,
        name="flexibleRollout",
        title="Half",
        disabled=True,
        sort_order=sort_order,
        constraints=[
            constraint(context_name="userId", operator="IN", values=["1", "2"]),
            constraint(
                context_name="version",
                operator="SEMVER_GT",
                value="1.2.3",
                case_insensitive=True,
                inverted=True,
            ),
        ],
        parameters={"rollout": "50", "stickiness": "default", "groupId": "f"},
        variants=[
            StrategyVariant(
                name="a",
                weight=200,
                weight_type="fix",
                stickiness="default",
                payload=Payload(type="json", value='{"x": 1}'),
            ),
            StrategyVariant(
                name="b", weight=400, weight_type="variable", stickiness="userId", payload=None
            ),
            StrategyVariant(
                name="c", weight=400, weight_type="variable", stickiness="userId", payload=None
            ),
        ],
        segments=[3, 1],
    )


def test_add_strategy_stores_the_whole_strategy_with_weights_spread_and_segments_once() -> None:
    event = domain.add_strategy(
        target(),
        strategy_body(FULL_STRATEGY),
        env_state(),
        missing_segments=[],
        strategy_id="sid",
        next_sort_order=7,
        now=NOW,
    )
    assert event == StrategyAdded(
        name="f",
        project="p",
        environment="prod",
        strategy=full_strategy_data("sid", 7),
        added_at=NOW,
    )


def test_add_strategy_takes_the_sort_order_given_and_treats_null_disabled_as_enabled() -> None:
    body = strategy_body(b'{"name": "default", "sortOrder": -3, "disabled": null}')
    event = domain.add_strategy(
        target(),
        body,
        env_state(enabled=True),
        missing_segments=[],
        strategy_id="sid",
        next_sort_order=7,
        now=NOW,
    )
    assert event == StrategyAdded(
        name="f",
        project="p",
        environment="prod",
        strategy=StrategyData(
            id="sid",
            name="default",
            title=None,
            disabled=False,
            sort_order=-3,
            constraints=[],
            parameters={},
            variants=[],
            segments=[],
        ),
        added_at=NOW,
    )


def test_a_missing_flag_is_refused_before_a_disabled_environment() -> None:
    with pytest.raises(NotFound) as caught:
        domain.check_target(target(), None)
    assert caught.value.message == "There is no flag named f in project p"
    with pytest.raises(NotFound) as caught:
        domain.check_target(target(), env_state(environment_enabled=False))
    assert caught.value.message == "Environment prod is not enabled in project p"


def test_add_strategy_refuses_a_missing_flag_before_missing_segments() -> None:
    with pytest.raises(NotFound) as caught:
        domain.add_strategy(
            target(),
            strategy_body(),
            None,
            missing_segments=[9],
            strategy_id="sid",
            next_sort_order=0,
            now=NOW,
        )
    assert caught.value.message == "There is no flag named f in project p"


def test_add_strategy_refuses_an_environment_not_enabled_in_the_project() -> None:
    with pytest.raises(NotFound) as caught:
        domain.add_strategy(
            target(environment="staging"),
            strategy_body(),
            env_state(environment_enabled=False),
            missing_segments=[],
            strategy_id="sid",
            next_sort_order=0,
            now=NOW,
        )
    assert caught.value.message == "Environment staging is not enabled in project p"


def test_add_strategy_names_the_first_missing_segment_before_checking_the_body() -> None:
    body = strategy_body(
        b'{"name": "default", "segments": [7, 8],'
        b' "constraints": [{"contextName": "n", "operator": "NUM_EQ", "value": "x"}]}'
    )
    with pytest.raises(ValidationError) as caught:
        domain.add_strategy(
            target(),
            body,
            env_state(),
            missing_segments=[7, 8],
            strategy_id="sid",
            next_sort_order=0,
            now=NOW,
        )
    assert caught.value.message == "Segment 7 does not exist - at `$.segments`"


def test_add_strategy_refuses_an_invalid_constraint() -> None:
    body = strategy_body(
        b'{"name": "default", "constraints": [{"contextName": "n", "operator": "IN"}]}'
    )
    with pytest.raises(ValidationError) as caught:
        domain.add_strategy(
            target(),
            body,
            env_state(),
            missing_segments=[],
            strategy_id="sid",
            next_sort_order=0,
            now=NOW,
        )
    assert caught.value.message == "IN needs a non-empty `values` list - at `$.constraints[0]`"


def test_update_strategy_keeps_the_strategys_place_when_no_sort_order_is_given() -> None:
    event = domain.update_strategy(
        target(),
        strategy_body(FULL_STRATEGY),
        env_state(),
        strategy_id="sid",
        current_sort_order=4,
        missing_segments=[],
    )
    assert event == StrategyUpdated(
        name="f", project="p", environment="prod", strategy=full_strategy_data("sid", 4)
    )


def test_update_strategy_moves_the_strategy_to_the_sort_order_given() -> None:
    event = domain.update_strategy(
        target(),
        strategy_body(b'{"name": "default", "sortOrder": 12}'),
        env_state(),
        strategy_id="sid",
        current_sort_order=4,
        missing_segments=[],
    )
    assert event.strategy.sort_order == 12


def test_update_strategy_refuses_a_strategy_that_is_not_the_flags_there() -> None:
    with pytest.raises(NotFound) as caught:
        domain.update_strategy(
            target(),
            strategy_body(),
            env_state(),
            strategy_id="abc",
            current_sort_order=None,
            missing_segments=[5],
        )
    assert caught.value.message == "Could not find strategy with id=abc"


def test_update_strategy_checks_the_target_then_the_strategy_then_the_segments() -> None:
    with pytest.raises(NotFound) as caught:
        domain.update_strategy(
            target(),
            strategy_body(),
            env_state(environment_enabled=False),
            strategy_id="abc",
            current_sort_order=None,
            missing_segments=[5],
        )
    assert caught.value.message == "Environment prod is not enabled in project p"
    with pytest.raises(ValidationError) as invalid:
        domain.update_strategy(
            target(),
            strategy_body(),
            env_state(),
            strategy_id="abc",
            current_sort_order=0,
            missing_segments=[5],
        )
    assert invalid.value.message == "Segment 5 does not exist - at `$.segments`"


def test_remove_strategy_removes_a_strategy_of_the_flag() -> None:
    event = domain.remove_strategy(target(), env_state(), strategy_id="sid", exists=True)
    assert event == StrategyRemoved(name="f", project="p", environment="prod", strategy_id="sid")


def test_remove_strategy_refuses_an_unknown_strategy_after_checking_the_flag() -> None:
    with pytest.raises(NotFound) as caught:
        domain.remove_strategy(target(), env_state(), strategy_id="sid", exists=False)
    assert caught.value.message == "Could not find strategy with id=sid"
    with pytest.raises(NotFound) as missing:
        domain.remove_strategy(target(), None, strategy_id="sid", exists=False)
    assert missing.value.message == "There is no flag named f in project p"


# --- switches -----------------------------------------------------------------------------------


def test_switch_environment_switches_on_a_flag_that_is_off() -> None:
    assert domain.switch_environment(
        target(), env_state(enabled=False), on=True
    ) == FeatureEnvironmentEnabled(name="f", project="p", environment="prod")


def test_switch_environment_switches_off_a_flag_that_is_on() -> None:
    assert domain.switch_environment(
        target(), env_state(enabled=True), on=False
    ) == FeatureEnvironmentDisabled(name="f", project="p", environment="prod")


@pytest.mark.parametrize("on", [True, False])
def test_switch_environment_records_nothing_when_the_flag_is_already_so(on: bool) -> None:
    assert domain.switch_environment(target(), env_state(enabled=on), on=on) is None


@pytest.mark.parametrize(
    ("state", "message"),
    [
        (None, "There is no flag named f in project p"),
        (env_state(environment_enabled=False), "Environment prod is not enabled in project p"),
    ],
)
def test_switch_environment_refuses_a_missing_flag_or_disabled_environment(
    state: domain.EnvironmentState | None, message: str
) -> None:
    with pytest.raises(NotFound) as caught:
        domain.switch_environment(target(), state, on=True)
    assert caught.value.message == message


# --- environment variants -----------------------------------------------------------------------


def test_set_environment_variants_stores_the_variants_with_weights_spread() -> None:
    variants = variants_of(
        b'[{"name": "red", "weight": 100, "weightType": "fix",'
        b'  "payload": {"type": "number", "value": "1.5"},'
        b'  "overrides": [{"contextName": "userId", "values": ["7"]}]},'
        b' {"name": "blue"}, {"name": "green", "stickiness": "sessionId"}]'
    )
    event = domain.set_environment_variants(target(), variants, env_state())
    assert event == EnvironmentVariantsSet(
        name="f",
        project="p",
        environment="prod",
        variants=[
            Variant(
                name="blue",
                weight=450,
                weight_type="variable",
                stickiness="default",
                payload=None,
                overrides=[],
            ),
            Variant(
                name="green",
                weight=450,
                weight_type="variable",
                stickiness="sessionId",
                payload=None,
                overrides=[],
            ),
            Variant(
                name="red",
                weight=100,
                weight_type="fix",
                stickiness="default",
                payload=Payload(type="number", value="1.5"),
                overrides=[Override(context_name="userId", values=["7"])],
            ),
        ],
    )


def test_set_environment_variants_can_clear_the_variants() -> None:
    assert domain.set_environment_variants(target(), [], env_state()) == EnvironmentVariantsSet(
        name="f", project="p", environment="prod", variants=[]
    )


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        (b'[{"name": "a"}, {"name": "a"}]', "Variant names must be unique - at `$`"),
        (
            b'[{"name": "a"}, {"name": "b", "payload": {"type": "number", "value": "ten"}}]',
            "A number payload needs a number - at `$[1].payload.value`",
        ),
        (
            b'[{"name": "a", "payload": {"type": "number", "value": "Infinity"}}]',
            "A number payload needs a number - at `$[0].payload.value`",
        ),
        (
            b'[{"name": "a", "payload": {"type": "json", "value": "{nope"}}]',
            "A json payload needs valid JSON - at `$[0].payload.value`",
        ),
        (
            (
                b'[{"name": "a", "weight": 700, "weightType": "fix"},'
                b' {"name": "b", "weight": 500, "weightType": "fix"}, {"name": "c"}]'
            ),
            "Fixed variant weights total 1200, more than 1000 - at `$`",
        ),
        (
            (
                b'[{"name": "a", "weight": 400, "weightType": "fix"},'
                b' {"name": "b", "weight": 500, "weightType": "fix"}]'
            ),
            "Variant weights must total 1000 (got 900) or include a variable variant - at `$`",
        ),
    ],
)
def test_set_environment_variants_refuses_invalid_variants(raw: bytes, message: str) -> None:
    with pytest.raises(ValidationError) as caught:
        domain.set_environment_variants(target(), variants_of(raw), env_state())
    assert caught.value.message == message


def test_set_environment_variants_accepts_string_and_csv_payloads_as_they_are() -> None:
    variants = variants_of(
        b'[{"name": "a", "payload": {"type": "string", "value": "not json {"}},'
        b' {"name": "b", "payload": {"type": "csv", "value": "x,y"}}]'
    )
    event = domain.set_environment_variants(target(), variants, env_state())
    assert [v.payload for v in event.variants] == [
        Payload(type="string", value="not json {"),
        Payload(type="csv", value="x,y"),
    ]


def test_set_environment_variants_checks_the_flag_before_the_variants() -> None:
    with pytest.raises(NotFound) as caught:
        domain.set_environment_variants(
            target(), variants_of(b'[{"name": "a"}, {"name": "a"}]'), None
        )
    assert caught.value.message == "There is no flag named f in project p"


# --- spread_weights -----------------------------------------------------------------------------


@st.composite
def variant_mixes(draw: st.DrawFn) -> list[commands.Variant]:
    """Fixed and variable variants, at least one variable, fixed weights totalling <= 1000."""
    count = draw(st.integers(min_value=1, max_value=25))
    forced_variable = draw(st.integers(min_value=0, max_value=count - 1))
    budget = 1000
    variants: list[commands.Variant] = []
    for i in range(count):
        if i != forced_variable and draw(st.booleans()):
            weight = draw(st.integers(min_value=0, max_value=budget))
            budget -= weight
            variants.append(commands.Variant(name=f"v{i}", weight=weight, weight_type="fix"))
        else:
            weight = draw(st.integers(min_value=0, max_value=1000))
            variants.append(commands.Variant(name=f"v{i}", weight=weight, weight_type="variable"))
    return variants


@given(variant_mixes())
def test_spread_weights_totals_1000_and_keeps_fixed_weights(
    variants: list[commands.Variant],
) -> None:
    spread = domain.spread_weights(variants, "$")
    assert sum(v.weight for v in spread) == 1000
    assert [v.name for v in spread] == [v.name for v in domain.by_name(variants)]
    after = {v.name: v for v in spread}
    for before in variants:
        assert after[before.name].weight_type == before.weight_type
        if before.weight_type == "fix":
            assert after[before.name] == before


@given(variant_mixes())
def test_spread_weights_shares_the_rest_evenly_earlier_variants_first(
    variants: list[commands.Variant],
) -> None:
    weights = {v.name: v.weight for v in domain.spread_weights(variants, "$")}
    shared = [weights[v.name] for v in variants if v.weight_type != "fix"]  # in the order sent
    assert max(shared) - min(shared) <= 1
    assert shared == sorted(shared, reverse=True)


def test_variants_are_stored_by_name_after_the_remainder_went_to_the_first_sent() -> None:
    """As Unleash 6.10.1 stores them (fixVariantWeights, then its stores sort by
    `localeCompare`): SDKs weigh variants in the stored order."""
    variants = variants_of(b'[{"name": "cherry"}, {"name": "Banana"}, {"name": "apple"}]')
    spread = domain.spread_weights(variants, "$")
    assert [(v.name, v.weight) for v in spread] == [
        ("apple", 333),
        ("Banana", 333),
        ("cherry", 334),
    ]
    kept = domain.kept_weights(spread[::-1], "$")
    assert [v.name for v in kept] == ["apple", "Banana", "cherry"]


@pytest.mark.parametrize(
    ("names", "stored"),
    [
        (["b", "B", "a", "A"], ["a", "A", "b", "B"]),  # case second, lower case first
        (["x10", "x9", "x-1", "x_1"], ["x_1", "x-1", "x10", "x9"]),  # punctuation, digits
        (["z", "1", "-"], ["-", "1", "z"]),
    ],
)
def test_by_name_orders_as_localecompare_does(names: list[str], stored: list[str]) -> None:
    variants = [commands.Variant(name=n) for n in names]
    assert [v.name for v in domain.by_name(variants)] == stored


def test_spread_weights_gives_the_remainder_to_the_first_variable_variants() -> None:
    variants = variants_of(b'[{"name": "a"}, {"name": "b"}, {"name": "c"}]')
    assert [v.weight for v in domain.spread_weights(variants, "$")] == [334, 333, 333]


def test_spread_weights_works_on_strategy_variants_too() -> None:
    variants = msgspec.json.decode(
        b'[{"name": "a", "weight": 1000, "weightType": "fix", "stickiness": "default"},'
        b' {"name": "b", "weight": 70, "weightType": "variable", "stickiness": "default"}]',
        type=list[commands.StrategyVariant],
    )
    assert [v.weight for v in domain.spread_weights(variants, "$.variants")] == [1000, 0]


@given(st.lists(st.integers(min_value=0, max_value=1000), min_size=1, max_size=10))
def test_spread_weights_takes_only_fixed_variants_only_when_they_total_1000(
    weights: list[int],
) -> None:
    variants = [
        commands.Variant(name=f"v{i}", weight=w, weight_type="fix") for i, w in enumerate(weights)
    ]
    total = sum(weights)
    if total == 1000:
        assert domain.spread_weights(variants, "$") == variants
        return
    with pytest.raises(ValidationError) as caught:
        domain.spread_weights(variants, "$.x")
    if total > 1000:
        assert (
            caught.value.message
            == f"Fixed variant weights total {total}, more than 1000 - at `$.x`"
        )
    else:
        assert caught.value.message == (
            f"Variant weights must total 1000 (got {total}) or include a variable variant"
            " - at `$.x`"
        )


def test_spread_weights_of_no_variants_is_empty() -> None:
    assert domain.spread_weights([], "$") == []


# --- constraints --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("operator", "value", "message"),
    [
        ("NUM_EQ", None, "NUM_EQ needs a `value` - at `$.constraints[0].value`"),
        ("DATE_AFTER", "   ", "DATE_AFTER needs a `value` - at `$.constraints[0].value`"),
        ("NUM_GT", "ten", "NUM_GT needs a number - at `$.constraints[0].value`"),
        ("NUM_LTE", "nan", "NUM_LTE needs a number - at `$.constraints[0].value`"),
        ("NUM_GTE", "-inf", "NUM_GTE needs a number - at `$.constraints[0].value`"),
        (
            "DATE_BEFORE",
            "yesterday",
            "DATE_BEFORE needs an ISO 8601 date - at `$.constraints[0].value`",
        ),
        ("SEMVER_EQ", "1.2", "SEMVER_EQ needs a semantic version - at `$.constraints[0].value`"),
        ("SEMVER_GT", "v1.2.3", "SEMVER_GT needs a semantic version - at `$.constraints[0].value`"),
        ("SEMVER_LT", "01.2.3", "SEMVER_LT needs a semantic version - at `$.constraints[0].value`"),
        (
            "SEMVER_EQ",
            "1.2.3\n",
            "SEMVER_EQ needs a semantic version - at `$.constraints[0].value`",
        ),
    ],
)
def test_check_constraints_refuses_a_bad_single_value(
    operator: commands.Operator, value: str | None, message: str
) -> None:
    with pytest.raises(ValidationError) as caught:
        domain.check_constraints([cmd_constraint(operator, value=value, values=["1"])])
    assert caught.value.message == message


@pytest.mark.parametrize(
    "operator", ["IN", "NOT_IN", "STR_ENDS_WITH", "STR_STARTS_WITH", "STR_CONTAINS"]
)
def test_check_constraints_needs_values_for_list_operators_and_names_the_constraint(
    operator: commands.Operator,
) -> None:
    good = cmd_constraint("IN", values=["x"])
    with pytest.raises(ValidationError) as caught:
        domain.check_constraints([good, cmd_constraint(operator, value="ignored")])
    assert (
        caught.value.message
        == f"{operator} needs a non-empty `values` list - at `$.constraints[1]`"
    )


@pytest.mark.parametrize(
    ("operator", "value"),
    [
        ("NUM_EQ", "-1.5e3"),
        ("NUM_LT", "0"),
        ("DATE_AFTER", "2026-01-02T03:04:05+00:00"),
        ("DATE_BEFORE", "2026-01-02T03:04:05.123Z"),
        ("SEMVER_EQ", "1.2.3"),
        ("SEMVER_GT", "10.0.0-beta.1+build.7"),
        ("SEMVER_LT", "0.0.0"),
    ],
)
def test_check_constraints_accepts_valid_single_values_without_a_values_list(
    operator: commands.Operator, value: str
) -> None:
    assert accepted(cmd_constraint(operator, value=value)) == [
        constraint(context_name="ctx", operator=operator, value=value)
    ]


@given(st.floats(allow_nan=False, allow_infinity=False))
def test_check_constraints_accepts_any_finite_number(number: float) -> None:
    assert accepted(cmd_constraint("NUM_EQ", value=repr(number)))[0].value == repr(number)


@given(
    st.tuples(*[st.integers(min_value=0, max_value=10**6)] * 3),
    st.sampled_from(["", "-rc.1", "-alpha", "+sha.5114f85", "-beta.2+exp.sha.5114f85"]),
)
def test_check_constraints_accepts_any_semantic_version(
    numbers: tuple[int, int, int], suffix: str
) -> None:
    version = ".".join(map(str, numbers)) + suffix
    assert accepted(cmd_constraint("SEMVER_EQ", value=version))[0].value == version


# --- strategy_data ------------------------------------------------------------------------------


def test_strategy_data_checks_constraints_before_variants() -> None:
    body = strategy_body(
        b'{"name": "default", "constraints": [{"contextName": "c", "operator": "IN"}],'
        b' "variants": [{"name": "a", "weight": 1, "weightType": "fix", "stickiness": "s"},'
        b'              {"name": "a", "weight": 1, "weightType": "fix", "stickiness": "s"}]}'
    )
    with pytest.raises(ValidationError) as caught:
        domain.strategy_data(body, "sid", 0)
    assert caught.value.message == "IN needs a non-empty `values` list - at `$.constraints[0]`"


@pytest.mark.parametrize(
    ("variants", "message"),
    [
        (
            (
                b'[{"name": "a", "weight": 1, "weightType": "variable", "stickiness": "s"},'
                b' {"name": "a", "weight": 1, "weightType": "variable", "stickiness": "s"}]'
            ),
            "Variant names must be unique - at `$.variants`",
        ),
        (
            (
                b'[{"name": "a", "weight": 1, "weightType": "variable", "stickiness": "s",'
                b'  "payload": {"type": "json", "value": "[1,"}}]'
            ),
            "A json payload needs valid JSON - at `$.variants[0].payload.value`",
        ),
        (
            b'[{"name": "a", "weight": 999, "weightType": "fix", "stickiness": "s"}]',
            (
                "Variant weights must total 1000 (got 999) or include a variable variant"
                " - at `$.variants`"
            ),
        ),
    ],
)
def test_strategy_data_refuses_invalid_variants_at_their_path(
    variants: bytes, message: str
) -> None:
    body = strategy_body(b'{"name": "default", "variants": ' + variants + b"}")
    with pytest.raises(ValidationError) as caught:
        domain.strategy_data(body, "sid", 0)
    assert caught.value.message == message


# --- clone_strategy -----------------------------------------------------------------------------


def test_clone_strategy_gives_a_new_id_and_moves_the_group_id_to_the_new_name() -> None:
    original = stored_strategy(parameters={"rollout": "50", "groupId": "src"})
    copy = domain.clone_strategy(original, "copy", "new-id", replace_group_id=True)
    assert copy == StrategyData(
        id="new-id",
        name="flexibleRollout",
        title=None,
        disabled=False,
        sort_order=0,
        constraints=[],
        parameters={"rollout": "50", "groupId": "copy"},
        variants=[],
        segments=[],
    )
    assert original.parameters == {"rollout": "50", "groupId": "src"}  # not changed in place


def test_clone_strategy_keeps_the_group_id_when_told_to() -> None:
    original = stored_strategy(parameters={"groupId": "src"})
    copy = domain.clone_strategy(original, "copy", "new-id", replace_group_id=False)
    assert copy == msgspec.structs.replace(original, id="new-id")


def test_clone_strategy_adds_no_group_id_to_a_strategy_without_one() -> None:
    original = stored_strategy(name="default", parameters={})
    copy = domain.clone_strategy(original, "copy", "new-id", replace_group_id=True)
    assert copy.parameters == {}


# --- tags ---------------------------------------------------------------------------------------


def test_add_tag_tags_the_flag_with_the_trimmed_value() -> None:
    body = commands.TagBody(value="  beta  ")
    assert domain.add_tag(
        "f", body, type_exists=True, project="p", has_tag=False, now=NOW
    ) == FeatureTagged(name="f", tag_type="simple", value="beta", tagged_at=NOW, project="p")


@pytest.mark.parametrize("value", ["ab", "x" * 50, " " + "y" * 50 + " "])
def test_add_tag_accepts_values_of_2_to_50_characters_after_trimming(value: str) -> None:
    event = domain.add_tag(
        "f", commands.TagBody(value=value), type_exists=True, project="p", has_tag=False, now=NOW
    )
    assert event.value == value.strip()


@pytest.mark.parametrize("value", ["", "a", "  a  ", "x" * 51])
def test_add_tag_refuses_a_value_too_short_or_too_long(value: str) -> None:
    with pytest.raises(ValidationError) as caught:
        domain.add_tag(
            "f",
            commands.TagBody(value=value),
            type_exists=True,
            project="p",
            has_tag=False,
            now=NOW,
        )
    assert caught.value.message == "Tag value must be 2 to 50 characters - at `$.value`"


def test_add_tag_refuses_an_unknown_tag_type() -> None:
    body = commands.TagBody(type="team", value="core")
    with pytest.raises(ValidationError) as caught:
        domain.add_tag("f", body, type_exists=False, project="p", has_tag=False, now=NOW)
    assert caught.value.message == "Tag type team does not exist - at `$.type`"


def test_add_tag_refuses_a_flag_that_is_not_active() -> None:
    with pytest.raises(NotFound) as caught:
        domain.add_tag(
            "f",
            commands.TagBody(value="beta"),
            type_exists=True,
            project=None,
            has_tag=False,
            now=NOW,
        )
    assert caught.value.message == "There is no active flag named f"


def test_add_tag_refuses_a_tag_the_flag_already_has() -> None:
    with pytest.raises(Conflict) as caught:
        domain.add_tag(
            "f",
            commands.TagBody(value=" beta "),
            type_exists=True,
            project="p",
            has_tag=True,
            now=NOW,
        )
    assert caught.value.message == "Flag f already has the tag simple:beta"
    assert caught.value.status == 409


def test_add_tag_checks_value_then_type_then_flag_then_duplicate() -> None:
    def attempt(body: commands.TagBody) -> None:
        domain.add_tag(
            "f", body, type_exists=body.type == "simple", project=None, has_tag=True, now=NOW
        )

    with pytest.raises(ValidationError, match="Tag value must be"):
        attempt(commands.TagBody(type="team", value="x"))
    with pytest.raises(ValidationError, match="Tag type team does not exist"):
        attempt(commands.TagBody(type="team", value="core"))
    with pytest.raises(NotFound):
        attempt(commands.TagBody(value="core"))


def test_remove_tag_takes_the_tag_off_the_flag() -> None:
    assert domain.remove_tag("f", "simple", "beta", project="p", has_tag=True) == FeatureUntagged(
        name="f", tag_type="simple", value="beta", project="p"
    )


def test_remove_tag_refuses_a_tag_the_flag_does_not_have() -> None:
    with pytest.raises(NotFound) as caught:
        domain.remove_tag("f", "simple", "beta", project="p", has_tag=False)
    assert caught.value.message == "Flag f has no tag simple:beta"


def test_remove_tag_refuses_a_flag_that_is_not_active_first() -> None:
    with pytest.raises(NotFound) as caught:
        domain.remove_tag("f", "simple", "beta", project=None, has_tag=False)
    assert caught.value.message == "There is no active flag named f"


# --- dependencies -------------------------------------------------------------------------------


def test_add_dependency_records_the_parent_with_each_variant_once() -> None:
    body = dep_body(b'{"feature": "parent", "variants": ["b", "a", "b"]}')
    assert domain.add_dependency("child", "p", body, dep_state()) == DependencyAdded(
        name="child", project="p", parent="parent", enabled=True, variants=["b", "a"]
    )


def test_add_dependency_on_a_disabled_parent_without_variants() -> None:
    body = dep_body(b'{"feature": "parent", "enabled": false}')
    assert domain.add_dependency("child", "p", body, dep_state()) == DependencyAdded(
        name="child", project="p", parent="parent", enabled=False, variants=[]
    )


def test_add_dependency_replaces_one_with_other_settings() -> None:
    state = dep_state(current=[domain.Dependency(parent="parent", enabled=True, variants=["a"])])
    body = dep_body(b'{"feature": "parent", "variants": ["b"]}')
    assert domain.add_dependency("child", "p", body, state) == DependencyAdded(
        name="child", project="p", parent="parent", enabled=True, variants=["b"]
    )


def test_add_dependency_refuses_one_that_stands_exactly_so_already() -> None:
    state = dep_state(
        current=[domain.Dependency(parent="parent", enabled=True, variants=["a", "b"])]
    )
    for same in (b'["a", "b", "a"]', b'["b", "a"]'):  # variants are a set: order is nothing
        body = dep_body(b'{"feature": "parent", "variants": ' + same + b"}")
        with pytest.raises(Conflict) as caught:
            domain.add_dependency("child", "p", body, state)
        assert caught.value.message == "child already depends on parent with these settings"


@pytest.mark.parametrize("projects", [{"parent": "p"}, {"child": "other", "parent": "p"}])
def test_add_dependency_refuses_a_child_that_is_not_an_active_flag_of_the_project(
    projects: dict[str, str],
) -> None:
    with pytest.raises(NotFound) as caught:
        domain.add_dependency("child", "p", dep_body(), dep_state(projects=projects))
    assert caught.value.message == "There is no active flag named child in project p"


def test_add_dependency_refuses_a_flag_depending_on_itself() -> None:
    with pytest.raises(ValidationError) as caught:
        domain.add_dependency("child", "p", dep_body(b'{"feature": "child"}'), dep_state())
    assert caught.value.message == "A flag cannot depend on itself - at `$.feature`"


@pytest.mark.parametrize("projects", [{"child": "p"}, {"child": "p", "parent": "other"}])
def test_add_dependency_refuses_a_parent_outside_the_project(projects: dict[str, str]) -> None:
    with pytest.raises(ValidationError) as caught:
        domain.add_dependency("child", "p", dep_body(), dep_state(projects=projects))
    assert caught.value.message == (
        "The parent parent must be an active flag in project p - at `$.feature`"
    )


def test_add_dependency_refuses_a_parent_that_has_a_parent() -> None:
    with pytest.raises(ValidationError) as caught:
        domain.add_dependency("child", "p", dep_body(), dep_state(parent_has_parents=True))
    assert caught.value.message == (
        "parent depends on another flag itself; chains are not allowed - at `$.feature`"
    )


def test_add_dependency_refuses_a_child_that_has_children() -> None:
    with pytest.raises(ValidationError) as caught:
        domain.add_dependency("child", "p", dep_body(), dep_state(child_has_children=True))
    assert caught.value.message == (
        "child is a parent of other flags; it cannot depend on one itself"
    )


def test_add_dependency_refuses_variants_on_a_disabled_parent() -> None:
    body = dep_body(b'{"feature": "parent", "enabled": false, "variants": ["a"]}')
    with pytest.raises(ValidationError) as caught:
        domain.add_dependency("child", "p", body, dep_state())
    assert caught.value.message == "variants apply only when enabled is true - at `$.variants`"


DEPENDENCY_RULES: list[tuple[str, type[Exception], str]] = [
    ("child", NotFound, "There is no active flag named child in project p"),
    ("self", ValidationError, "A flag cannot depend on itself - at `$.feature`"),
    ("parent", ValidationError, "The parent parent must be an active flag in project p"),
    ("chain", ValidationError, "parent depends on another flag itself"),
    ("children", ValidationError, "child is a parent of other flags"),
    ("variants", ValidationError, "variants apply only when enabled is true"),
    ("duplicate", Conflict, "child already depends on parent with these settings"),
]


def breaking(rules: set[str]) -> tuple[commands.DependencyBody, domain.DependencyState]:
    """A request and state that break exactly the dependency rules named."""
    projects = {} if "child" in rules else {"child": "p"}
    if "parent" not in rules:
        projects["parent"] = "p"
    body = commands.DependencyBody(
        feature="child" if "self" in rules else "parent",
        enabled="variants" not in rules,
        variants=["a"] if "variants" in rules else [],
    )
    standing = domain.Dependency(parent="parent", enabled=body.enabled, variants=body.variants)
    state = dep_state(
        projects=projects,
        parent_has_parents="chain" in rules,
        child_has_children="children" in rules,
        current=[standing] if "duplicate" in rules else [],
    )
    return body, state


@pytest.mark.parametrize("first", range(len(DEPENDENCY_RULES)))
def test_add_dependency_reports_the_first_broken_rule_in_order(first: int) -> None:
    """Every rule from `first` on is broken; the one at `first` is the one reported."""
    body, state = breaking({rule for rule, _, _ in DEPENDENCY_RULES[first:]})
    _, error, message = DEPENDENCY_RULES[first]
    with pytest.raises(error) as caught:
        domain.add_dependency("child", "p", body, state)
    assert type(caught.value) is error
    assert message in str(caught.value)


def test_add_dependency_accepts_a_request_that_breaks_no_rule() -> None:
    body, state = breaking(set())
    assert domain.add_dependency("child", "p", body, state) == DependencyAdded(
        name="child", project="p", parent="parent", enabled=True, variants=[]
    )


def test_remove_dependency_removes_one_parent() -> None:
    state = dep_state(current=[domain.Dependency(parent="parent", enabled=True, variants=[])])
    assert domain.remove_dependency("child", "p", "parent", state) == DependencyRemoved(
        name="child", project="p", parent="parent"
    )


def test_remove_dependency_refuses_a_parent_the_flag_does_not_depend_on() -> None:
    state = dep_state(current=[domain.Dependency(parent="parent", enabled=True, variants=[])])
    with pytest.raises(NotFound) as caught:
        domain.remove_dependency("child", "p", "other", state)
    assert caught.value.message == "child does not depend on other"


def test_remove_dependency_refuses_a_child_outside_the_project_first() -> None:
    with pytest.raises(NotFound) as caught:
        domain.remove_dependency("child", "p", "other", dep_state(projects={"child": "q"}))
    assert caught.value.message == "There is no active flag named child in project p"


def test_remove_dependencies_removes_every_parent() -> None:
    state = dep_state(
        current=[
            domain.Dependency(parent="a", enabled=True, variants=[]),
            domain.Dependency(parent="b", enabled=False, variants=[]),
        ]
    )
    assert domain.remove_dependencies("child", "p", state) == [
        DependencyRemoved(name="child", project="p", parent="a"),
        DependencyRemoved(name="child", project="p", parent="b"),
    ]
    assert domain.remove_dependencies("child", "p", dep_state()) == []


def test_remove_dependencies_refuses_a_child_outside_the_project() -> None:
    with pytest.raises(NotFound) as caught:
        domain.remove_dependencies("child", "p", dep_state(projects={}))
    assert caught.value.message == "There is no active flag named child in project p"


# --- clone_feature ------------------------------------------------------------------------------


def test_clone_feature_copies_the_source_into_the_target_projects_environments() -> None:
    red = Variant(
        name="red",
        weight=1000,
        weight_type="variable",
        stickiness="default",
        payload=None,
        overrides=[],
    )
    source = clone_source(
        environments=["dev", "prod", "qa"],
        strategies=[
            ("prod", stored_strategy(strategy_id="s1", parameters={"groupId": "src"})),
            ("gone", stored_strategy(strategy_id="s2")),
            (
                "prod",
                stored_strategy(strategy_id="s3", name="default", sort_order=1, parameters={}),
            ),
            ("dev", stored_strategy(strategy_id="s4", parameters={"groupId": "src", "r": "5"})),
        ],
        variants={"prod": [red], "gone": [red]},
    )
    handed, new_id = counter_ids()
    event = domain.clone_feature(
        commands.CloneFeature(name="copy"),
        "src",
        "p",
        source,
        project_active=True,
        holder_archived=None,
        new_id=new_id,
        now=NOW,
    )
    assert event == FeatureCloned(
        name="copy",
        project="p",
        feature_type="kill-switch",
        description="the source",
        impression_data=True,
        created_at=NOW,
        source="src",
        source_project="origin",
        source_position=41,
        environments=[
            ClonedEnvironment(
                environment="dev",
                strategies=[
                    stored_strategy(strategy_id="id-3", parameters={"groupId": "copy", "r": "5"})
                ],
                variants=[],
            ),
            ClonedEnvironment(
                environment="prod",
                strategies=[
                    stored_strategy(strategy_id="id-1", parameters={"groupId": "copy"}),
                    stored_strategy(
                        strategy_id="id-2", name="default", sort_order=1, parameters={}
                    ),
                ],
                variants=[red],
            ),
            ClonedEnvironment(environment="qa", strategies=[], variants=[]),
        ],
        dependencies=[ClonedDependency(parent="up", enabled=False, variants=[])],
        tags=[ClonedTag(tag_type="simple", value="team-a")],
    )
    assert handed == ["id-1", "id-2", "id-3"]  # one new id per strategy copied, none for "gone"


def test_clone_feature_keeps_group_ids_when_asked_not_to_replace_them() -> None:
    source = clone_source(strategies=[("dev", stored_strategy(parameters={"groupId": "src"}))])
    event = clone(commands.CloneFeature(name="copy", replace_group_id=False), source)
    assert event.environments[0].strategies == [
        stored_strategy(strategy_id="id-1", parameters={"groupId": "src"})
    ]


def test_clone_feature_refuses_a_missing_source() -> None:
    with pytest.raises(NotFound) as caught:
        clone(commands.CloneFeature(name="copy"), None)
    assert caught.value.message == "Could not find feature flag with name src"


def test_clone_feature_refuses_a_missing_target_project() -> None:
    with pytest.raises(NotFound) as caught:
        clone(commands.CloneFeature(name="copy"), clone_source(), project_active=False)
    assert caught.value.message == "Project p does not exist"


def test_clone_feature_refuses_a_bad_name() -> None:
    with pytest.raises(ValidationError) as caught:
        clone(commands.CloneFeature(name="a/b"), clone_source())
    assert caught.value.message == BAD_NAME


@pytest.mark.parametrize(
    ("holder_archived", "message"),
    [
        (False, "A flag with that name already exists"),
        (True, "An archived flag with that name already exists"),
    ],
)
def test_clone_feature_refuses_a_taken_name_and_says_whether_it_is_archived(
    holder_archived: bool, message: str
) -> None:
    with pytest.raises(NameExists) as caught:
        clone(commands.CloneFeature(name="copy"), clone_source(), holder_archived=holder_archived)
    assert caught.value.message == message


def test_clone_feature_checks_source_then_project_then_name_then_that_it_is_free() -> None:
    bad = commands.CloneFeature(name="")
    with pytest.raises(NotFound, match="Could not find feature flag"):
        clone(bad, None, project_active=False, holder_archived=False)
    with pytest.raises(NotFound, match="Project p does not exist"):
        clone(bad, clone_source(), project_active=False, holder_archived=False)
    with pytest.raises(ValidationError, match="Name must not be empty"):
        clone(bad, clone_source(), holder_archived=False)


def test_clone_feature_hands_out_no_id_when_it_refuses() -> None:
    handed, new_id = counter_ids()
    source = clone_source(strategies=[("dev", stored_strategy())])
    with pytest.raises(NameExists):
        domain.clone_feature(
            commands.CloneFeature(name="copy"),
            "src",
            "p",
            source,
            project_active=True,
            holder_archived=False,
            new_id=new_id,
            now=NOW,
        )
    assert handed == []


# --- segments -----------------------------------------------------------------------------------


SEGMENT = (
    b'{"name": "beta-users", "description": "Beta",'
    b' "constraints": [{"contextName": "userId", "operator": "IN", "values": ["1"]},'
    b'   {"contextName": "age", "operator": "NUM_GTE", "value": "18", "inverted": true}]}'
)
SEGMENT_CONSTRAINTS = [
    constraint(context_name="userId", operator="IN", values=["1"]),
    constraint(context_name="age", operator="NUM_GTE", value="18", inverted=True),
]
BAD_SEGMENT = (
    b'{"name": "s", "constraints": [{"contextName": "a", "operator": "NUM_EQ", "value": "x"}]}'
)


def test_create_segment_stores_the_whole_segment() -> None:
    event = domain.create_segment(segment_body(SEGMENT), segment_id=5, name_taken=False, now=NOW)
    assert event == SegmentCreated(
        segment_id=5,
        name="beta-users",
        description="Beta",
        constraints=SEGMENT_CONSTRAINTS,
        created_at=NOW,
    )


def test_create_segment_refuses_a_taken_name() -> None:
    with pytest.raises(NameExists) as caught:
        domain.create_segment(segment_body(), segment_id=5, name_taken=True, now=NOW)
    assert caught.value.message == "A segment named beta already exists"


def test_create_segment_checks_constraints_before_the_name() -> None:
    with pytest.raises(ValidationError) as caught:
        domain.create_segment(segment_body(BAD_SEGMENT), segment_id=5, name_taken=True, now=NOW)
    assert caught.value.message == "NUM_EQ needs a number - at `$.constraints[0].value`"


def test_update_segment_replaces_the_whole_segment() -> None:
    event = domain.update_segment(5, segment_body(SEGMENT), found=True, name_taken=False)
    assert event == SegmentUpdated(
        segment_id=5, name="beta-users", description="Beta", constraints=SEGMENT_CONSTRAINTS
    )


def test_update_segment_refuses_a_missing_segment() -> None:
    with pytest.raises(NotFound) as caught:
        domain.update_segment(5, segment_body(), found=False, name_taken=True)
    assert caught.value.message == "No segment with id 5"


def test_update_segment_refuses_a_name_another_segment_has() -> None:
    with pytest.raises(NameExists) as caught:
        domain.update_segment(5, segment_body(), found=True, name_taken=True)
    assert caught.value.message == "A segment named beta already exists"


def test_update_segment_checks_constraints_before_existence() -> None:
    with pytest.raises(ValidationError):
        domain.update_segment(5, segment_body(BAD_SEGMENT), found=False, name_taken=True)


def test_delete_segment_deletes_an_unused_segment() -> None:
    assert domain.delete_segment(5, name="beta", used_by=0) == SegmentDeleted(
        segment_id=5, name="beta"
    )


def test_delete_segment_refuses_a_missing_segment_before_asking_whether_it_is_used() -> None:
    with pytest.raises(NotFound) as caught:
        domain.delete_segment(5, name=None, used_by=3)
    assert caught.value.message == "No segment with id 5"


def test_delete_segment_refuses_a_segment_strategies_use() -> None:
    with pytest.raises(Conflict) as caught:
        domain.delete_segment(5, name="beta", used_by=2)
    assert caught.value.message == "Segment 5 is used by 2 strategy(ies); remove it there first"
