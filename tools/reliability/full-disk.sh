#!/usr/bin/env bash
# Full disk: the storage on a small tmpfs (SIZE MiB, default 64; root only). Writing through the
# mount until the disk is full must fail with ENOSPC at write or fsync ("No space left on
# device"), lose nothing committed before, let a delete still commit on the full disk, free
# space, lock cleanly, and the vault must open afterwards with its synced files intact.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
# init's covers take 16-32 MiB (FORMAT.md §3.2) and a delete gives space back only when it frees
# two whole groups of 16 files (one free group stays for the next writes, §9.2), so the disk
# leaves room for a fill of at least five groups whatever the cover count.
size=${SIZE:-64}
((EUID == 0)) || { note "skipped: needs root to mount a tmpfs"; exit 0; }
disk=$work/disk
mkdir -p "$disk"
mount -t tmpfs -o "size=${size}m,mode=0755" dotsafe-test-disk "$disk"
extra_cleanup+=("umount -l '$disk'")
storage=$disk/storage
init_storage "$storage"
vault=$work/vault
free_kib() { df --output=avail -k "$disk" | tail -n1 | tr -d ' '; }

mount_vault "$vault" "$storage"
cd "$vault"
dd if=/dev/urandom of=keep.bin bs=1M count=2 conv=fsync status=none
head -c 3000 /dev/urandom > keep-small.txt
fsync_path .
sha256sum keep.bin keep-small.txt > "$work/keep.sha256"
note "before filling: $(free_kib) KiB free"

# Fill: one big file, synced; it must fail with ENOSPC.
if dd if=/dev/zero of=fill.bin bs=1M count=$((size * 2)) conv=fsync status=none 2> "$work/dd.err"; then
    fail "filling ${size} MiB with $((size * 2)) MiB succeeded"
fi
grep -q "No space left on device" "$work/dd.err" || fail "dd saw another error: $(cat "$work/dd.err")"
note "dd: $(head -n1 "$work/dd.err"); $(free_kib) KiB free"
# Small files too, until they fail.
for i in $(seq 1 400); do
    head -c 5000 /dev/urandom > "small-$i" 2>/dev/null || break
done
fsync_path . 2> "$work/sync.err" || true
sha256sum -c --quiet "$work/keep.sha256" || fail "a synced file changed on the full disk"
ls -la > /dev/null
stat . > /dev/null

# A delete commits on the full disk, and space comes back after the lock.
full=$(free_kib)
rm -f fill.bin small-*
fsync_path . 2> "$work/sync.err" || fail "the commit of a delete on the full disk failed: $(cat "$work/sync.err")"
cd "$work"
lock_vault "$vault" || fail "lock failed on the full disk"
freed=$(free_kib)
note "full: $full KiB free; after delete and lock: $freed KiB free"
((freed > full + 1024)) || fail "deleting and locking freed no space ($full -> $freed KiB)"
check_storage "$storage"

mount_vault "$vault" "$storage" || fail "the vault does not open after the disk was full"
(cd "$vault" && sha256sum -c --quiet "$work/keep.sha256") || fail "a synced file is not intact after the full disk"
[[ $(ls "$vault") == $'keep-small.txt\nkeep.bin' ]] || fail "unexpected entries: $(ls "$vault")"
# The space can be used again.
dd if=/dev/urandom of="$vault/again.bin" bs=1M count=4 conv=fsync status=none || fail "writing after freeing space failed"
lock_vault "$vault"
check_storage "$storage"

# The disk filled by committed data: files of 200 KB, each fsynced, until one fails. Then a
# delete must still commit: its index pages need files while the deleted data's files are
# still referenced by the committed root (R-FS-2, "a full disk (ENOSPC, the vault intact)").
mount_vault "$vault" "$storage"
cd "$vault"
for i in $(seq 1 1000); do
    head -c 200000 /dev/urandom > "$work/chunk"
    dd if="$work/chunk" of="c-$i" bs=64k conv=fsync status=none 2> "$work/dd.err" || break
    printf '%s  c-%s\n' "$(sha256sum < "$work/chunk" | cut -d' ' -f1)" "$i" >> "$work/committed.sha256"
done
grep -q "No space left on device" "$work/dd.err" || fail "filling with synced files ended otherwise: $(cat "$work/dd.err")"
note "filled with $((i - 1)) synced files; $(free_kib) KiB free"
rm -f "c-$i"
fsync_path . 2> "$work/sync.err" || true
sha256sum -c --quiet "$work/committed.sha256" || fail "a synced file changed on the full disk"
full=$(free_kib)
rm -f c-1 c-2 c-3 c-4 c-5 c-6 c-7 c-8
fsync_path . 2> "$work/sync.err" || fail "the commit of a delete on a disk full of committed data failed: $(cat "$work/sync.err")"
grep -v '  c-[1-8]$' "$work/committed.sha256" > "$work/left.sha256"
cd "$work"
lock_vault "$vault" || fail "lock failed on the full disk"
note "full: $full KiB free; after delete and lock: $(free_kib) KiB free"
check_storage "$storage"
mount_vault "$vault" "$storage" || fail "the vault does not open after the disk was full"
(cd "$vault" && sha256sum -c --quiet "$work/left.sha256" && sha256sum -c --quiet "$work/keep.sha256") || fail "a synced file is not intact"
lock_vault "$vault"

# The disk filled from outside, then a copy with no fsync (cp, as a user does): the copy fails
# with ENOSPC within a few MiB, not after the cache's 256 MiB, and a lock whose commit cannot be
# written keeps the vault mounted with every change. Removing what the copy left and making room
# lets the lock go through; nothing written before is lost (a file made before the fill, never
# synced, among them).
mount_vault "$vault" "$storage"
echo "written before the fill" > "$vault/unsynced.txt"
head -c 40000000 /dev/urandom > "$work/big"
dd if=/dev/zero of="$disk/filler" bs=64k status=none 2>/dev/null || true
if cp "$work/big" "$vault/big" 2> "$work/cp.err"; then fail "a 40 MB copy onto a full disk succeeded"; fi
grep -q "No space left on device" "$work/cp.err" || fail "cp saw another error: $(cat "$work/cp.err")"
taken=$(stat -c %s "$vault/big")
((taken <= 16 << 20)) || fail "the copy got ENOSPC only after $taken bytes"
note "cp: ENOSPC after $taken bytes"
if ds lock "$vault" > /dev/null 2> "$work/lock.err"; then fail "a lock with changes it cannot write succeeded"; fi
grep -q "stays mounted" "$work/lock.err" || fail "the failed lock said: $(cat "$work/lock.err")"
is_mounted "$vault" || fail "the failed lock unmounted the vault"
[[ $(cat "$vault/unsynced.txt") == "written before the fill" ]] || fail "the failed lock lost a change"
rm -f "$vault/big" "$disk/filler"
lock_vault "$vault" || fail "lock failed with room again"
mount_vault "$vault" "$storage"
[[ $(cat "$vault/unsynced.txt") == "written before the fill" ]] || fail "the change made before the fill was lost"
[[ ! -e $vault/big ]] || fail "the removed copy came back"
lock_vault "$vault"
check_storage "$storage"
note passed
