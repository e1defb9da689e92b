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
    # The build context: the wheels of the service and its dependencies, nothing else.
    local context=build/image-context
    rm -rf "$context"
    mkdir -p "$context/wheels"
    "$PYTHON" -m pip wheel --quiet --disable-pip-version-check --wheel-dir "$context/wheels" . pip
    podman build --format docker --file deploy/Containerfile --build-arg "BASE_IMAGE=$base_image" \
        --tag "$image" "$context"
    podman image inspect --format '{{.Size}}' "$image" \
        | awk -v image="$image" '{printf "built %s: %.0f MB\n", image, $1 / 1e6}'
}

case "${1:-}" in
    base) base "${2:?image name}" ;;
    build) build "${2:?image name}" "${3:?base image}" ;;
    *) echo "usage: deploy/image.sh base IMAGE | build IMAGE BASE_IMAGE" >&2; exit 2 ;;
esac
