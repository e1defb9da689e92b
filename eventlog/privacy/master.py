"""The process's master keys: from PII_MASTER_KEY (or its _FILE), or, with the embedded
database and no setting, generated once into DATA_DIR. Installed once at start by `serve`, the
commands and the rebuild workers; every reader and writer of the log takes them from here."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Final, Protocol

import structlog

from eventlog.errors import ConfigError
from eventlog.privacy.crypto import MasterKey
from eventlog.privacy.keys import Masters


class KeySettings(Protocol):
    """What the master keys are found from (the service's Settings has these)."""

    @property
    def pii_master_key(self) -> str | None: ...
    @property
    def pii_previous_master_keys(self) -> str | None: ...
    @property
    def database_url(self) -> str | None: ...
    @property
    def data_dir(self) -> str: ...


KEY_FILE: Final = "pii-master-key"
# A rebuild worker process gets the keys here (current first), never on its command line.
WORKER_VARIABLE: Final = (
    "FLAGSTORE_REBUILD_MASTER_KEYS"  # in DATA_DIR, beside (not inside) the database's files
)

log = structlog.get_logger("privacy")
_installed: Masters | None = None


def install(masters: Masters) -> None:
    global _installed  # noqa: PLW0603 - set once at start, read everywhere
    _installed = masters


def masters() -> Masters:
    if _installed is None:
        raise RuntimeError("no PII master key installed (eventlog.privacy.master.install)")
    return _installed


def for_worker() -> dict[str, str]:
    """The environment that hands the installed keys to a worker process."""
    installed = masters()
    others = [k for k in installed.by_id.values() if k is not installed.current]
    return {WORKER_VARIABLE: ",".join(k.text() for k in [installed.current, *others])}


def install_from_worker_environment(environ: dict[str, str] | os._Environ[str]) -> None:
    current, *previous = (MasterKey.parse(t) for t in environ[WORKER_VARIABLE].split(","))
    install(Masters(current, previous))


def from_settings(settings: KeySettings) -> Masters:
    """Exit-worthy ConfigError for a bad key, or none with an outside database."""
    previous = [
        _parse(text, "PII_PREVIOUS_MASTER_KEYS")
        for text in (settings.pii_previous_master_keys or "").replace("\n", ",").split(",")
        if text.strip()
    ]
    if settings.pii_master_key:
        return Masters(_parse(settings.pii_master_key, "PII_MASTER_KEY"), previous)
    if settings.database_url:
        raise ConfigError(
            "PII_MASTER_KEY (or PII_MASTER_KEY_FILE) is required with DATABASE_URL: the key "
            "that protects personal data in the event log; make one with "
            "`openssl rand -base64 32` and keep it as a secret (docs/privacy.md)"
        )
    return Masters(embedded_key(Path(settings.data_dir).resolve()), previous)


def _parse(text: str, name: str) -> MasterKey:
    try:
        return MasterKey.parse(text)
    except ValueError as exc:
        raise ConfigError(f"Invalid setting: {name}: {exc}") from None


def embedded_key(data_dir: Path) -> MasterKey:
    """DATA_DIR/pii-master-key: read, or made once (mode 0600) with a warning to keep it."""
    path = data_dir / KEY_FILE
    try:
        return _parse(path.read_text(), str(path))
    except FileNotFoundError:
        pass
    data_dir.mkdir(parents=True, exist_ok=True)
    text = MasterKey.generate()
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:  # another process made it first
        return _parse(path.read_text(), str(path))
    with os.fdopen(fd, "w") as file:
        file.write(text + "\n")
    log.warning(
        "pii_master_key_generated",
        path=str(path),
        advice="personal data in the event log is sealed with keys this key wraps: back it "
        "up apart from the database, or set PII_MASTER_KEY (docs/privacy.md)",
    )
    return _parse(text, str(path))
