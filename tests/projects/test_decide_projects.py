"""Pure decisions of projects and environments: create, archive, enable and disable."""

from __future__ import annotations

from datetime import UTC, datetime

import msgspec
import pytest

from eventlog.events.projects import (
    EnvironmentCreated,
    ProjectArchived,
    ProjectCreated,
    ProjectEnvironmentDisabled,
    ProjectEnvironmentEnabled,
)
from service.errors import Conflict, NameExists, NotFound, ValidationError
from service.projects import domain
from service.projects.commands import CreateEnvironment, CreateProject

NOW = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
ALLOWED = "may only contain letters, digits and - _ . ! ~ * ' ( ), and may not be '.' or '..'"


def project_cmd(raw: bytes = b'{"id": "shop", "name": "Shop"}') -> CreateProject:
    return msgspec.json.decode(raw, type=CreateProject)


def environment_cmd(raw: bytes = b'{"name": "staging", "type": "test"}') -> CreateEnvironment:
    return msgspec.json.decode(raw, type=CreateEnvironment)


def active(*, environments: list[str] | None = None, active_flags: int = 0) -> domain.ActiveProject:
    return domain.ActiveProject(
        environments=["development", "production"] if environments is None else environments,
        active_flags=active_flags,
    )


# --- create_project -----------------------------------------------------------------------------


def test_create_project_enables_the_environments_given() -> None:
    cmd = project_cmd(b'{"id": "shop", "name": "Shop", "description": "Checkout and cart"}')
    event = domain.create_project(
        cmd, exists=False, environments=["development", "production"], now=NOW
    )
    assert event == ProjectCreated(
        project_id="shop",
        name="Shop",
        description="Checkout and cart",
        environments=["development", "production"],
        created_at=NOW,
    )


@pytest.mark.parametrize("description", [b"", b', "description": null', b', "description": ""'])
def test_create_project_stores_a_missing_or_empty_description_as_null(description: bytes) -> None:
    cmd = project_cmd(b'{"id": "shop", "name": "Shop"' + description + b"}")
    event = domain.create_project(cmd, exists=False, environments=[], now=NOW)
    assert event == ProjectCreated(
        project_id="shop", name="Shop", description=None, environments=[], created_at=NOW
    )


@pytest.mark.parametrize(
    ("project_id", "message"),
    [
        ("", "Project id must not be empty - at `$.id`"),
        ("p" * 101, "Project id must be at most 100 characters - at `$.id`"),
        ("my shop", f"Project id {ALLOWED} - at `$.id`"),
        ("..", f"Project id {ALLOWED} - at `$.id`"),
    ],
)
def test_create_project_refuses_an_id_that_is_not_url_safe(project_id: str, message: str) -> None:
    with pytest.raises(ValidationError) as caught:
        domain.create_project(
            CreateProject(id=project_id, name="x"), exists=False, environments=[], now=NOW
        )
    assert caught.value.message == message
    assert caught.value.status == 400


def test_create_project_refuses_an_id_that_is_taken() -> None:
    with pytest.raises(NameExists) as caught:
        domain.create_project(project_cmd(), exists=True, environments=[], now=NOW)
    assert caught.value.message == "A project with id shop already exists"
    assert caught.value.status == 409


def test_create_project_checks_the_id_before_whether_it_is_taken() -> None:
    with pytest.raises(ValidationError):
        domain.create_project(
            CreateProject(id="a b", name="x"), exists=True, environments=[], now=NOW
        )


# --- archive_project ----------------------------------------------------------------------------


def test_archive_project_archives_an_empty_project() -> None:
    assert domain.archive_project("shop", active(), now=NOW) == ProjectArchived(
        project_id="shop", archived_at=NOW
    )


def test_archive_project_refuses_a_missing_project() -> None:
    with pytest.raises(NotFound) as caught:
        domain.archive_project("ghost", None, now=NOW)
    assert caught.value.message == "Project ghost does not exist"


def test_archive_project_refuses_the_default_project() -> None:
    with pytest.raises(Conflict) as caught:
        domain.archive_project("default", active(), now=NOW)
    assert caught.value.message == "The default project cannot be archived"
    assert caught.value.status == 409


def test_archive_project_refuses_a_project_with_active_flags() -> None:
    with pytest.raises(Conflict) as caught:
        domain.archive_project("shop", active(active_flags=3), now=NOW)
    assert caught.value.message == "Project shop still has 3 active flag(s); archive them first"


