"""Unleash's own web UI, fetched once: `make install` runs `python -m tools.ui_fetch`.

npm's `unleash-server@6.10.1` (Apache-2.0) ships the UI already built, in `frontend/build`.
`npm pack` brings the package's tarball (nothing is installed, no script of it runs), whose
sha512 must be the pinned integrity below (npm's own `integrity` of that version); anything
else stops with exit 1 and keeps nothing. Of the tarball only `frontend/build/**` and the
package's license and notice files are kept, in `.ui/unleash-server-6.10.1/` (outside git),
with a gzip sibling (`x.js.gz`) of each text file, which service/ui.py sends to browsers that
take gzip, and `MANIFEST.json`: the sha256 of every file kept, so that a copy (the container
image's, deploy/image.sh) can be checked with `--check`.

Without npm it warns and leaves the UI out (the service starts without it and says so); a
failed download or a tarball that is not the pinned one fails the install.

Idempotent: a folder whose manifest names this version and pin, and whose files all match it,
is left alone and nothing is downloaded.
"""

from __future__ import annotations

import argparse
import base64
import gzip
import hashlib
import json
import shutil
import subprocess
import sys
import tarfile
import tempfile
from collections.abc import Callable
from pathlib import Path, PurePosixPath
from typing import Final

from service.ui import DEFAULT_DIR, UI_PACKAGE, UI_VERSION

# npm's integrity of unleash-server@6.10.1 (`npm view unleash-server@6.10.1 dist.integrity`).
INTEGRITY: Final = (
    "sha512-WSH2tmHWHJcYMgvoF1hPu2Ou6VIdJvxjJMLXGfzx+BjTAYKYTxlK8FHdeQiumDeqFR3VG4Dx8ADny1soFsmPGg"
    "=="
)
BUILD_PREFIX: Final = "package/frontend/build/"
# The package's legal files (6.10.1 has LICENSE only; a NOTICE would be kept too).
LEGAL_FILES: Final = ("LICENSE", "LICENSE.md", "NOTICE", "NOTICE.md", "NOTICE.txt")
MANIFEST: Final = "MANIFEST.json"
# Text files are worth a gzip sibling; images and fonts are compressed already.
GZIPPED_SUFFIXES: Final = frozenset({".js", ".css", ".html", ".svg", ".json", ".map", ".txt"})
MIN_SAVING: Final = 0.9  # a sibling is kept only when at most 90% of the file's size

Pack = Callable[[Path], Path]


class FetchError(Exception):
    """The UI could not be fetched or is not what the pin says."""


class NoNpm(FetchError):
    """npm is not installed: the service runs without its web UI (and says so at start)."""


def integrity_of(data: bytes) -> str:
    """npm's Subresource-Integrity form of a tarball: `sha512-<base64 of the digest>`."""
    return "sha512-" + base64.b64encode(hashlib.sha512(data).digest()).decode()


def npm_pack(destination: Path) -> Path:
    """The package's tarball, by npm (its cache and registry settings), into `destination`."""
    npm = shutil.which("npm")
    if npm is None:
        msg = "npm is needed to fetch the web UI (apt-get install npm); serving without it"
        raise NoNpm(msg)
    spec = f"{UI_PACKAGE}@{UI_VERSION}"
    done = subprocess.run(  # noqa: PLW1510 - the return code is checked below
        [npm, "pack", spec, "--pack-destination", str(destination), "--silent"],
        capture_output=True,
        text=True,
    )
    if done.returncode != 0:
        msg = f"npm pack {spec} failed ({done.returncode}): {done.stderr.strip()[-2000:]}"
        raise FetchError(msg)
    tarball = destination / f"{UI_PACKAGE}-{UI_VERSION}.tgz"
    if not tarball.is_file():
        msg = f"npm pack {spec} made no {tarball.name}"
        raise FetchError(msg)
    return tarball


def _kept_name(member: tarfile.TarInfo) -> str | None:
    """Where a tarball entry goes in the folder (`build/...`, `LICENSE`), or None to drop it."""
    if not member.isfile():
        return None
    name = PurePosixPath(member.name)
    if name.is_absolute() or ".." in name.parts:
        msg = f"the tarball holds an unsafe path: {member.name!r}"
        raise FetchError(msg)
    if member.name.startswith(BUILD_PREFIX):
        return "build/" + member.name.removeprefix(BUILD_PREFIX)
    if name.parent == PurePosixPath("package") and name.name in LEGAL_FILES:
        return name.name
    return None


