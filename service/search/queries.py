"""Read SQL of the flag table: a Search made one statement that counts the matching flags and
names the page's (in order), then the page's rows. Only fragments written here go into the
SQL text; every value is a $n parameter.

The statement is built for the page the UI opens with (a project's active flags, newest
first, 25 of them): the page walks the index features_project_created_idx in order and stops
after the page (sql/0024). Favourites first is two such walks, the person's favourites and the
rest, merged: never a sort of every flag. The count reads every match; a total counted at the
log position the statement reads is taken as it is instead (Totals)."""

from __future__ import annotations

from collections import OrderedDict
from typing import TYPE_CHECKING, Any, Final

from eventlog.reads import HEAD
from projections.feature_types import potentially_stale
from projections.flag_extras import current_stage, lifecycle_times
from service.http.past import CLOCK
from service.search.filters import Condition, Search, tag_pair

if TYPE_CHECKING:
    import asyncpg

    from eventlog.connections import Conn

# Whether a flag is potentially stale (its type's expected lifetime is over); every use goes
# through this name.
POTENTIALLY_STALE: Final = potentially_stale("f", CLOCK)
# When an SDK last reported the flag in any environment (service/telemetry; a report from
# before the flag's creation was of a deleted namesake).
LAST_SEEN: Final = (
    "(SELECT max(l.last_seen_at) FROM telemetry.feature_last_seen l "
    "WHERE l.feature_name = f.name AND l.last_seen_at >= f.created_at)"
)
_COLUMNS: Final = {
    "name": "f.name",
    "type": "f.type",
    "stale": "f.stale",
    "project": "f.project",
    "createdAt": "f.created_at",
    "lastSeenAt": LAST_SEEN,
}


def _like(term: str) -> str:
    """A substring pattern of ILIKE whose `%`, `_` and `\\` are plain characters."""
    escaped = term.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return f"%{escaped}%"


class Where:
    """The conditions of a search, as SQL over `features f`, and their arguments."""

    def __init__(self, args: list[Any] | None = None) -> None:
        self.clauses: list[str] = []
        self.args: list[Any] = args if args is not None else []

    def param(self, value: Any, cast: str = "") -> str:
        self.args.append(value)
        return f"${len(self.args)}{cast}"

    def add(self, clause: str) -> None:
        self.clauses.append(clause)

    def text(self) -> str:
        return " AND ".join(self.clauses) if self.clauses else "true"


def _one_of(where: Where, column: str, condition: Condition, cast: str = "text") -> str:
    values = list(condition.values)
    if cast == "integer":
        values = [int(v) for v in values]  # type: ignore[misc]
    if len(values) == 1:  # an equality: the planner walks an index in its order
        clause = f"{column} = {where.param(values[0])}"
    else:
        clause = f"{column} = ANY({where.param(values, f'::{cast}[]')})"
    return f"NOT coalesce({clause}, false)" if condition.negated else clause


def _state(condition: Condition) -> str:
    """Unleash's states as sets: active (not stale), stale, potentially stale (not stale, but
    its type's lifetime is over); a flag matches a set when it matches one of them."""
    parts = {
        "active": "NOT f.stale",
        "stale": "f.stale",
        "potentially-stale": f"(NOT f.stale AND {POTENTIALLY_STALE})",
    }
    clause = "(" + " OR ".join(parts[v] for v in condition.values) + ")"
    return f"NOT {clause}" if condition.negated else clause


def _has(condition: Condition, matches: str, distinct: str) -> str:
    """Flags that have some (INCLUDE...), none (DO_NOT_INCLUDE...), all (INCLUDE_ALL_OF) or
    not all (EXCLUDE_ALL) of the values; `matches` is the FROM and WHERE of the flag's matching
    items, `distinct` what tells them apart."""
    operator = condition.operator
    if operator in ("INCLUDE_ALL_OF", "EXCLUDE_ALL"):
        count = f"(SELECT count(DISTINCT {distinct}) {matches}) = {len(condition.values)}"
        return count if operator == "INCLUDE_ALL_OF" else f"NOT {count}"
    exists = f"EXISTS (SELECT 1 {matches})"
    return f"NOT {exists}" if condition.negated else exists


