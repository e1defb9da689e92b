"""The pure parts of an import (service/transfer/domain.py): a file split by project, the
plan against a state built by hand."""

from __future__ import annotations

from datetime import UTC, datetime

import msgspec

from service.context.builtins import BUILT_IN
from service.transfer import domain
from service.transfer.commands import ExportData, ImportToggles

NOW = datetime(2026, 1, 2, tzinfo=UTC)


def data(**fields: object) -> ExportData:
    return msgspec.convert({"featureStrategies": [], "tagTypes": []} | fields, ExportData)


def nothing_here() -> domain.State:
    return domain.State(
        flags={},
        strategies={},
        environments={},
        tags={},
        dependencies={},
        children={},
        strategy_types={"default": False, "flexibleRollout": False},
        context_fields=dict(BUILT_IN),
        segments={},
        tag_types={"simple"},
        freed={},
    )


def test_a_file_splits_by_the_projects_its_flags_name() -> None:
    file = data(
        features=[{"name": "a", "project": "web"}, {"name": "b"}, {"name": "c", "project": "web"}],
        featureStrategies=[{"name": "default", "featureName": n} for n in ("a", "b", "c")],
        featureEnvironments=[{"name": "c", "enabled": True}],
        featureTags=[{"featureName": "b", "tagType": "simple", "tagValue": "xy"}],
        dependencies=[{"feature": "c", "dependencies": [{"feature": "a"}]}],
        segments=[{"id": 1, "name": "s"}],
    )
    parts = domain.by_project(file)
    assert sorted(parts) == ["default", "web"]
    web, default = parts["web"], parts["default"]
    assert [f.name for f in web.features] == ["a", "c"]
    assert [s.feature_name for s in web.feature_strategies] == ["a", "c"]
    assert [e.feature for e in web.feature_environments] == ["c"]
    assert web.feature_tags == []
    assert [d.feature for d in web.dependencies] == ["c"]
    assert [f.name for f in default.features] == ["b"]
    assert [t.feature_name for t in default.feature_tags] == ["b"]
    assert web.segments == default.segments == file.segments


def test_a_plan_creates_what_is_missing_and_names_the_new_stream_of_a_freed_name() -> None:
    file = data(
        features=[{"name": "n", "stale": True}, {"name": "m"}],
        featureStrategies=[{"name": "default", "featureName": "n"}],
        featureEnvironments=[{"name": "n", "enabled": True}],
    )
    cmd = ImportToggles(project="default", environment="development", data=file)
    state = msgspec.structs.replace(nothing_here(), freed={"m": 4})
    ids = iter(["id-1"])
    plan = domain.plan(cmd, state, now=NOW, new_id=lambda: next(ids))
    assert plan.errors == plan.warnings == []
    assert [(f.name, f.created, f.at_version) for f in plan.flags] == [
        ("n", True, None),
        ("m", True, 4),
    ]
    assert [e.type_name() for e in plan.flags[0].events] == [
        "FeatureCreated",
        "FeatureStaleSet",
        "StrategyAdded",
        "FeatureEnvironmentEnabled",
    ]
    assert plan.needed == [
        domain.UPDATE_FLAGS,
        domain.CREATE_STRATEGIES,
        domain.CREATE_FLAGS,
    ]
    assert plan.events == 5
