#!/usr/bin/env bash
# An unprivileged user and memory hygiene on a live mount (R-MEM-2, R-SEC-5). As root, makes
# the user dotsafe-test if missing, and as that user — in a folder the user owns, with an
# 8 MiB memory-lock limit — runs init, mount, write, lock, mount again. On the live mount:
# - not dumpable: a process whose dumpable flag is 0 has its /proc/PID files owned by root
#   (proc_pid_make_inode / task_dump_owner); a dumpable process of dotsafe-test has them owned
#   by dotsafe-test. So /proc/PID/status owned by root:root while the process runs as
#   dotsafe-test is the proof; reading /proc/PID/environ as the same user fails too
#   (ptrace_may_access refuses a non-dumpable target);
# - key pages locked: VmLck in /proc/PID/status above 0 and within the 8 MiB limit;
# - key pages kept out of core dumps: some mapping has the "dd" (VM_DONTDUMP) flag in smaps;
# - the chunk cache (256 MiB by default) cannot be locked whole within 8 MiB: mount says how
#   much can, in one line on standard error ("dotsafe: note: ..."), and exits 0; after a
#   file is written and read, the no-dump ("dd") mappings hold at least the cache's first
#   region (1 MiB) and some of it is locked (smaps "Locked:"), all within the limit;
# - fsck is not dumpable either: its /proc/PID/status is owned by root while it waits for
#   the pattern on standard input (it makes itself non-dumpable before reading anything);
# - nothing logged: after "ready" the daemon's standard error is /dev/null;
# - after 'dotsafe lock' the process has exited.
# The keyring behaves as for root: created 0600, refused when 0644.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
user=dotsafe-test
((EUID == 0)) || { note "skipped: needs root to run as another user"; exit 0; }
id "$user" > /dev/null 2>&1 || useradd -m "$user"
# Debian makes /dev/fuse 0666; some containers make it 0600. Open it to users for the test.
fuse_mode=$(stat -c %a /dev/fuse)
if [[ $fuse_mode != 666 ]]; then
    chmod 0666 /dev/fuse
    extra_cleanup+=("chmod $fuse_mode /dev/fuse")
fi
home=$(mktemp -d /tmp/dotsafe-test-user.XXXXXX)
extra_cleanup+=("fusermount3 -u -z '$home/vault' 2>/dev/null; rm -rf --one-file-system '$home'")
cp "$DOTSAFE_BIN" "$home/dotsafe"
chown -R "$user:" "$home"
chmod 0755 "$home"
# as_user COMMAND…: runs in $home as the user, with the 8 MiB default memory-lock limit.
as_user() {
    (cd "$home" && runuser -u "$user" -- env -i PATH=/usr/bin:/bin HOME="$home" DOTSAFE_KEYRING="$home/keys/keyring" \
        DOTSAFE_ALLOW_WEAK_KDF=1 DOTSAFE_KDF_ROUNDS=1000 prlimit --memlock=8388608:8388608 "$@")
}
as_user ./dotsafe init storage > /dev/null || fail "init as $user failed"
[[ $(stat -c '%U %a' "$home/keys/keyring") == "$user 600" ]] || fail "keyring: $(stat -c '%U %a' "$home/keys/keyring")"
as_user mkdir vault
vault=$home/vault
mounts+=("$vault")
printf '%s\n' "$pattern" | as_user ./dotsafe mount storage vault --pattern-stdin > /dev/null 2> "$home/mount.err" \
    || fail "mount as $user failed: $(cat "$home/mount.err")"
is_mounted "$vault" || fail "not mounted"
mount_note=$(cat "$home/mount.err")
[[ $(wc -l < "$home/mount.err") == 1 && $mount_note == "dotsafe: note: "*" of the 256.0 MiB chunk cache can be locked in memory (RLIMIT_MEMLOCK 8.0 MiB); the rest may be swapped out" ]] \
    || fail "mount said: '$mount_note'"
