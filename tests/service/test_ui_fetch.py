"""tools/ui_fetch.py on tarballs made here (npm is not called): the pinned integrity is
checked before anything is kept; only the build and the license are kept, with gzip siblings
and a manifest that `--check` verifies; a second fetch downloads nothing."""

from __future__ import annotations

import gzip
import io
import json
import re
import shutil
import tarfile
from typing import TYPE_CHECKING

import pytest

from tools import ui_fetch

if TYPE_CHECKING:
    from pathlib import Path

BUNDLE = b"console.log('the UI');\n" * 200
FILES = {
    "package/package.json": b'{"name": "unleash-server"}',
    "package/LICENSE": b"Apache License 2.0",
    "package/README.md": b"# Unleash",
    "package/dist/server.js": b"require('express')",
    "package/frontend/build/index.html": b"<html>::baseUriPath::</html>",
    "package/frontend/build/static/index-abc.js": BUNDLE,
    "package/frontend/build/favicon.ico": b"\x00\x00\x01\x00",
}


def tarball(files: dict[str, bytes]) -> bytes:
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w:gz") as archive:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
    return out.getvalue()


class Packer:
    """npm pack's stand-in: writes the tarball, counts its calls."""

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.calls = 0

    def __call__(self, destination: Path) -> Path:
        self.calls += 1
        path = destination / "unleash-server-6.10.1.tgz"
        path.write_bytes(self.data)
        return path


@pytest.fixture
def pinned(monkeypatch: pytest.MonkeyPatch) -> Packer:
    """A packer whose tarball is the pinned one (the pin is set to its integrity)."""
    packer = Packer(tarball(FILES))
    monkeypatch.setattr(ui_fetch, "INTEGRITY", ui_fetch.integrity_of(packer.data))
    return packer


def test_only_the_build_and_the_license_are_kept(tmp_path: Path, pinned: Packer) -> None:
    folder = tmp_path / "ui"
    assert ui_fetch.fetch(folder, pinned) is True
    kept = sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file())
    assert kept == [
        "LICENSE",
        "MANIFEST.json",
        "build/favicon.ico",
        "build/index.html",
        "build/static/index-abc.js",
        "build/static/index-abc.js.gz",  # a text file worth compressing; the tiny page is not
    ]
    assert (folder / "build/index.html").read_bytes() == b"<html>::baseUriPath::</html>"
    assert gzip.decompress((folder / "build/static/index-abc.js.gz").read_bytes()) == BUNDLE
    manifest = json.loads((folder / "MANIFEST.json").read_text())
    assert (manifest["package"], manifest["version"]) == ("unleash-server", "6.10.1")
    assert manifest["integrity"] == ui_fetch.INTEGRITY
    assert sorted(manifest["files"]) == [name for name in kept if name != "MANIFEST.json"]
    assert ui_fetch.problems(folder) == []
    assert not [p for p in tmp_path.iterdir() if p.name != "ui"]  # no scratch left behind


def test_a_second_fetch_downloads_nothing(tmp_path: Path, pinned: Packer) -> None:
    folder = tmp_path / "ui"
    ui_fetch.fetch(folder, pinned)
    assert ui_fetch.fetch(folder, pinned) is False
    assert pinned.calls == 1


def test_a_tampered_folder_is_found_and_fetched_again(tmp_path: Path, pinned: Packer) -> None:
    folder = tmp_path / "ui"
    ui_fetch.fetch(folder, pinned)
    (folder / "build/static/index-abc.js").write_bytes(b"alert('changed')")
    (folder / "build/extra.js").write_bytes(b"alert('added')")
    assert ui_fetch.problems(folder) == [
        "build/static/index-abc.js differs from the manifest",
        "build/extra.js is not in the manifest",
    ]
    assert ui_fetch.main(["--check", "--folder", str(folder)]) == 1
    assert ui_fetch.fetch(folder, pinned) is True
    assert ui_fetch.problems(folder) == []
    assert ui_fetch.main(["--check", "--folder", str(folder)]) == 0


def test_a_tarball_that_is_not_the_pinned_one_keeps_nothing(tmp_path: Path) -> None:
    folder = tmp_path / "ui"
    other = Packer(tarball({**FILES, "package/frontend/build/static/evil.js": b"alert(1)"}))
    refused = re.escape("is not the pinned unleash-server@6.10.1")
    with pytest.raises(ui_fetch.FetchError, match=refused):
        ui_fetch.fetch(folder, other)
    assert list(tmp_path.iterdir()) == []


def test_the_real_pin_is_npms_integrity_of_6_10_1() -> None:
    assert ui_fetch.INTEGRITY == (
        "sha512-WSH2tmHWHJcYMgvoF1hPu2Ou6VIdJvxjJMLXGfzx+BjTAYKYTxlK8FHdeQiumDeqFR3VG4Dx8ADny1soFsmPGg=="
    )
    assert ui_fetch.integrity_of(b"") == (
        "sha512-z4PhNX7vuL3xVChQ1m2AB9Yg5AULVxXcg/SpIdNs6c5H0NE8XYXysP+DGNKHfuwvY7kxvUdBeoGlODJ6+SfaPg=="
    )


@pytest.mark.parametrize("name", ["package/frontend/build/../../../etc/x", "/etc/passwd"])
def test_an_unsafe_path_in_the_tarball_stops_the_fetch(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str
) -> None:
    packer = Packer(tarball({**FILES, name: b"x"}))
    monkeypatch.setattr(ui_fetch, "INTEGRITY", ui_fetch.integrity_of(packer.data))
    with pytest.raises(ui_fetch.FetchError, match="unsafe path"):
        ui_fetch.fetch(tmp_path / "ui", packer)
    assert not (tmp_path / "ui").exists()


def test_a_tarball_without_the_build_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    packer = Packer(tarball({"package/LICENSE": b"Apache"}))
    monkeypatch.setattr(ui_fetch, "INTEGRITY", ui_fetch.integrity_of(packer.data))
    with pytest.raises(ui_fetch.FetchError, match=re.escape("no frontend/build/index.html")):
        ui_fetch.fetch(tmp_path / "ui", packer)


def test_without_npm_the_install_goes_on_without_the_ui(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(shutil, "which", lambda _name: None)
    assert ui_fetch.main(["--folder", str(tmp_path / "ui")]) == 0
    assert "warning: npm is needed to fetch the web UI" in capsys.readouterr().err
    assert not (tmp_path / "ui").exists()


def test_a_failed_download_fails_the_install(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def offline(_destination: Path) -> Path:
        msg = "npm pack unleash-server@6.10.1 failed (1): network unreachable"
        raise ui_fetch.FetchError(msg)

    monkeypatch.setattr(ui_fetch, "npm_pack", offline)
    assert ui_fetch.main(["--folder", str(tmp_path / "ui")]) == 1
    assert "network unreachable" in capsys.readouterr().err
