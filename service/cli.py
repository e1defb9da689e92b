"""The commands behind `python -m service`: serve, deliver, migrate, replay, verify, export,
state, diff, dsn, import-users, import-unleash, admin-user, reporting-user, erase-user,
rotate-master-key."""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

import asyncpg
import msgspec
import uvloop

import eventlog
from eventlog import connections, migrations
from eventlog.errors import ConfigError, LogError
from eventlog.logs import configure_logging
from eventlog.privacy import keys, master
from projections.inline import apply_inline
from projections.replay import ReplayBusy, WorkerFailed, replay
from projections.verify import verify
from service import bootstrap, delivering, embedded, reporting, serving
from service.audit import report
from service.errors import AppError, from_log
from service.privacy import admin
from service.settings import Settings, load_settings
from service.switchover import file as export_file
from service.switchover import kinds, source
from service.switchover import run as switchover
from service.switchover.progress import Progress
from service.switchover.report import print_report
from service.switchover.users import LINKS as RESET_LINKS
from service.users import admins, importer
from service.work import Work

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable, Iterator, Mapping
    from types import FrameType

    from eventlog.connections import Conn


MAX_USERNAME = 255  # as the API's CreateUser allows


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m service", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    serve = sub.add_parser("serve", help="run the HTTP service (migrates first)")
    serve.add_argument("--no-migrate", action="store_true", help="do not apply migrations")
    sub.add_parser(
        "deliver",
        help="deliver integrations' events only (beside serve with INTEGRATION_DELIVERY=false)",
    )
    sub.add_parser("migrate", help="apply pending migrations and exit")
    sub.add_parser("replay", help="rebuild every read model from the event log")
    sub.add_parser("verify", help="check the log and that read models equal a rebuild")
    export = sub.add_parser("export", help="write the event log as NDJSON")
    export.add_argument("--output", "-o", help="file to write (default: standard output)")
    export.add_argument("--after", type=int, default=0, help="only events after this position")
    state = sub.add_parser("state", help="write every read model as of an instant, as files")
    state.add_argument("--at", help="an RFC 3339 time or a log position (default: now)")
    state.add_argument("--output", "-o", required=True, help="directory to write (new or empty)")
    diff = sub.add_parser("diff", help="what changed between two instants, entity by entity")
    diff.add_argument("start", metavar="FROM", help="an RFC 3339 time or a log position")
    diff.add_argument("end", metavar="TO", nargs="?", help="likewise (default: now)")
    diff.add_argument("--stream", help="one entity's stream only, e.g. feature/checkout")
    diff.add_argument("--project", help="one project and its flags only")
    diff.add_argument("--json", action="store_true", help="the JSON of /api/admin/audit/diff")
    sub.add_parser("dsn", help="print the connection string of the database in use")
    users = sub.add_parser("import-users", help="import users from a JSON Lines file")
    users.add_argument("file", help="JSON Lines: {email?, username?, name?, rootRole?, ...}")
    unleash = sub.add_parser(
        "import-unleash",
        help="copy a running Unleash's state into this service (docs/migrating.md)",
    )
    given = unleash.add_mutually_exclusive_group(required=True)
    given.add_argument("--url", help="the Unleash's address, e.g. https://unleash.example.com")
    given.add_argument(
        "--file",
        type=Path,
        help="an export file (POST /api/admin/features-batch/export) instead of --url",
    )
    unleash.add_argument(
        "--environment", help="with --file: the environment the file's strategies are for"
    )
    unleash.add_argument(
        "--token",
        default=os.environ.get("UNLEASH_TOKEN"),
        help="an admin API token or an Admin's personal access token (default: $UNLEASH_TOKEN)",
    )
    unleash.add_argument("--dry-run", action="store_true", help="report, write nothing")
    unleash.add_argument(
        "--prefer-source",
        action="store_true",
        help="overwrite what exists here with other content (otherwise reported, kept)",
    )
    unleash.add_argument(
        "--links",
        metavar="FILE",
        help="write the new people's password reset links to FILE (mode 0600) instead of "
        "printing them",
    )
    unleash.add_argument(
        "--renew-links",
        action="store_true",
        help="also make new reset links for the people an earlier run imported who have not "
        "set a password here yet (a link holds a day: run this on the day of the switch)",
    )
    unleash.add_argument(
        "--public-url",
        help="where people reach this service: the reset links' base "
        "(default: http://HOST:PORT of the settings)",
    )
    admin_user = sub.add_parser("admin-user", help="create an Admin account to sign in with")
    admin_user.add_argument("username", type=_username, help="its username (any case kept)")
    erase = sub.add_parser("erase-user", help="destroy a deleted user's personal-data key now")
    erase.add_argument("id", type=_user_id, help="the user's id")
    sub.add_parser(
        "rotate-master-key",
        help="wrap every personal-data key with PII_MASTER_KEY (old: PII_PREVIOUS_MASTER_KEYS)",
    )
    login = sub.add_parser("reporting-user", help="create a read-only login for reporting tools")
    login.add_argument("name", type=_role_name, help="its role name: lower case, digits, _")
    return parser


