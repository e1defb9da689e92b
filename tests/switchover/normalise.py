"""How compare.py makes two servers' answers comparable, and how it tells what differs: the
rules its text lists (and docs/migrating.md), as data, and the diff of two normalised answers.

Pure: JSON in, JSON and differences out.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

# Times a server sets itself. Compared by presence only (set or null), except the creation
# times of what an import carries, which `Times(created=True)` compares to the millisecond.
TIMES = frozenset(
    {
        "createdAt",
        "updatedAt",
        "lastSeenAt",
        "seenAt",
        "enteredStageAt",
        "archivedAt",
        "lastUpdatedAt",
        "lastReportedFlagUsage",
        "lastLogin",
        "changedAt",
    }
)
CREATED = frozenset({"createdAt"})
# Shown nowhere as such, derived from what is compared, or the servers' own numbering:
# dropped wherever they appear (imageUrl is a gravatar of an id or e-mail).
EVERYWHERE = frozenset({"imageUrl"})
ISO = re.compile(r"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(\.\d+)?(Z|[+-]\d\d:?\d\d)?")


def empty(value: Any) -> bool:
    """Null, false, or an empty list, object or string (not the number 0)."""
    return value is None or value is False or (isinstance(value, list | dict | str) and not value)


@dataclass(frozen=True)
class Rules:
    """One kind's rules. Paths are keys joined with '.', a list's items as '[]'
    (`environments.[].strategies.[].id`); an environment list keyed by name is a map, so its
    items' paths name the key as `environments.*`.

    - `drop`: ids the server assigns, and what the UI does not show;
    - `keyed`: lists of things with a name, compared as maps from that name (order apart);
    - `unordered`: lists whose order means nothing, sorted (by the items' names, then by
      all of them);
    - `unique`: lists where an item said twice means it said once (deduplicated);
    - `one_sided`: fields one server shows and the other lacks, which the UI does not show
      (or shows from another answer compared here): not compared when one side lacks them;
    - `aggregates`: counts over the whole server, dropped when the comparison is scoped to a
      prefix (a shared server holds others' entities too);
    - `defaults`: a field one side leaves out that means the value given here;
    - `names_only`: lists compared by their items' names alone, sorted (their content and
      order depend on one server's row order: compare.py, rule 9).
    """

    drop: frozenset[str] = frozenset()
    keyed: dict[str, str] = field(default_factory=dict)
    unordered: frozenset[str] = frozenset()
    unique: frozenset[str] = frozenset()
    one_sided: frozenset[str] = frozenset()
    aggregates: frozenset[str] = frozenset()
    defaults: dict[str, Any] = field(default_factory=dict)
    names_only: frozenset[str] = frozenset()


def _paths(*paths: str) -> frozenset[str]:
    return frozenset(paths)


def _under(prefix: str, paths: frozenset[str]) -> frozenset[str]:
    return frozenset(f"{prefix}.{p}" for p in paths)


# A constraint: Unleash leaves out `inverted`, `caseInsensitive` when false, and `values` or
# `value` when unused; flagstore says them all. The SDKs read them so.
CONSTRAINT_DEFAULTS: dict[str, Any] = {
    "inverted": False,
    "caseInsensitive": False,
    "values": [],
    "value": None,
}
CONSTRAINT = "constraints.[]"
STRATEGY_UNORDERED = _paths("segments", f"{CONSTRAINT}.values")
STRATEGY_ONE_SIDED = _paths("featureName", "projectId", "environment")


def _strategy(prefix: str) -> dict[str, Any]:
    return {
        "drop": _under(prefix, _paths("id")),
        "unordered": _under(prefix, STRATEGY_UNORDERED),
        "one_sided": _under(prefix, STRATEGY_ONE_SIDED),
        "defaults": {f"{prefix}.{CONSTRAINT}.{k}": v for k, v in CONSTRAINT_DEFAULTS.items()},
    }


def _merge(*parts: dict[str, Any], **more: Any) -> Rules:
    merged: dict[str, Any] = {}
    for part in (*parts, more):
        for key, value in part.items():
            if isinstance(value, frozenset):
                merged[key] = merged.get(key, frozenset()) | value
            elif isinstance(value, dict):
                merged[key] = {**merged.get(key, {}), **value}
    return Rules(**merged)


ENV_STRATEGY = "environments.*.strategies.[]"
# Unleash 6.10.1 stores a project's health, and sets its updatedAt, by a job that runs every
# hour or so (projectHealthService.setHealthRating); flagstore computes health when read
# (compare.py, rule 9).
PROJECT_JOB = _paths("health", "updatedAt")
PROJECT_AGGREGATES = _paths(
    "featureCount",
    "memberCount",
    "health",
    "technicalDebt",
    "lastUpdatedAt",
    "lastReportedFlagUsage",
    "updatedAt",
    "stats",
    "featureTypeCounts",
    "onboardingStatus",
    "members",
    "features",
)
RULES: dict[str, Rules] = {
    "projects": Rules(
        aggregates=PROJECT_AGGREGATES, one_sided=_paths("favorite"), drop=PROJECT_JOB
    ),
    "project": Rules(
        # stats: what happened in the last 30 days, as the overview's (rule 6).
        drop=PROJECT_JOB | _paths("stats"),
        aggregates=PROJECT_AGGREGATES,
        keyed={"environments": "environment", "features": "name"},
        unordered=_paths("features.*.tags"),
        one_sided=_paths("id", "archivedAt", "environments.*.type", "environments.*.sortOrder"),
    ),
    "project overview": Rules(
        aggregates=PROJECT_AGGREGATES,
        keyed={"environments": "environment"},
        unordered=_paths("featureTypeCounts"),
        # What happened on the server in the last 30 days, and which flag was created first:
        # an import or a seed makes its own history, in its own order.
        drop=_paths("stats", "onboardingStatus.feature") | PROJECT_JOB,
    ),
    "project environments": Rules(
        keyed={"environments": "name"},
        aggregates=_paths(
            "environments.*.projectApiTokenCount", "environments.*.projectEnabledToggleCount"
        ),
    ),
    "environments": Rules(aggregates=_paths("projectCount", "apiTokenCount", "enabledToggleCount")),
    "context fields": Rules(aggregates=_paths("usedInProjects", "usedInFeatures")),
    "strategies": Rules(),
    "tag types": Rules(),
    "feature types": Rules(),
    "segments": _merge(
        {
            "drop": _paths("id"),
            "defaults": {f"{CONSTRAINT}.{k}": v for k, v in CONSTRAINT_DEFAULTS.items()},
        },
        one_sided=_paths("project", "createdBy"),
    ),
    "segment strategies": Rules(
        drop=_paths("strategies.[].id"),
        unordered=_paths("strategies", "changeRequestStrategies"),
    ),
    "project flags": _merge(
        _strategy(ENV_STRATEGY),
        {
            "keyed": {"environments": "name"},
            "unordered": _paths("tags"),
            "drop": _paths("links.[].id"),
        },
        one_sided=_paths(
            "collaborators",
            "lifecycle",
            "dependencies",
            "children",
            "project",
            "enabled",
            "potentiallyStale",
            "favorite",
            "archived",
            "archivedAt",
            "createdBy",
            "dependencyType",
            "environments.*.featureName",
            "environments.*.environment",
            "environments.*.strategies",
            "environments.*.variants",
            "environments.*.yes",
            "environments.*.no",
        ),
    ),
    "flags": _merge(
        _strategy(ENV_STRATEGY),
        {
            "keyed": {"environments": "name"},
            # lifecycle: derived by other rules on each side (compare.py, rule 9).
            "drop": _paths("createdBy.id", "collaborators.users.[].id", "links.[].id", "lifecycle"),
            "unordered": _paths("tags", "dependencies", "children", "collaborators.users"),
            "names_only": _paths("variants"),
        },
        one_sided=_paths(
            "enabled",
            "favorite",
            "potentiallyStale",
            "archivedAt",
            "tags",
            "strategies",
            "environments.*.environment",
            "environments.*.featureName",
            "environments.*.hasStrategies",
            "environments.*.hasEnabledStrategies",
            "environments.*.variantCount",
        ),
    ),
    "archived": _merge({"keyed": {"environments": "name"}}),
    "tags": Rules(),
    "flag tags": Rules(unordered=_paths("tags")),
    "dependencies": Rules(
        unordered=_paths("dependencies", "children", "parentVariants", "parents")
    ),
    "users": Rules(
        drop=_paths("id", "inviteLink"),
        one_sided=_paths("emailSent", "permissions", "scimId", "loginAttempts"),
    ),
    "root roles": Rules(),
    "api tokens": Rules(drop=_paths("id"), unordered=_paths("projects")),
    "client features": _merge(
        _strategy("strategies.[]"),
        one_sided=_paths("strategies.[].sortOrder"),
        unordered=_paths("dependencies"),
        # Unleash 6.10.1 repeats a dependency once per strategy of the child (a join): the
        # SDKs read the list as a set.
        unique=_paths("dependencies"),
    ),
}


@dataclass(frozen=True)
class Times:
    created: bool = False  # creation times compared to the millisecond (an import keeps them)


def time_value(key: str, value: Any, times: Times) -> Any:
    if value is None or not isinstance(value, str):
        return value
    if times.created and key in CREATED:
        match = ISO.fullmatch(value)
        if match:
            millis = (match.group(2) or ".000")[:4].ljust(4, "0")
            zone = match.group(3) or "Z"
            return match.group(1) + millis + ("Z" if zone in ("Z", "+00:00", "+0000") else zone)
        return value
    return "<time>"


def canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


IDENTITY = ("name", "feature", "featureName", "type", "value", "contextName", "environment")


def identity(value: Any) -> tuple[str, str]:
    """A list item's sort key: what names it first (fields one side adds cannot reorder the
    list), then all of it."""
    if isinstance(value, dict):
        named = {k: value[k] for k in IDENTITY if k in value}
        return canonical(named), canonical(value)
    return canonical(value), ""


def normalise(value: Any, rules: Rules, *, times: Times, scoped: bool, path: str = "") -> Any:
    """One answer (or one entity of it) as compared: the kind's rules applied."""
    if isinstance(value, dict):
        made = {}
        for key, item in value.items():
            here = f"{path}.{key}" if path else key
            if key in EVERYWHERE or here in rules.drop or (scoped and here in rules.aggregates):
                continue
            if key in TIMES:
                made[key] = time_value(key, item, times)
                continue
            made[key] = _item(item, rules, times=times, scoped=scoped, path=here)
        for default_path, default in rules.defaults.items():
            parent, _, key = default_path.rpartition(".")
            if parent == path and key not in made:
                made[key] = default
        return made
    if isinstance(value, list):
        return [
            normalise(item, rules, times=times, scoped=scoped, path=f"{path}.[]") for item in value
        ]
    return value


