#!/usr/bin/env bash
# A storage on a read-only file system (a bind mount made read-only; root only): a mount without
# --read-only is made read-only and says so, a write fails with EROFS ("Read-only file system")
# instead of being taken into memory and lost at the lock, the vault's files read as before,
# the lock succeeds, and a mount that would sync into it is refused.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
((EUID == 0)) || { note "skipped: needs root for a read-only bind mount"; exit 0; }
init_storage "$storage"
vault=$work/vault
mount_vault "$vault" "$storage"
echo "before" > "$vault/kept.txt"
lock_vault "$vault"

frozen=$work/frozen
mkdir -p "$frozen"
mount --bind "$storage" "$frozen"
extra_cleanup+=("umount -l '$frozen'")
mount -o remount,bind,ro "$frozen"
mkdir -p "$vault"
mounts+=("$vault")
printf '%s\n' "$pattern" | ds mount "$frozen" "$vault" --pattern-stdin > /dev/null 2> "$work/mount.err" || fail "mount failed: $(cat "$work/mount.err")"
grep -q "is on a read-only file system: the vault is mounted read-only" "$work/mount.err" || fail "the mount said: $(cat "$work/mount.err")"
grep -qE " $vault fuse[^ ]* ro," /proc/mounts || fail "the vault is not mounted read-only: $(grep -F " $vault " /proc/mounts)"
[[ $(cat "$vault/kept.txt") == before ]] || fail "the vault's file does not read back"
if { echo "after" > "$vault/new.txt"; } 2> "$work/write.err"; then fail "a write into a read-only storage succeeded"; fi
grep -q "Read-only file system" "$work/write.err" || fail "the write saw another error: $(cat "$work/write.err")"
lock_vault "$vault" || fail "the lock of the read-only mount failed"

if printf '%s\n' "$pattern" | ds mount "$frozen" "$vault" --pattern-stdin --sync "$work/remote" > /dev/null 2> "$work/sync.err"; then
    fail "a mount syncing into a read-only storage succeeded"
fi
grep -q "is on a read-only file system: a sync cannot write it" "$work/sync.err" || fail "the sync mount said: $(cat "$work/sync.err")"
is_mounted "$vault" && fail "the refused sync mount left a mount"
note passed