def _user_id(value: str) -> int:
    if not value.isdigit() or not 0 < int(value) < 2**63:
        raise argparse.ArgumentTypeError(f"not a user id: {value!r}")
    return int(value)


def _username(value: str) -> str:
    name = value.strip()
    if not name or len(name) > MAX_USERNAME or not name.isprintable():
        raise argparse.ArgumentTypeError(f"not a username: {value!r}")
    return name


def _role_name(value: str) -> str:
    try:
        return reporting.check_role_name(value)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        settings = load_settings()
    except ConfigError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    configure_logging(settings.log_format, settings.log_level)
    if args.command == "import-unleash" and args.public_url is None:
        args.public_url = _public_url(settings)
    # SIGTERM unwinds like Ctrl-C, so the embedded PostgreSQL is stopped on the way out;
    # once serving, `serve` replaces this with a graceful stop.
    signal.signal(signal.SIGTERM, _raise_interrupt)
    try:
        if args.command in WITHOUT_EMBEDDED_START:
            return WITHOUT_EMBEDDED_START[args.command](settings)
        if args.command == "serve":
            serving.check_listen_address(settings.host, settings.port)
        if args.command in NEEDS_MASTER_KEY:
            master.install(master.from_settings(settings))
        settings = embedded_pool(settings, os.environ)
        with database(settings) as dsn:
            # The embedded server's postmaster: serve exits when it dies.
            postmaster = (
                None
                if settings.database_url
                else embedded.postmaster_pid(Path(settings.data_dir).resolve())
            )
            return uvloop.run(_dispatch(args, settings, dsn, postmaster))
    except (ConfigError, migrations.MigrationError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except (OSError, asyncpg.PostgresError, asyncpg.InterfaceError) as exc:
        print(f"error: the database could not be used: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt as exc:
        # SIGTERM (podman stop, Kubernetes) before serving began is a requested stop: 0.
        return 0 if isinstance(exc, Terminated) else 130


def _public_url(settings: Settings) -> str:
    """Where `serve` listens, as a browser on this machine reaches it (an address that means
    every interface is reached as localhost)."""
    host = settings.host if settings.host not in {"", "0.0.0.0", "::"} else "localhost"  # noqa: S104 - compared, not bound
    host = f"[{host}]" if ":" in host else host
    return f"http://{host}:{settings.port}"


def embedded_pool(settings: Settings, environ: Mapping[str, str]) -> Settings:
    """The settings with the embedded server's pool size (embedded.pool_size) when it answers
    and DB_POOL_SIZE is unset."""
    if settings.database_url or environ.get("DB_POOL_SIZE", "").strip():
        return settings
    cores = len(os.sched_getaffinity(0))
    return msgspec.structs.replace(settings, db_pool_size=embedded.pool_size(cores))


class Terminated(KeyboardInterrupt):
    """SIGTERM before serving began: unwinds like Ctrl-C (the embedded PostgreSQL is stopped
    on the way out) but is a requested stop, exit code 0."""


def _raise_interrupt(_signum: int, _frame: FrameType | None) -> None:
    raise Terminated


@contextlib.contextmanager
def database(settings: Settings) -> Iterator[str]:
    """DATABASE_URL when set, else the embedded PostgreSQL in DATA_DIR (stopped on exit)."""
    if settings.database_url:
        yield settings.database_url
        return
    with embedded.embedded_postgres(Path(settings.data_dir).resolve()) as dsn:
        yield dsn


async def _dispatch(
    args: argparse.Namespace, settings: Settings, dsn: str, postmaster: int | None
) -> int:
    if args.command in NEEDS_MASTER_KEY:
        conn = await connections.connect(dsn)
        try:
            await keys.check_masters(conn, master.masters())
        finally:
            await conn.close()
    if args.command == "serve":
        return await serving.serve(
            settings, dsn, migrate=not args.no_migrate, postmaster=postmaster
        )
    conn = await connections.connect(dsn)
    try:
        return await COMMANDS[args.command](conn, args, dsn)
    finally:
        await conn.close()


async def _migrate(conn: Conn, _args: argparse.Namespace, _dsn: str) -> int:
    applied = await migrations.migrate(conn)
    print(f"applied {len(applied)} migration(s): {', '.join(applied) or 'none pending'}")
    return 0


async def _replay(conn: Conn, _args: argparse.Namespace, dsn: str) -> int:
    try:
        count = await replay(conn, dsn)
    except (ReplayBusy, WorkerFailed) as exc:
        print(f"error: {exc}; nothing was changed, run it again", file=sys.stderr)
        return 1
    print(f"replayed {count} events into every read model")
    return 0


async def _verify(conn: Conn, _args: argparse.Namespace, _dsn: str) -> int:
    found = await verify(conn)
    print("\n".join(found.lines()))
    return 0 if found.ok else 1


async def _export(conn: Conn, args: argparse.Namespace, _dsn: str) -> int:
    try:
        with _output(args.output) as out:
            count = await export(conn, out, after=args.after)
    except BrokenPipeError:  # `export | head`: the reader left, which is not a failure
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    print(f"exported {count} events", file=sys.stderr)
    return 0


def _message(exc: Exception) -> str:
    """What a command says of a failure it expects: a domain error's message (a failure of the
    log's layer as the API would say it, e.g. a key that does not open), or the exception."""
    if isinstance(exc, (AppError, LogError)):
        return from_log(exc).message
    return str(exc)


async def _state(conn: Conn, args: argparse.Namespace, _dsn: str) -> int:
    """Exit 2 for a bad instant or a directory in the way."""
    try:
        state = await report.read_state(conn, args.at)
        written = report.write_state(state, Path(args.output))
    except (AppError, LogError, OSError) as exc:
        print(f"error: {_message(exc)}", file=sys.stderr)
        return 2
    rows = sum(written.tables.values())
    print(
        f"wrote {len(written.tables)} read models ({rows} rows) as of position "
        f"{written.position} into {args.output}",
        file=sys.stderr,
    )
    return 0


async def _diff(conn: Conn, args: argparse.Namespace, _dsn: str) -> int:
    """Exit 2 for a bad instant or stream, or FROM after TO."""
    try:
        found = await report.diff(
            conn, args.start, args.end, stream=args.stream, project=args.project
        )
    except (AppError, LogError, ValueError) as exc:
        print(f"error: {_message(exc)}", file=sys.stderr)
        return 2
    if args.json:
        sys.stdout.write(msgspec.json.encode(found).decode() + "\n")
    else:
        report.print_diff(found, sys.stdout)
    return 0


async def _import_users(conn: Conn, args: argparse.Namespace, _dsn: str) -> int:
    """Exit 0 when every line was imported or already there, 1 when a batch was refused."""
    path: str = args.file
    await migrations.migrate(conn)
    started = time.perf_counter()
    try:
        # The CLI runs this one task: reading the file blocks nobody else.
        with Path(path).open(encoding="utf-8", errors="surrogateescape") as lines:  # noqa: ASYNC230
            outcome = await importer.import_users(
                Work(apply_inline), conn, lines, source=Path(path).name
            )
    except OSError as exc:
        print(f"error: cannot read {path}: {exc.strerror}", file=sys.stderr)
        return 2
    for number, message in outcome.bad_lines:
        print(f"line {number}: {message}", file=sys.stderr)
    print(
        f"imported {outcome.imported} users, skipped {outcome.skipped} already there, "
        f"refused {outcome.batches_refused} batch(es) with bad lines "
        f"in {time.perf_counter() - started:.1f} s",
        file=sys.stderr,
    )
    return 1 if outcome.batches_refused else 0


async def _import_unleash(conn: Conn, args: argparse.Namespace, _dsn: str) -> int:
    """Exit 0 when the source and this service agree after the run, 1 when a kind had
    problems or the source failed while being read, 2 for what the command line got wrong."""
    if args.file is not None:
        return await _import_unleash_file(conn, args)
    if not args.token:
        print("error: --token (or UNLEASH_TOKEN) is required", file=sys.stderr)
        return 2
    await migrations.migrate(conn)
    # What a first start creates (the default project and environments, the built-in types)
    # is there before anything is compared with the source.
    await bootstrap.seed_defaults(Work(apply_inline), conn)
    started = time.perf_counter()
    try:
        async with source.Unleash(args.url, args.token) as unleash:
            outcome = await switchover.run(
                unleash,
                kinds.all_kinds(args.public_url, renew_links=args.renew_links),
                Work(apply_inline),
                conn,
                Progress(),
                dry_run=args.dry_run,
                prefer_source=args.prefer_source,
            )
    except source.SourceError as exc:
        print(f"error: {exc.message}; nothing was written", file=sys.stderr)
        return exc.exit_code
    links: list[tuple[str, str]] = outcome.notes.pop(RESET_LINKS, [])
    print_report(outcome, sys.stdout)
    _reset_links(links, args.links, dry_run=args.dry_run)
    print(f"done in {time.perf_counter() - started:.1f} s", file=sys.stderr)
    return 1 if outcome.problems else 0


def _reset_links(links: list[tuple[str, str]], path: str | None, *, dry_run: bool) -> None:
    """The new people's reset links: on standard output, or in a file only its owner may
    read; never in a log. A dry run's were rolled back with it: only counted."""
    if dry_run:
        print(f"reset links: {len(links)} would be made")
        return
    if path is None:
        for who, link in links:
            print(f"reset link: {who}: {link}")
        return
    with _output(path) as out:
        out.writelines(f"{who}\t{link}\n" for who, link in links)
    print(f"reset links: {len(links)} written to {path}")


async def _import_unleash_file(conn: Conn, args: argparse.Namespace) -> int:
    """Exit 0 when the file was imported (or matched), 1 when it was refused, 2 when it is no
    export file or no environment was given."""
    if not args.environment:
        print("error: --file needs --environment (a file holds one environment)", file=sys.stderr)
        return 2
    await migrations.migrate(conn)
    await bootstrap.seed_defaults(Work(apply_inline), conn)
    try:
        outcome = await export_file.import_file(
            Work(apply_inline), conn, args.file, args.environment, dry_run=args.dry_run
        )
    except export_file.FileError as exc:
        print(f"error: {exc}; nothing was written", file=sys.stderr)
        return 2
    print("\n".join(outcome.lines()))
    return 1 if outcome.problems else 0


async def _admin_user(conn: Conn, args: argparse.Namespace, _dsn: str) -> int:
    """Exit 0 with the password shown, this once; 1 when the username is taken."""
    await migrations.migrate(conn)
    password = admins.new_password()
    try:
        user_id = await admins.create_admin(Work(apply_inline), conn, args.username, password)
    except AppError as exc:
        print(f"error: {exc.message}", file=sys.stderr)
        return 1
    print(f"created user {args.username} (id {user_id}), root role Admin")
    print(f"password: {password}")
    print(
        "sign in with it at / (the web UI); it is shown only now (only its argon2 hash is kept); "
        f"an admin changes it with POST /api/admin/user-admin/{user_id}/change-password",
        file=sys.stderr,
    )
    return 0


async def _reporting_user(conn: Conn, args: argparse.Namespace, dsn: str) -> int:
    """Exit 0 with the password shown, this once; 1 when the login was not created."""
    name: str = args.name
    password = reporting.new_password()
    try:
        await reporting.create_login(conn, name, password)
    except reporting.LoginRefused as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2 if isinstance(exc, reporting.NameRefused) else 1
    print(f"created login {name}, read-only, member of {reporting.REPORTING_ROLE}")
    print(f"password: {password}")
    print(f"connection: {reporting.connection_string(dsn, name, password)}")
    print("the password is shown only now: PostgreSQL keeps only its SCRAM hash", file=sys.stderr)
    return 0


async def _erase_user(conn: Conn, args: argparse.Namespace, _dsn: str) -> int:
    """Exit 1 when the user still exists, or the id is no deleted person's."""
    try:
        lines = await admin.erase_user(Work(apply_inline), conn, args.id)
    except admin.Refused as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print("\n".join(lines))
    return 0


async def _rotate_master_key(conn: Conn, _args: argparse.Namespace, _dsn: str) -> int:
    installed = master.masters()
    count = await admin.rotate_master_key(conn, installed)
    print(f"re-wrapped {count} data keys with master key {installed.current.id}")
    left = {k: n for k, n in (await keys.master_key_ids(conn)).items() if k != installed.current.id}
    if left:  # only if a key was added meanwhile with an old master key (another replica)
        print(f"still wrapped by older master keys: {left}; run it again", file=sys.stderr)
        return 1
    print("every data key is wrapped by it: PII_PREVIOUS_MASTER_KEYS may now be removed")
    return 0


async def export(conn: Conn, out: TextIO, *, after: int = 0) -> int:
    """One JSON object per line, in position order, with both hashes for an outside auditor."""
    encoder = msgspec.json.Encoder()
    count = 0
    async with conn.transaction(isolation="repeatable_read", readonly=True):
        async for event in eventlog.export(conn, after):
            out.write(encoder.encode(event).decode() + "\n")
            count += 1
    return count


@contextlib.contextmanager
def _output(path: str | None) -> Iterator[TextIO]:
    """Standard output, or a file only its owner may read: an export holds the hashes of
    tokens, sessions and passwords that the events hold (the chain covers them)."""
    if path is None:
        yield sys.stdout
        return
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    os.fchmod(descriptor, 0o600)  # a file that was there keeps its mode otherwise
    with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
        yield handle


def _deliver(settings: Settings) -> int:
    """`deliver` uses DATABASE_URL, or the embedded server a `serve` runs in DATA_DIR: it never
    starts one (two processes cannot own one data directory). Its errors are main's."""
    dsn = settings.database_url or embedded.running_embedded_dsn(Path(settings.data_dir).resolve())
    serving.check_listen_address(settings.host, settings.port)
    master.install(master.from_settings(settings))

    async def run() -> int:
        conn = await connections.connect(dsn)
        try:
            await keys.check_masters(conn, master.masters())
        finally:
            await conn.close()
        return await delivering.deliver(settings, dsn)

    return uvloop.run(run())


def _print_dsn(settings: Settings) -> int:
    try:
        dsn = settings.database_url or embedded.running_embedded_dsn(
            Path(settings.data_dir).resolve()
        )
    except ConfigError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print(dsn)
    return 0


# The commands that never start the embedded server (they use the one `serve` runs).
WITHOUT_EMBEDDED_START: dict[str, Callable[[Settings], int]] = {
    "dsn": _print_dsn,
    "deliver": _deliver,
}
# The commands that run on one connection to the database (all but serve).
COMMANDS: dict[str, Callable[[Conn, argparse.Namespace, str], Awaitable[int]]] = {
    "migrate": _migrate,
    "replay": _replay,
    "verify": _verify,
    "export": _export,
    "state": _state,
    "diff": _diff,
    "import-users": _import_users,
    "import-unleash": _import_unleash,
    "admin-user": _admin_user,
    "reporting-user": _reporting_user,
    "erase-user": _erase_user,
    "rotate-master-key": _rotate_master_key,
}
# Those that read or write personal data: they need the master key (docs/privacy.md).
NEEDS_MASTER_KEY = frozenset(COMMANDS) - {"migrate", "reporting-user"} | {"serve"}