def _tags(where: Where, condition: Condition) -> str:
    pairs = [tag_pair(v) for v in condition.values]
    types = where.param([t for t, _ in pairs], "::text[]")
    values = where.param([v for _, v in pairs], "::text[]")
    matches = (
        "FROM feature_tags t WHERE t.feature_name = f.name AND (t.type, t.value) IN "  # noqa: S608
        f"(SELECT * FROM unnest({types}, {values}))"
    )
    return _has(condition, matches, "(t.type, t.value)")


def _segments(where: Where, condition: Condition) -> str:
    names = where.param(list(condition.values), "::text[]")
    matches = (
        "FROM feature_strategies s JOIN segments g ON g.id = ANY(s.segments) "
        f"WHERE s.feature_name = f.name AND g.name = ANY({names})"
    )
    return _has(condition, matches, "g.name")


def _created_by(where: Where, condition: Condition) -> str:
    ids = where.param([int(v) for v in condition.values], "::integer[]")
    exists = (
        "EXISTS (SELECT 1 FROM feature_creators c "  # noqa: S608 - a $n parameter
        f"WHERE c.feature_name = f.name AND c.user_id = ANY({ids}))"
    )
    return f"NOT {exists}" if condition.negated else exists


def _condition(where: Where, condition: Condition) -> str:  # noqa: PLR0911 - one per field
    match condition.field:
        case "project":
            return _one_of(where, "f.project", condition)
        case "type":
            return _one_of(where, "f.type", condition)
        case "lifecycle":
            return _one_of(where, f"({current_stage('f')})", condition)
        case "state":
            return _state(condition)
        case "createdBy":
            return _created_by(where, condition)
        case "tag":
            return _tags(where, condition)
        case "segment":
            return _segments(where, condition)
    raise AssertionError(condition.field)  # pragma: no cover - filters.py names them all


def where_of(search: Search, args: list[Any] | None = None) -> Where:
    """The conditions that pick the flags of a search (not yet its order or page)."""
    where = Where(args)
    where.add("f.archived_at IS NOT NULL" if search.archived else "f.archived_at IS NULL")
    for condition in search.conditions:
        where.add(_condition(where, condition))
    if search.terms:
        patterns = where.param([_like(t) for t in search.terms], "::text[]")
        where.add(f"(f.name ILIKE ANY({patterns}) OR f.description ILIKE ANY({patterns}))")
    if search.status:
        environments = where.param([e for e, _ in search.status], "::text[]")
        enabled = where.param([on for _, on in search.status], "::boolean[]")
        where.add(
            "EXISTS (SELECT 1 FROM project_environments pe "  # noqa: S608 - $n parameters
            f"JOIN unnest({environments}, {enabled}) AS s(environment, enabled) "
            "ON s.environment = pe.environment "
            "LEFT JOIN feature_environments fe "
            "ON fe.feature_name = f.name AND fe.environment = pe.environment "
            "WHERE pe.project_id = f.project AND coalesce(fe.enabled, false) = s.enabled)"
        )
    for column, bound, operator in (
        ("f.created_at", search.created_before, "<"),
        ("f.created_at", search.created_from, ">="),
        (LAST_SEEN, search.seen_before, "<"),
        (LAST_SEEN, search.seen_from, ">="),
    ):
        if bound is not None:
            where.add(f"{column} {operator} {where.param(bound)}")
    return where


def order_of(search: Search, where: Where) -> list[tuple[str, str]]:
    """The sort keys, as (expression, ASC|DESC [NULLS LAST]), ties broken as Unleash breaks
    them: by creation, then name, each ascending."""
    direction = "DESC" if search.descending else "ASC"
    if search.sort_by == "createdAt":
        return [("f.created_at", direction), ("f.name", "ASC")]
    if search.sort_by == "environment":
        environment = where.param(search.sort_environment)
        # Whether the flag is enabled there; null (last) where its project lacks it.
        first = (
            "(SELECT coalesce(fe.enabled, false) FROM project_environments pe "  # noqa: S608
            "LEFT JOIN feature_environments fe "
            "ON fe.feature_name = f.name AND fe.environment = pe.environment "
            f"WHERE pe.project_id = f.project AND pe.environment = {environment})"
        )
        key = (first, f"{direction} NULLS LAST")
    elif search.sort_by == "lastSeenAt":
        key = (LAST_SEEN, f"{direction} NULLS LAST")
    else:
        key = (_COLUMNS[search.sort_by], direction)
    return [key, ("f.created_at", "ASC"), ("f.name", "ASC")]