def unpack(tarball: Path, folder: Path) -> None:
    """The kept files of a verified tarball into `folder` (new), their gzip siblings and the
    manifest."""
    files: dict[str, str] = {}
    with tarfile.open(tarball, "r:gz") as archive:
        for member in archive:
            kept = _kept_name(member)
            if kept is None:
                continue
            source = archive.extractfile(member)
            assert source is not None  # a regular file
            data = source.read()
            files[kept] = _write(folder / kept, data)
            if PurePosixPath(kept).suffix in GZIPPED_SUFFIXES:
                packed = gzip.compress(data, compresslevel=9, mtime=0)
                if len(packed) <= len(data) * MIN_SAVING:
                    files[kept + ".gz"] = _write(folder / (kept + ".gz"), packed)
    if "build/index.html" not in files:
        msg = f"{tarball.name} has no frontend/build/index.html"
        raise FetchError(msg)
    if not any(name in files for name in LEGAL_FILES):
        msg = f"{tarball.name} has no license file"
        raise FetchError(msg)
    manifest = {
        "package": UI_PACKAGE,
        "version": UI_VERSION,
        "integrity": INTEGRITY,
        "files": dict(sorted(files.items())),
    }
    (folder / MANIFEST).write_text(json.dumps(manifest, indent=1) + "\n")


def _write(path: Path, data: bytes) -> str:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return hashlib.sha256(data).hexdigest()


def problems(folder: Path) -> list[str]:
    """What keeps `folder` from being the complete, pinned UI (empty: it is)."""
    try:
        manifest = json.loads((folder / MANIFEST).read_text())
    except (OSError, ValueError) as exc:
        return [f"{folder / MANIFEST}: {exc}"]
    found: list[str] = []
    if (manifest.get("package"), manifest.get("version"), manifest.get("integrity")) != (
        UI_PACKAGE,
        UI_VERSION,
        INTEGRITY,
    ):
        found.append(
            f"{folder / MANIFEST} is not the one of {UI_PACKAGE}@{UI_VERSION} ({INTEGRITY})"
        )
    listed: dict[str, str] = manifest.get("files", {})
    for name, digest in listed.items():
        path = folder / name
        if not path.is_file():
            found.append(f"{name} is missing")
        elif hashlib.sha256(path.read_bytes()).hexdigest() != digest:
            found.append(f"{name} differs from the manifest")
    present = {p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file()}
    found += [
        f"{name} is not in the manifest" for name in sorted(present - set(listed) - {MANIFEST})
    ]
    return found


def fetch(folder: Path = DEFAULT_DIR, pack: Pack = npm_pack) -> bool:
    """Makes `folder` the pinned UI; False when it already was (nothing downloaded)."""
    if folder.is_dir() and not problems(folder):
        return False
    folder.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=folder.parent, prefix=".fetch-") as scratch:
        tarball = pack(Path(scratch))
        found = integrity_of(tarball.read_bytes())
        if found != INTEGRITY:
            msg = (
                f"{tarball.name} is not the pinned {UI_PACKAGE}@{UI_VERSION}: its integrity is "
                f"{found}, the pin is {INTEGRITY}. Nothing was kept."
            )
            raise FetchError(msg)
        fresh = Path(scratch) / "ui"
        unpack(tarball, fresh)
        if folder.exists():
            shutil.rmtree(folder)
        fresh.rename(folder)  # in one step: a folder is whole or absent
    return True


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--folder", type=Path, default=DEFAULT_DIR, help="where the UI goes")
    parser.add_argument(
        "--check", action="store_true", help="only check the folder against its manifest"
    )
    args = parser.parse_args(argv)
    folder: Path = args.folder
    if args.check:
        found = problems(folder)
        for problem in found:
            print(f"ui_fetch: {problem}", file=sys.stderr)
        return 1 if found else 0
    try:
        fetched = fetch(folder, npm_pack)
    except NoNpm as exc:  # not this project's to install: the service runs without the UI
        print(f"ui_fetch: warning: {exc}", file=sys.stderr)
        return 0
    except FetchError as exc:
        print(f"ui_fetch: {exc}", file=sys.stderr)
        return 1
    what = "fetched" if fetched else "already in place:"
    print(f"ui_fetch: {UI_PACKAGE}@{UI_VERSION} {what} {folder}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