def _item(item: Any, rules: Rules, *, times: Times, scoped: bool, path: str) -> Any:
    if path in rules.keyed and isinstance(item, list):
        key = rules.keyed[path]
        return {
            str(entry.get(key)): normalise(
                entry, rules, times=times, scoped=scoped, path=f"{path}.*"
            )
            for entry in item
            if isinstance(entry, dict)
        }
    if path in rules.names_only and isinstance(item, list):
        return sorted(str(x.get("name")) for x in item if isinstance(x, dict))
    made = normalise(item, rules, times=times, scoped=scoped, path=path)
    if path in rules.unique and isinstance(made, list):
        made = list({canonical(x): x for x in made}.values())
    if path in rules.unordered and isinstance(made, list):
        return sorted(made, key=identity)
    return made


@dataclass(frozen=True)
class Difference:
    path: str
    pattern: str  # the rules' path: list positions as '[]', keys of keyed lists as '*'
    a: Any
    b: Any

    def line(self, width: int = 160) -> str:
        text = f"{self.path or '(the answer)'}: {short(self.a)} != {short(self.b)}"
        return text if len(text) <= width else text[: width - 3] + "..."


ABSENT = "(absent)"


def short(value: Any) -> str:
    if value is ABSENT:
        return "(absent)"
    text = canonical(value)
    return text if len(text) <= 70 else text[:67] + "..."