grep -F " $vault " /proc/mounts | grep -q "user_id=$(id -u "$user")" || fail "the mount is not $user's"
pid=$(daemon_pid "$vault")
[[ -n $pid ]] || fail "no daemon"
[[ $(stat -c %U "/proc/$pid") == "$user" || $(ps -o user= -p "$pid") == "$user" ]] || fail "the daemon does not run as $user"
[[ $(ps -o user= -p "$pid" | tr -d ' ') == "$user" ]] || fail "the daemon runs as $(ps -o user= -p "$pid")"
[[ $(stat -c '%U:%G' "/proc/$pid/status") == root:root ]] || fail "the daemon is dumpable: /proc/$pid/status is $(stat -c '%U:%G' "/proc/$pid/status")"
as_user cat "/proc/$pid/environ" > /dev/null 2>&1 && fail "$user can read the daemon's environment"
locked=$(awk '/^VmLck:/ { print $2 }' "/proc/$pid/status")
((locked > 0 && locked <= 8192)) || fail "VmLck is $locked kB"
grep -q '^VmFlags:.* dd' "/proc/$pid/smaps" || fail "no mapping is excluded from core dumps"
[[ $(readlink "/proc/$pid/fd/2") == /dev/null ]] || fail "the daemon's stderr is $(readlink "/proc/$pid/fd/2")"
# The control: a dumpable process of the same user has its /proc files owned by the user.
as_user sleep 5 &
sleeper=$!
sleep 0.3
control=$(pgrep -u "$user" -x sleep | head -n1)
[[ -n $control && $(stat -c %U "/proc/$control/status") == "$user" ]] || fail "the /proc ownership check tells nothing here"
kill "$control" 2>/dev/null || true
wait "$sleeper" 2>/dev/null || true
note "daemon $pid: /proc owner root:root (not dumpable), VmLck $locked kB, a dd mapping, stderr /dev/null"

as_user bash -c 'cd vault && head -c 900000 /dev/urandom > large && echo hello > small && mkdir d && ln -s small d/link && sha256sum large small > ../content.sha256' \
    || fail "writing as $user failed"
[[ $(as_user stat -c %U vault/large) == "$user" ]] || fail "a new file is not owned by $user"
as_user bash -c 'cd vault && cat large > /dev/null' || fail "reading as $user failed"
# kB of the no-dump mappings, and of what is locked in them; then all that is locked.
read -r dd_size dd_locked < <(awk '/^[0-9a-f]+-[0-9a-f]+ / { size = 0; locked = 0 } /^Size:/ { size = $2 } /^Locked:/ { locked = $2 }
    /^VmFlags:/ && / dd( |$)/ { total += size; lockedTotal += locked } END { print total + 0, lockedTotal + 0 }' "/proc/$pid/smaps")
locked=$(awk '/^VmLck:/ { print $2 }' "/proc/$pid/status")
((dd_size >= 1024 && dd_locked > 1024 && locked <= 8192)) || fail "no-dump mappings $dd_size kB, $dd_locked kB of them locked, VmLck $locked kB"
note "cache: $mount_note; no-dump mappings $dd_size kB, $dd_locked kB locked, VmLck $locked kB"
as_user ./dotsafe lock vault > /dev/null || fail "lock as $user failed"
for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
kill -0 "$pid" 2>/dev/null && fail "the daemon still runs after lock"
is_mounted "$vault" && fail "still mounted after lock"

# fsck waits for the pattern on a pipe: it is already not dumpable then.
mkfifo "$home/pattern.fifo"
chown "$user:" "$home/pattern.fifo"
as_user ./dotsafe fsck storage --pattern-stdin < "$home/pattern.fifo" > "$home/fsck.out" 2>&1 &
fsck_job=$!
exec 7> "$home/pattern.fifo"
fsck_pid=
for _ in $(seq 1 50); do
    fsck_pid=$(pgrep -u "$user" -f '^\./dotsafe fsck' | head -n1 || true)
    [[ -n $fsck_pid && $(awk '/^State:/ { print $2 }' "/proc/$fsck_pid/status" 2>/dev/null) == S ]] && break
    sleep 0.1
done
[[ -n $fsck_pid ]] || fail "fsck did not start"
sleep 0.5
fsck_owner=$(stat -c '%U:%G' "/proc/$fsck_pid/status")
printf '%s\n' "$pattern" >&7
exec 7>&-
wait "$fsck_job" || fail "fsck as $user failed: $(cat "$home/fsck.out")"
[[ $fsck_owner == root:root ]] || fail "fsck is dumpable: /proc/$fsck_pid/status is $fsck_owner"
note "fsck $fsck_pid: /proc owner root:root (not dumpable)"

# The keyring with group/other bits is refused, for this user as for root.
chmod 0644 "$home/keys/keyring"
if out=$(printf '%s\n' "$pattern" | as_user ./dotsafe mount storage vault --pattern-stdin 2>&1); then fail "a 0644 keyring was accepted"; fi
[[ $out == dotsafe:*keyring* ]] || fail "unexpected message for a 0644 keyring: $out"
is_mounted "$vault" && fail "mounted with a 0644 keyring"
chmod 0600 "$home/keys/keyring"
printf '%s\n' "$pattern" | as_user ./dotsafe mount storage vault --pattern-stdin > /dev/null || fail "remount as $user failed"
as_user bash -c 'cd vault && sha256sum -c --quiet ../content.sha256 && test "$(readlink d/link)" = small' || fail "content differs after remount"
as_user ./dotsafe lock vault > /dev/null || fail "lock as $user failed"
note "passed (0644 keyring: $out)"