TOTALS_KEPT: Final = 1024  # searches whose totals a replica remembers (the least recent go)


class Totals:
    """The totals this replica counted, each with the log position it was counted at. Every
    read model a total reads is an inline projection's, written in the transaction that moves
    the log's head: while the head has not moved, the total has not changed, and the page's
    statement skips the count (at 10,000 flags most of its time). Searches whose matches move
    with the clock (potentially stale) or with SDK reports (last seen) are never remembered."""

    def __init__(self, size: int = TOTALS_KEPT) -> None:
        self._size = size
        self._known: OrderedDict[str, tuple[int, int]] = OrderedDict()

    def __len__(self) -> int:
        return len(self._known)

    def get(self, key: str) -> tuple[int, int] | None:
        """(head position, total) last counted for this search, if kept."""
        found = self._known.get(key)
        if found is not None:
            self._known.move_to_end(key)
        return found

    def put(self, key: str, head: int, total: int) -> None:
        self._known[key] = (head, total)
        self._known.move_to_end(key)
        while len(self._known) > self._size:
            self._known.popitem(last=False)


def _rememberable(search: Search) -> bool:
    """Whether the search's matches depend only on what the log holds."""
    if search.seen_before is not None or search.seen_from is not None:
        return False
    return not any(
        c.field == "state" and "potentially-stale" in c.values for c in search.conditions
    )


def page_sql(search: Search, user_id: int | None) -> tuple[str, list[Any], str | None]:
    """One statement: `head` (the log's position it read), `total` (every match; null when the
    head is the statement's last parameter, which the caller appends: the log position of a
    total counted before, or -1) and `names` (the page's, in order). Also the key Totals keeps
    the total under (its conditions and their values), None for a total never remembered."""
    where = where_of(search)
    key = repr((where.text(), where.args)) if _rememberable(search) else None
    order = order_of(search, where)
    text = where.text()
    keys = ", ".join(f"{expr} AS k{i}" for i, (expr, _) in enumerate(order))
    ordered = ", ".join(f"{expr} {how}" for expr, how in order)
    limit, offset = where.param(search.limit), where.param(search.offset)
    # Our fragments and parameters only: values are $n.
    if not search.favorites_first or user_id is None:
        page = (
            f"SELECT f.name FROM features f WHERE {text} "  # noqa: S608
            f"ORDER BY {ordered} LIMIT {limit} OFFSET {offset}"
        )
    else:
        user = where.param(user_id)
        favorite = (
            f"EXISTS (SELECT 1 FROM favorite_features ff "  # noqa: S608 - a $n parameter
            f"WHERE ff.user_id = {user} AND ff.feature_name = f.name)"
        )
        upto = f"({limit}::bigint + {offset}::bigint)"
        outer = ", ".join(f"k{i} {how}" for i, (_, how) in enumerate(order))
        page = (
            f"SELECT name FROM ("  # noqa: S608
            f"(SELECT 0 AS part, {keys}, f.name FROM features f WHERE {text} AND {favorite} "
            f"ORDER BY {ordered} LIMIT {upto}) UNION ALL "
            f"(SELECT 1 AS part, {keys}, f.name FROM features f "
            f"WHERE {text} AND NOT {favorite} ORDER BY {ordered} LIMIT {upto})"
            f") x ORDER BY part, {outer} LIMIT {limit} OFFSET {offset}"
        )
    known = f"${len(where.args) + 1}::bigint"
    # The count is an InitPlan, run only when the CASE needs it.
    sql = (
        f"SELECT h.position AS head, CASE WHEN h.position = {known} THEN NULL "  # noqa: S608
        f"ELSE (SELECT count(*) FROM features f WHERE {text}) END AS total, "
        f"array({page}) AS names FROM ({HEAD}) h"
    )
    return sql, where.args, key