@dataclass
class Diff:
    differences: list[Difference] = field(default_factory=list)
    one_sided: set[tuple[str, str]] = field(default_factory=set)  # (path pattern, side)


@dataclass(frozen=True)
class At:
    """Where a comparison is: the path shown, and the rules' pattern of it."""

    path: str = ""
    pattern: str = ""

    def key(self, key: str, rules: Rules) -> At:
        return At(f"{self.path}.{key}" if self.path else key, _generic(self.pattern, key, rules))

    def item(self, n: int | str) -> At:
        return At(f"{self.path}[{n}]", f"{self.pattern}.[]")


def diff(a: Any, b: Any, rules: Rules, out: Diff, at: At = At()) -> None:
    """What differs between two normalised answers, into `out`; a field one side lacks is a
    difference unless it is empty or listed in the kind's `one_sided`."""
    if isinstance(a, dict) and isinstance(b, dict):
        _dicts(a, b, rules, out, at)
    elif isinstance(a, list) and isinstance(b, list):
        _lists(a, b, rules, out, at)
    elif a != b:
        out.differences.append(Difference(at.path, at.pattern, a, b))


def _dicts(a: dict[str, Any], b: dict[str, Any], rules: Rules, out: Diff, at: At) -> None:
    for key in sorted(set(a) | set(b)):
        here = at.key(key, rules)
        if key in a and key in b:
            diff(a[key], b[key], rules, out, here)
        elif empty(a.get(key, b.get(key))):
            continue
        elif here.pattern in rules.one_sided:
            out.one_sided.add((here.pattern, "a" if key in a else "b"))
        else:
            out.differences.append(
                Difference(here.path, here.pattern, a.get(key, ABSENT), b.get(key, ABSENT))
            )


def _lists(a: list[Any], b: list[Any], rules: Rules, out: Diff, at: At) -> None:
    if len(a) == len(b):
        for n, (x, y) in enumerate(zip(a, b, strict=True)):
            diff(x, y, rules, out, at.item(n))
        return
    # Of different lengths: the items one side has and the other lacks.
    left = Counter(canonical(x) for x in a)
    right = Counter(canonical(y) for y in b)
    for items, extra, sign in ((a, left - right, "-"), (b, right - left, "+")):
        for item in items:
            if extra[canonical(item)] > 0:
                extra[canonical(item)] -= 1
                x, y = (item, ABSENT) if sign == "-" else (ABSENT, item)
                out.differences.append(Difference(at.item(sign).path, at.item(sign).pattern, x, y))


def _generic(pattern: str, key: str, rules: Rules) -> str:
    """The rules' path of `key` under `pattern`: the keys of a keyed list's map are '*'."""
    if pattern in rules.keyed:
        return f"{pattern}.*"
    return f"{pattern}.{key}" if pattern else key
