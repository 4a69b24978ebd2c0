# Sourced by the reliability scripts (tools/crash-trials, tools/stress, tools/reliability/*.sh).
# DOTSAFE_BIN names the dotsafe binary (default: the release build in DOTSAFE_BUILD_PATH or
# .build); every script works in a fresh folder under $TMPDIR named dotsafe-test-…, removes it,
# and leaves no mount behind, also when it fails.
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
DOTSAFE_BIN=${DOTSAFE_BIN:-${DOTSAFE_BUILD_PATH:-$repo/.build}/release/dotsafe}
[[ -x $DOTSAFE_BIN ]] || { echo "no dotsafe binary at $DOTSAFE_BIN (build it, or set DOTSAFE_BIN)" >&2; exit 2; }
export DOTSAFE_ALLOW_WEAK_KDF=1 DOTSAFE_KDF_ROUNDS=1000
pattern=${PATTERN:-b2-c2-d3-d4-c4-b4-a5}
file_size=262192

work=$(mktemp -d "${TMPDIR:-/tmp}/dotsafe-test-rel.XXXXXX")
chmod 755 "$work"
export DOTSAFE_KEYRING=$work/keyring
storage=$work/storage
mounts=()
extra_cleanup=()

fail() { echo "FAIL: $*" >&2; exit 1; }
note() { echo "$(basename "$0"): $*"; }

cleanup() {
    local status=$?
    for point in "${mounts[@]}"; do
        if grep -qF " $point fuse" /proc/mounts; then
            "$DOTSAFE_BIN" lock "$point" >/dev/null 2>&1 || true
            grep -qF " $point fuse" /proc/mounts && fusermount3 -u -z "$point" 2>/dev/null || true
        fi
    done
    for command in "${extra_cleanup[@]}"; do eval "$command" || true; done
    # DOTSAFE_KEEP_FAILED=DIR keeps a failed run's storage and keyring there, for dotsafe fsck.
    if [[ $status != 0 && -n ${DOTSAFE_KEEP_FAILED:-} ]]; then
        mkdir -p "$DOTSAFE_KEEP_FAILED" && cp -a "$storage" "$work/keyring" "$DOTSAFE_KEEP_FAILED/" 2>/dev/null || true
    fi
    rm -rf --one-file-system "$work" 2>/dev/null || true
    exit $status
}
trap cleanup EXIT

ds() { "$DOTSAFE_BIN" "$@"; }
init_storage() { ds init "${1:-$storage}" >/dev/null; }
# mount_vault POINT [STORAGE]: the pattern on standard input.
mount_vault() {
    mkdir -p "$1"
    mounts+=("$1")
    printf '%s\n' "$pattern" | ds mount "${2:-$storage}" "$1" --pattern-stdin >/dev/null
}
lock_vault() { ds lock "$1" >/dev/null; }
is_mounted() { grep -qF " $1 fuse" /proc/mounts; }
# The daemon serving mount point $1: a process named dotsafe whose arguments are "mount … $1 …".
daemon_pid() {
    local pid
    for pid in $(pgrep -x dotsafe || true); do
        { tr '\0' '\n' < "/proc/$pid/cmdline" | grep -qxF -- "$1" &&
            tr '\0' '\n' < "/proc/$pid/cmdline" | grep -qx mount && { echo "$pid"; return 0; }; } 2>/dev/null
    done
    return 0
}

# Every DotSafe file of the storage is a regular file of F bytes named by 26 base32 characters,
# and their count is a multiple of 16 (unless ANY_COUNT=1: right after a crash, a group being
# made may be incomplete until the vault's next open). Names matching IGNORE (a bash regular
# expression) are skipped.
check_storage() {
    local folder=${1:-$storage} ignore=${2:-^$}
    find "$folder" -mindepth 1 -maxdepth 1 -printf '%f %y %s\n' | awk -v ignore="$ignore" -v size="$file_size" -v any="${ANY_COUNT:-0}" '
        $1 ~ ignore { next }
        $2 != "f" { print "storage entry " $1 " is not a regular file"; bad = 1; exit }
        $1 !~ /^[a-z2-7]+$/ || length($1) != 26 { print "storage file name " $1 " is not 26 base32 characters"; bad = 1; exit }
        $3 != size { print "storage file " $1 " has " $3 " bytes, not " size; bad = 1; exit }
        { count++ }
        END { if (!bad && !any && count % 16 != 0) { print "the storage holds " count " files, not a multiple of 16"; bad = 1 }
              exit bad }' > "$work/check_storage.out" || fail "$(cat "$work/check_storage.out")"
}

# Whether process $1 has ended (a zombie that nobody reaped yet counts as ended).
has_ended() { [[ ! -e /proc/$1/stat ]] || [[ $(awk '{ print $3 }' "/proc/$1/stat" 2>/dev/null) == Z ]]; }

# fsync(2) of folder $1 (a commit of the whole vault); 'sync -f' is not enough: FUSE passes
# syncfs to no file system operation.
fsync_path() { python3 -c 'import os, sys; fd = os.open(sys.argv[1], os.O_RDONLY); os.fsync(fd)' "$1"; }