def test_archive_project_checks_existence_then_default_then_flags() -> None:
    with pytest.raises(NotFound):
        domain.archive_project("default", None, now=NOW)
    with pytest.raises(Conflict) as caught:
        domain.archive_project("default", active(active_flags=2), now=NOW)
    assert caught.value.message == "The default project cannot be archived"


# --- create_environment -------------------------------------------------------------------------


def test_create_environment_takes_the_next_sort_order_when_none_is_given() -> None:
    event = domain.create_environment(environment_cmd(), exists=False, next_sort_order=4, now=NOW)
    assert event == EnvironmentCreated(
        name="staging", environment_type="test", sort_order=4, created_at=NOW
    )


@pytest.mark.parametrize("sort_order", [0, -5, 1_000_000])
def test_create_environment_keeps_the_sort_order_given(sort_order: int) -> None:
    cmd = environment_cmd(f'{{"name": "qa", "type": "test", "sortOrder": {sort_order}}}'.encode())
    event = domain.create_environment(cmd, exists=False, next_sort_order=4, now=NOW)
    assert event == EnvironmentCreated(
        name="qa", environment_type="test", sort_order=sort_order, created_at=NOW
    )


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("", "Environment name must not be empty - at `$.name`"),
        ("e" * 101, "Environment name must be at most 100 characters - at `$.name`"),
        ("pre prod", f"Environment name {ALLOWED} - at `$.name`"),
    ],
)
def test_create_environment_refuses_a_name_that_is_not_url_safe(name: str, message: str) -> None:
    with pytest.raises(ValidationError) as caught:
        domain.create_environment(
            CreateEnvironment(name=name, type="test"), exists=False, next_sort_order=0, now=NOW
        )
    assert caught.value.message == message


def test_create_environment_refuses_a_taken_name() -> None:
    with pytest.raises(NameExists) as caught:
        domain.create_environment(environment_cmd(), exists=True, next_sort_order=0, now=NOW)
    assert caught.value.message == "An environment named staging already exists"


def test_create_environment_checks_the_name_before_whether_it_is_taken() -> None:
    with pytest.raises(ValidationError):
        domain.create_environment(
            CreateEnvironment(name="", type="test"), exists=True, next_sort_order=0, now=NOW
        )


# --- enable_environment, disable_environment ----------------------------------------------------


def test_enable_environment_enables_a_known_environment_in_the_project() -> None:
    event = domain.enable_environment("shop", "staging", active(), known=True)
    assert event == ProjectEnvironmentEnabled(project_id="shop", environment="staging")


def test_enable_environment_refuses_a_missing_project() -> None:
    with pytest.raises(NotFound) as caught:
        domain.enable_environment("ghost", "staging", None, known=False)
    assert caught.value.message == "Project ghost does not exist"


def test_enable_environment_refuses_an_unknown_environment() -> None:
    with pytest.raises(NotFound) as caught:
        domain.enable_environment("shop", "staging", active(), known=False)
    assert caught.value.message == "Environment staging does not exist"


def test_enable_environment_refuses_an_environment_already_enabled() -> None:
    with pytest.raises(NameExists) as caught:
        domain.enable_environment("shop", "production", active(), known=True)
    assert caught.value.message == "Project shop already has the environment production enabled"
    assert caught.value.status == 409


def test_enable_environment_checks_the_environment_exists_before_whether_it_is_enabled() -> None:
    with pytest.raises(NotFound) as caught:
        domain.enable_environment("shop", "staging", active(environments=["staging"]), known=False)
    assert caught.value.message == "Environment staging does not exist"


def test_disable_environment_disables_one_of_several() -> None:
    event = domain.disable_environment("shop", "production", active())
    assert event == ProjectEnvironmentDisabled(project_id="shop", environment="production")


def test_disable_environment_refuses_a_missing_project() -> None:
    with pytest.raises(NotFound) as caught:
        domain.disable_environment("ghost", "production", None)
    assert caught.value.message == "Project ghost does not exist"


def test_disable_environment_refuses_an_environment_not_enabled_in_the_project() -> None:
    with pytest.raises(NotFound) as caught:
        domain.disable_environment("shop", "staging", active(environments=["production"]))
    assert caught.value.message == "Environment staging is not enabled in project shop"


def test_disable_environment_keeps_the_last_enabled_environment() -> None:
    with pytest.raises(ValidationError) as caught:
        domain.disable_environment("shop", "production", active(environments=["production"]))
    assert caught.value.message == "A project must always keep at least one enabled environment"
    assert caught.value.status == 400
