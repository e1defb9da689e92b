"""Pure decisions of the archive (docs/behavior.md, "The archive"): archive, revive, delete."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from eventlog.events.features import (
    DependencyRemoved,
    FeatureArchived,
    FeatureDeleted,
    FeatureEnvironmentDisabled,
    FeatureRevived,
)
from service.errors import InvalidOperation, NotFound
from service.features import domain
from service.features.domain import ArchiveFlag, Link

NOW = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
CREATED = NOW - timedelta(days=3)
ARCHIVED = NOW - timedelta(days=1)


def flag(
    name: str, *, archived: bool = False, project: str = "p", enabled_in: tuple[str, ...] = ()
) -> ArchiveFlag:
    return ArchiveFlag(
        name=name,
        project=project,
        feature_type="release",
        description=f"about {name}",
        stale=False,
        impression_data=True,
        created_at=CREATED,
        archived_at=ARCHIVED if archived else None,
        enabled_in=list(enabled_in),
    )


def flags(*found: ArchiveFlag) -> dict[str, ArchiveFlag]:
    return {f.name: f for f in found}


def archived(name: str, project: str = "p") -> FeatureArchived:
    return FeatureArchived(name=name, project=project, archived_at=NOW)


def deleted(name: str) -> FeatureDeleted:
    return FeatureDeleted(
        name=name,
        project="p",
        feature_type="release",
        description=f"about {name}",
        stale=False,
        impression_data=True,
        created_at=CREATED,
        archived_at=ARCHIVED,
        deleted_at=NOW,
    )


def revived(name: str) -> FeatureRevived:
    return FeatureRevived(name=name, project="p", revived_at=NOW, lifecycle_stage="initial")


# --- archive ----------------------------------------------------------------------------------


def test_archive_feature_archives_an_active_flag_of_the_project() -> None:
    events = domain.archive_feature("f", "p", flag("f"), links=[], now=NOW)
    assert events == [archived("f")]


def test_archive_feature_removes_the_flags_own_dependencies_first() -> None:
    links = [Link("f", "z-parent"), Link("f", "a-parent")]
    assert domain.archive_feature("f", "p", flag("f"), links=links, now=NOW) == [
        DependencyRemoved(name="f", project="p", parent="a-parent"),
        DependencyRemoved(name="f", project="p", parent="z-parent"),
        archived("f"),
    ]


@pytest.mark.parametrize("found", [None, flag("f", archived=True)])
def test_archive_feature_refuses_a_flag_that_is_missing_or_already_archived(
    found: ArchiveFlag | None,
) -> None:
    with pytest.raises(NotFound) as caught:
        domain.archive_feature("f", "p", found, links=[], now=NOW)
    assert caught.value.message == "Could not find an active flag named f in project p"


def test_archive_feature_refuses_a_parent_whose_children_stay() -> None:
    links = [Link("c2", "f"), Link("c1", "f")]
    with pytest.raises(InvalidOperation) as caught:
        domain.archive_feature("f", "p", flag("f"), links=links, now=NOW)
    assert caught.value.message == ("You can not archive f since other flags depend on it: c1, c2")


def test_archive_features_is_all_or_nothing_and_names_what_is_not_active_here() -> None:
    found = flags(flag("a"), flag("b", archived=True))
    with pytest.raises(NotFound) as caught:
        domain.archive_features(["a", "x", "b", "x"], "p", flags=found, links=[], now=NOW)
    assert caught.value.message == "No active flag named x, b in project p"


def test_archive_features_names_ten_flags_and_counts_the_others() -> None:
    names = [f"n{i:02}" for i in range(13)]
    with pytest.raises(NotFound) as caught:
        domain.archive_features(names, "p", flags={}, links=[], now=NOW)
    assert caught.value.message == (
        f"No active flag named {', '.join(names[:10])} and 3 more in project p"
    )


def test_archive_features_takes_a_parent_along_with_its_children() -> None:
    found = flags(flag("parent"), flag("child"), flag("other"))
    links = [Link("child", "parent")]
    events = domain.archive_features(
        ["parent", "child", "parent"], "p", flags=found, links=links, now=NOW
    )
    assert events == [
        archived("parent"),
        DependencyRemoved(name="child", project="p", parent="parent"),
        archived("child"),
    ]


def test_archive_features_refuses_parents_whose_children_stay_and_names_them() -> None:
    found = flags(flag("p1"), flag("p2"), flag("c1"))
    links = [Link("c1", "p1"), Link("c2", "p1"), Link("c3", "p2")]
    with pytest.raises(InvalidOperation) as caught:
        domain.archive_features(["p1", "p2", "c1"], "p", flags=found, links=links, now=NOW)
    assert caught.value.message == (
        "You can not archive p1, p2 since other flags depend on them: c2, c3"
    )


NAMES = st.sampled_from(["a", "b", "c", "d", "e"])


@given(
    names=st.lists(NAMES, min_size=1, max_size=6),
    active=st.sets(NAMES),
    links=st.lists(st.tuples(NAMES, NAMES).filter(lambda t: t[0] != t[1]), max_size=6),
)
def test_archive_features_either_refuses_or_archives_each_listed_flag_once(
    names: list[str], active: set[str], links: list[tuple[str, str]]
) -> None:
    found = flags(*(flag(n) for n in active))
    dependencies = [Link(child, parent) for child, parent in links]
    listed = set(names)
    try:
        events = domain.archive_features(names, "p", flags=found, links=dependencies, now=NOW)
    except NotFound:
        assert not listed <= active
        return
    except InvalidOperation:
        assert any(d.parent in listed and d.child not in listed for d in dependencies)
        return
    assert listed <= active
    assert not any(d.parent in listed and d.child not in listed for d in dependencies)
    assert [e.name for e in events if isinstance(e, FeatureArchived)] == list(dict.fromkeys(names))
    assert {(e.name, e.parent) for e in events if isinstance(e, DependencyRemoved)} == {
        (d.child, d.parent) for d in dependencies if d.child in listed
    }
    # Each flag's events are together, its archive last: one append per stream.
    grouped = [e.name for e in events]
    assert grouped == sorted(grouped, key=grouped.index)


def test_parents_with_children_lists_the_parents_that_would_leave_children_behind() -> None:
    links = [Link("c1", "p1"), Link("c2", "p2"), Link("p3", "p4")]
    assert domain.parents_with_children(["p2", "p1", "c1", "p3"], links) == ["p2"]
    assert domain.parents_with_children(["c9"], links) == []


# --- revive -----------------------------------------------------------------------------------


def test_revive_features_revives_each_named_flag_once_in_the_order_given_switched_off() -> None:
    found = flags(
        flag("a", archived=True, enabled_in=("production", "development")),
        flag("b", archived=True),
        flag("c", archived=True),
    )
    events = domain.revive_features(["b", "a", "b"], "p", project_active=True, flags=found, now=NOW)
    assert events == [
        revived("b"),
        revived("a"),
        FeatureEnvironmentDisabled(name="a", project="p", environment="development"),
        FeatureEnvironmentDisabled(name="a", project="p", environment="production"),
    ]


def test_revive_features_refuses_a_missing_project_before_looking_at_the_names() -> None:
    with pytest.raises(NotFound) as caught:
        domain.revive_features(["nope"], "p", project_active=False, flags={}, now=NOW)
    assert caught.value.message == "Project p does not exist"


def test_revive_features_is_all_or_nothing_and_names_what_is_not_archived_here() -> None:
    found = flags(flag("a", archived=True), flag("b", archived=True), flag("y"))
    with pytest.raises(NotFound) as caught:
        domain.revive_features(
            ["a", "x", "b", "y", "x"], "p", project_active=True, flags=found, now=NOW
        )
    assert caught.value.message == "No archived flag named x, y in project p"


def test_revive_feature_revives_into_the_flags_own_project() -> None:
    found = flag("f", archived=True, project="other", enabled_in=("development",))
    assert domain.revive_feature("f", found, project_active=True, now=NOW) == [
        FeatureRevived(name="f", project="other", revived_at=NOW, lifecycle_stage="initial"),
        FeatureEnvironmentDisabled(name="f", project="other", environment="development"),
    ]


@pytest.mark.parametrize("found", [None, flag("f")])
def test_revive_feature_refuses_a_flag_that_is_missing_or_active(
    found: ArchiveFlag | None,
) -> None:
    with pytest.raises(NotFound) as caught:
        domain.revive_feature("f", found, project_active=False, now=NOW)
    assert caught.value.message == "No archived flag named f"


def test_revive_feature_refuses_a_flag_of_an_archived_project() -> None:
    with pytest.raises(NotFound) as caught:
        domain.revive_feature("f", flag("f", archived=True), project_active=False, now=NOW)
    assert caught.value.message == "Project p does not exist"


# --- delete -----------------------------------------------------------------------------------


def test_delete_feature_deletes_an_archived_flag_keeping_its_record() -> None:
    event = domain.delete_feature("f", flag("f", archived=True), links=[], now=NOW)
    assert event == deleted("f")


def test_delete_feature_refuses_a_missing_flag_and_an_active_one() -> None:
    with pytest.raises(NotFound) as missing:
        domain.delete_feature("f", None, links=[], now=NOW)
    assert missing.value.message == "No archived flag named f"
    with pytest.raises(NotFound) as active:
        domain.delete_feature("f", flag("f"), links=[], now=NOW)
    assert active.value.message == "Flag f is not archived: archive it before deleting it"


def test_delete_feature_refuses_a_flag_others_depend_on() -> None:
    with pytest.raises(InvalidOperation) as caught:
        domain.delete_feature("f", flag("f", archived=True), links=[Link("c", "f")], now=NOW)
    assert caught.value.message == "You can not delete f since other flags depend on it: c"


def test_delete_features_is_all_or_nothing() -> None:
    found = flags(flag("a", archived=True), flag("b"))
    with pytest.raises(NotFound) as caught:
        domain.delete_features(["a", "b", "c"], "p", flags=found, links=[], now=NOW)
    assert caught.value.message == "No archived flag named b, c in project p"


def test_delete_features_deletes_a_parent_with_its_children() -> None:
    found = flags(flag("parent", archived=True), flag("child", archived=True))
    links = [Link("child", "parent")]
    events = domain.delete_features(
        ["parent", "child", "child"], "p", flags=found, links=links, now=NOW
    )
    assert events == [deleted("parent"), deleted("child")]
    with pytest.raises(InvalidOperation) as caught:
        domain.delete_features(["parent"], "p", flags=found, links=links, now=NOW)
    assert caught.value.message == "You can not delete parent since other flags depend on it: child"
