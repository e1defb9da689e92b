#!/usr/bin/env bash
# Container images with podman (called by make; deploy/README.md):
#   deploy/image.sh base IMAGE              a Debian bookworm base with Python 3.11, built with
#                                           debootstrap from the Debian archive apt uses
#   deploy/image.sh build IMAGE BASE_IMAGE  the service image (deploy/Containerfile)
# The base is built only when missing (FORCE_BASE=1 rebuilds it). podman's settings for this
# machine (runc, ulimits) are in deploy/containers.conf, selected with CONTAINERS_CONF.
set -euo pipefail
cd "$(dirname "$0")/.."
export CONTAINERS_CONF="${CONTAINERS_CONF:-$PWD/deploy/containers.conf}"
PYTHON="${PYTHON:-.venv/bin/python}"

need() {
    for tool in "$@"; do
        command -v "$tool" >/dev/null || {
            echo "deploy/image.sh: $tool is missing (apt-get install podman runc debootstrap)" >&2
            exit 1
        }
    done
}

# The first Debian archive in apt's sources (deb822 or one-line format), or DEBIAN_MIRROR.
debian_mirror() {
    if [ -n "${DEBIAN_MIRROR:-}" ]; then echo "$DEBIAN_MIRROR"; return; fi
    local uri
    uri="$(cat /etc/apt/sources.list.d/*.sources 2>/dev/null | sed -n 's/^URIs: *\([^ ]*\).*/\1/p' \
        | grep -v security | head -n1 || true)"
    [ -n "$uri" ] || uri="$(sed -n 's/^deb \(\[[^]]*\] \)\?\([^ ]*\) .*/\2/p' /etc/apt/sources.list \
        2>/dev/null | grep -v security | head -n1 || true)"
    echo "${uri:-http://deb.debian.org/debian}"
}

# The security archive in apt's sources, or DEBIAN_SECURITY_MIRROR.
debian_security_mirror() {
    if [ -n "${DEBIAN_SECURITY_MIRROR:-}" ]; then echo "$DEBIAN_SECURITY_MIRROR"; return; fi
    local uri
    uri="$(cat /etc/apt/sources.list.d/*.sources 2>/dev/null | sed -n 's/^URIs: *\([^ ]*\).*/\1/p' \
        | grep security | head -n1 || true)"
    echo "${uri:-http://deb.debian.org/debian-security}"
}

base() {
    local image="$1"
    if [ -z "${FORCE_BASE:-}" ] && podman image exists "$image"; then
        echo "base image $image exists (FORCE_BASE=1 rebuilds it)"
        return
    fi
    need podman debootstrap
    local mirror
    root="$(mktemp -d /tmp/flagstore-base.XXXXXX)"
    trap 'rm -rf "$root"' EXIT
    mirror="$(debian_mirror)"
    echo "debootstrap bookworm from $mirror into $root"
    debootstrap --variant=minbase --include=python3,ca-certificates bookworm "$root" "$mirror" \
        >"$root.log" 2>&1 || { tail -n 30 "$root.log" >&2; rm -f "$root.log"; exit 1; }
    rm -f "$root.log"
    # debootstrap takes the release as it was; the image gets bookworm-updates and
    # bookworm-security too, as a registry's bookworm image would.
    printf 'deb %s bookworm main\ndeb %s bookworm-updates main\ndeb %s bookworm-security main\n' \
        "$mirror" "$mirror" "$(debian_security_mirror)" >"$root/etc/apt/sources.list"
    cp /etc/resolv.conf "$root/etc/resolv.conf"
    chroot "$root" apt-get update -qq
    chroot "$root" env DEBIAN_FRONTEND=noninteractive apt-get upgrade -y -qq >/dev/null
    chroot "$root" apt-get clean
    : >"$root/etc/resolv.conf"
    # No set-user-id programs (su, mount, passwd...): the service never changes user, and a
    # container started without no-new-privileges would otherwise offer them to an attacker.
    find "$root" -xdev -type f -perm /6000 -exec chmod ug-s {} +
    # What a runtime never reads: package lists and caches, documentation, locales, man pages.
    rm -rf "$root"/var/lib/apt/lists/* "$root"/var/cache/apt/* "$root"/var/cache/debconf/*-old \
        "$root"/usr/share/doc/* "$root"/usr/share/man/* "$root"/usr/share/info/* \
        "$root"/usr/share/locale/* "$root"/var/log/*
    tar --numeric-owner -C "$root" -c . | podman import \
        --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
        --change 'CMD ["python3"]' --message "debootstrap --variant=minbase bookworm" - "$image"
    echo "built base image $image"
}

build() {
    local image="$1" base_image="$2"
    need podman
    if [[ "$base_image" == localhost/* ]] && ! podman image exists "$base_image"; then
        base "$base_image"
    fi
    # The wheels are built by the host's Python for its platform: it must be the image's 3.11.
    "$PYTHON" -c 'import sys; sys.exit(sys.version_info[:2] != (3, 11))' || {
        echo "deploy/image.sh: $PYTHON is not Python 3.11, the image's: its wheels would not fit" >&2
        exit 1
    }
    local previous
    previous="$(podman image inspect --format '{{.Id}}' "$image" 2>/dev/null || true)"
    # The build context: the wheels of the service and its dependencies, and the web UI.
    local context=build/image-context
    rm -rf "$context"
    mkdir -p "$context/wheels"
    "$PYTHON" -m pip wheel --quiet --disable-pip-version-check --wheel-dir "$context/wheels" . pip
    # Unleash's web UI as `make install` fetched it (tools/ui_fetch.py), checked against its
    # manifest here and again, file by file, inside the build (SHA256SUMS).
    local ui=.ui/unleash-server-6.10.1
    "$PYTHON" -m tools.ui_fetch --check --folder "$ui" || {
        echo "deploy/image.sh: the web UI in $ui is missing or changed: run make install" >&2
        exit 1
    }
    cp -r "$ui" "$context/ui"
    "$PYTHON" -c 'import json, sys; files = json.load(open(sys.argv[1]))["files"]; print("".join(f"{h}  {n}\n" for n, h in files.items()), end="")' \
        "$context/ui/MANIFEST.json" >"$context/ui/SHA256SUMS"
    podman build --layers=false --format docker --file deploy/Containerfile --build-arg "BASE_IMAGE=$base_image" \
        --tag "$image" "$context"
    # The image this build replaced would stay behind untagged (make image-test and
    # deploy-test each build): remove it unless a container still uses it.
    if [ -n "$previous" ] && [ "$previous" != "$(podman image inspect --format '{{.Id}}' "$image")" ]; then
        podman image rm "$previous" >/dev/null 2>&1 || true
    fi
    podman image inspect --format '{{.Size}}' "$image" \
        | awk -v image="$image" '{printf "built %s: %.0f MB\n", image, $1 / 1e6}'
}

case "${1:-}" in
    base) base "${2:?image name}" ;;
    build) build "${2:?image name}" "${3:?base image}" ;;
    *) echo "usage: deploy/image.sh base IMAGE | build IMAGE BASE_IMAGE" >&2; exit 2 ;;
esac
