#!/usr/bin/env bash
# Makes a local base image for the Dockerfile where no image registry can be reached: a minimal Debian bookworm
# (debootstrap from a Debian mirror) with tini, CA certificates, Node.js 24 and npm copied in, imported into podman.
# Build with it:
#
#   scripts/make-base-image.sh
#   podman build --build-arg BASE_IMAGE=localhost/tstriton-base:bookworm \
#                --build-arg BUILD_IMAGE=localhost/tstriton-base:bookworm -t tstriton .
#
# Does nothing when the image exists already with the same node (FORCE=1 makes it again). Runs as root (debootstrap
# chroots).
# Settings (environment): BASE_IMAGE_NAME (default localhost/tstriton-base:bookworm), DEBIAN_MIRROR (default
# http://deb.debian.org/debian), NODE_BIN (default: the Node 24 that `npm ci` put in node_modules/.bin, else the
# node on the PATH), CONTAINERS_CONF (default: the repository's deploy/podman/containers.conf).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
IMAGE=${BASE_IMAGE_NAME:-localhost/tstriton-base:bookworm}
MIRROR=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
export CONTAINERS_CONF=${CONTAINERS_CONF:-$ROOT/deploy/podman/containers.conf}

die() { echo "make-base-image: $*" >&2; exit 1; }

command -v podman >/dev/null || die "podman is not installed (scripts/install-deploy-tools.sh installs it)"

# The repository's own node (the `node` dev dependency, a hard link to the binary) first: the system's may be older.
if [ -z "${NODE_BIN:-}" ] && [ -x "$ROOT/node_modules/.bin/node" ]; then NODE_BIN=$ROOT/node_modules/.bin/node; fi
NODE_BIN=$(readlink -f "${NODE_BIN:-$(command -v node || true)}")
[ -x "$NODE_BIN" ] || die "no node on the PATH and none in node_modules/.bin (npm ci installs it)"
node_version=$("$NODE_BIN" --version)

# An image made earlier is kept only while it holds this node (its import message names the version).
if [ "${FORCE:-0}" != 1 ] && podman image exists "$IMAGE"; then
  made_with=$(podman image inspect --format '{{.Comment}}' "$IMAGE")
  if [[ "$made_with" == *"node $node_version" ]]; then
    echo "make-base-image: $IMAGE exists already"
    exit 0
  fi
  echo "make-base-image: $IMAGE was made as \"$made_with\"; making it again with node $node_version"
fi
[ "$(id -u)" = 0 ] || die "needs root (debootstrap)"
command -v debootstrap >/dev/null || die "debootstrap is not installed (scripts/install-deploy-tools.sh installs it)"

[ "${node_version%%.*}" = v24 ] || echo "make-base-image: warning: node is $node_version, not 24" >&2
[ "$(uname -m)" = x86_64 ] || echo "make-base-image: warning: $(uname -m); the image gets this machine's node" >&2
# npm lives beside node in <prefix>/lib/node_modules/npm (Debian's nodejs package, the official tarballs,
# nodesource); `npm root -g` says where when it lives elsewhere.
NPM_DIR=$(dirname "$(dirname "$NODE_BIN")")/lib/node_modules/npm
if [ ! -f "$NPM_DIR/bin/npm-cli.js" ] && command -v npm >/dev/null; then NPM_DIR=$(npm root -g)/npm; fi
[ -f "$NPM_DIR/bin/npm-cli.js" ] || die "npm not found beside $NODE_BIN"

WORK=$(mktemp -d /var/tmp/tstriton-base.XXXXXX)
cleanup() {
  # debootstrap can leave /proc or /sys mounted in the chroot when it fails; never delete through a mount.
  for m in proc sys dev/pts dev; do mountpoint -q "$WORK/rootfs/$m" 2>/dev/null && umount -l "$WORK/rootfs/$m"; done
  rm -rf --one-file-system "$WORK"
}
trap cleanup EXIT
rootfs=$WORK/rootfs

echo "make-base-image: debootstrap bookworm from $MIRROR (a few minutes)"
if ! debootstrap --variant=minbase --include=tini,ca-certificates bookworm "$rootfs" "$MIRROR" >"$WORK/debootstrap.log" 2>&1; then
  tail -30 "$WORK/debootstrap.log" >&2
  [ -f "$rootfs/debootstrap/debootstrap.log" ] && tail -30 "$rootfs/debootstrap/debootstrap.log" >&2
  die "debootstrap failed"
fi

echo "make-base-image: node $node_version from $NODE_BIN, npm from $NPM_DIR"
install -m 0755 "$NODE_BIN" "$rootfs/usr/local/bin/node"
mkdir -p "$rootfs/usr/local/lib/node_modules"
cp -a "$NPM_DIR" "$rootfs/usr/local/lib/node_modules/npm"
ln -sf ../lib/node_modules/npm/bin/npm-cli.js "$rootfs/usr/local/bin/npm"
ln -sf ../lib/node_modules/npm/bin/npx-cli.js "$rootfs/usr/local/bin/npx"
chroot "$rootfs" /usr/local/bin/node --version >/dev/null || die "the copied node does not run in the Debian root"

# Slim it: package lists, caches, docs and locales are not needed at run time.
rm -rf "$rootfs"/var/lib/apt/lists/* "$rootfs"/var/cache/apt/* "$rootfs"/var/cache/debconf/*-old \
  "$rootfs"/usr/share/doc/* "$rootfs"/usr/share/man/* "$rootfs"/usr/share/info/* "$rootfs"/usr/share/locale/* \
  "$rootfs"/var/log/* "$rootfs"/tmp/* "$rootfs"/debootstrap
: >"$rootfs/etc/resolv.conf"

echo "make-base-image: importing as $IMAGE"
tar --numeric-owner -C "$rootfs" -c . | podman import --quiet \
  --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
  --change 'CMD ["node"]' \
  --message "Debian bookworm (minbase) with tini, ca-certificates and node $node_version" \
  - "$IMAGE" >/dev/null
podman image exists "$IMAGE" || die "podman import did not make $IMAGE"
echo "make-base-image: made $IMAGE ($(podman image inspect --format '{{.Size}}' "$IMAGE") bytes)"