# The page's flags in its order ($1 their names), with what each row of the table shows; $2
# the caller's account id (null: no favourites). `dependency`: `parent` when some flag
# depends on it, else `child` when it depends on one (as Unleash's CASE says).
PAGE_ROWS = f"""
SELECT f.name, f.description, f.type, f.project, f.stale, f.impression_data, f.created_at,
       f.archived_at, {lifecycle_times("f")},
       {POTENTIALLY_STALE} AS potentially_stale,
       {LAST_SEEN} AS last_seen_at,
       c.user_id AS creator_id, u.name AS creator_name, u.username AS creator_username,
       u.email AS creator_email,
       EXISTS (SELECT 1 FROM favorite_features ff
               WHERE ff.user_id = $2 AND ff.feature_name = f.name) AS favorite,
       CASE WHEN EXISTS (SELECT 1 FROM feature_dependencies d WHERE d.parent = f.name)
                 THEN 'parent'
            WHEN EXISTS (SELECT 1 FROM feature_dependencies d WHERE d.child = f.name)
                 THEN 'child' END AS dependency,
       array(SELECT t.type FROM feature_tags t WHERE t.feature_name = f.name
             ORDER BY t.type, t.value) AS tag_types,
       array(SELECT t.value FROM feature_tags t WHERE t.feature_name = f.name
             ORDER BY t.type, t.value) AS tag_values,
       array(SELECT DISTINCT g.name FROM feature_strategies s
             JOIN segments g ON g.id = ANY(s.segments)
             WHERE s.feature_name = f.name ORDER BY g.name) AS segments
FROM unnest($1::text[]) WITH ORDINALITY AS n(name, ord)
JOIN features f ON f.name = n.name
LEFT JOIN feature_creators c ON c.feature_name = f.name
LEFT JOIN users u ON u.id = c.user_id
ORDER BY n.ord
"""  # noqa: S608 - constants
# The environments of the page's flags' projects, in display order, with the flag's switch,
# variants and strategies there, its last SDK report there and the evaluations of the last
# hour (Unleash's yes and no).
PAGE_ENVIRONMENTS = """
SELECT f.name AS feature, e.name, e.type, e.sort_order,
       coalesce(fe.enabled, false) AS enabled,
       coalesce(jsonb_array_length(fe.variants), 0) AS variant_count,
       EXISTS (SELECT 1 FROM feature_strategies s
               WHERE s.feature_name = f.name AND s.environment = e.name) AS has_strategies,
       EXISTS (SELECT 1 FROM feature_strategies s
               WHERE s.feature_name = f.name AND s.environment = e.name AND NOT s.disabled)
           AS has_enabled_strategies,
       l.last_seen_at,
       coalesce(m.yes, 0)::bigint AS yes, coalesce(m.no, 0)::bigint AS no
FROM features f
JOIN project_environments pe ON pe.project_id = f.project
JOIN environments e ON e.name = pe.environment
LEFT JOIN feature_environments fe ON fe.feature_name = f.name AND fe.environment = e.name
LEFT JOIN telemetry.feature_last_seen l
       ON l.feature_name = f.name AND l.environment = e.name AND l.last_seen_at >= f.created_at
LEFT JOIN LATERAL (
    SELECT sum(h.yes) AS yes, sum(h.no) AS no FROM telemetry.client_metrics_hourly h
    WHERE h.feature_name = f.name AND h.environment = e.name
      AND h.hour >= date_trunc('hour', now()) - interval '1 hour'
      AND h.hour >= f.created_at - interval '1 hour'
) m ON true
WHERE f.name = ANY($1::text[])
ORDER BY f.name, e.sort_order, e.name
"""


async def page(
    conn: Conn, search: Search, user_id: int | None, totals: Totals | None = None
) -> tuple[int, list[asyncpg.Record], dict[str, list[asyncpg.Record]]]:
    """The total, the page's rows in order and each one's environments. `totals`: the totals
    counted before, on the live read models (None for a past state's)."""
    sql, args, key = page_sql(search, user_id)
    known = totals.get(key) if totals is not None and key is not None else None
    found = await conn.fetchrow(sql, *args, known[0] if known else -1)
    assert found is not None  # the log's head is one row
    total: int = known[1] if found["total"] is None and known else found["total"]
    if totals is not None and key is not None and found["total"] is not None:
        totals.put(key, found["head"], total)
    names = list(found["names"])
    if not names:
        return total, [], {}
    rows = await conn.fetch(PAGE_ROWS, names, user_id)
    environments: dict[str, list[asyncpg.Record]] = {name: [] for name in names}
    for env in await conn.fetch(PAGE_ENVIRONMENTS, names):
        environments[env["feature"]].append(env)
    return total, rows, environments
