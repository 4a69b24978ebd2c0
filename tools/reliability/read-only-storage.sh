#!/usr/bin/env bash
# A storage on a read-only file system (a bind mount made read-only; root only): a mount without
# --read-only is made read-only and says so, a write fails with EROFS ("Read-only file system")
# instead of being taken into memory and lost at the lock, the vault's files read as before,
# the lock succeeds, and a mount that would sync into it is refused. A storage made read-only
# while mounted: the lock says so and keeps the vault mounted with its change.
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

# A storage made read-only while the vault is mounted: the lock cannot write the change made
# since, says so, exits 1 and keeps the vault mounted with it; writable again, the lock writes it.
live=$work/live
mkdir -p "$live"
mount --bind "$storage" "$live"
extra_cleanup+=("umount -l '$live'")
mount_vault "$vault" "$live"
mount -o remount,bind,ro "$live"
echo "made while read-only" > "$vault/late.txt"
if ds lock "$vault" > /dev/null 2> "$work/lock.err"; then fail "a lock whose change cannot be written succeeded"; fi
grep -q "Read-only file system" "$work/lock.err" && grep -q "stays mounted" "$work/lock.err" || fail "the failed lock said: $(cat "$work/lock.err")"
is_mounted "$vault" || fail "the failed lock unmounted the vault"
mount -o remount,bind,rw "$live"
lock_vault "$vault" || fail "the lock failed with the storage writable again"
mount_vault "$vault" "$storage"
[[ $(cat "$vault/late.txt") == "made while read-only" ]] || fail "the change made while the storage was read-only was lost"
lock_vault "$vault"
note passed
