#!/usr/bin/env bash
# Hostile storage folder (R-SEC-4): symbolic links named like storage files that point at files
# of the right size outside, FIFOs, sub-folders, files of other sizes, unreadable files and many
# extra files are planted in the storage. Mount, write, lock, mount again, read, lock: no crash,
# no hang, and every planted thing untouched (same inode, content, mode, link target); the
# target of a symbolic link is never written. The one exception (docs/FORMAT.md §11.3): a
# regular file of the storage's size and name form with one link looks like another vault's file
# and may be re-created at a lock with the same bytes and mode, so its inode and times may change.
#   tools/reliability/hostile-storage.sh [EXTRA]     EXTRA: count of extra files (default 1000)
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
extra=${1:-1000}
init_storage
# init's own files (covers, rewritten at every lock) are not planted: everything else is.
covers=$(ls "$storage")
outside=$work/outside
mkdir -p "$outside"
name() { head -c 16 /dev/urandom | base32 | tr -d = | tr A-Z a-z | head -c 26; }
for i in 1 2 3 4; do
    head -c $file_size /dev/urandom > "$outside/target-$i"
    ln -s "$outside/target-$i" "$storage/$(name)"
done
ln -s "$outside/missing" "$storage/$(name)"              # a dangling link
mkfifo "$storage/$(name)" "$storage/$(name)"
mkdir "$storage/$(name)" "$storage/sub-folder"
head -c $file_size /dev/urandom > "$storage/sub-folder/$(name)"
head -c $((file_size - 1)) /dev/urandom > "$storage/$(name)"
head -c $((file_size + 1)) /dev/urandom > "$storage/$(name)"
: > "$storage/$(name)"
head -c $file_size /dev/urandom > "$storage/not-a-storage-name"
head -c $file_size /dev/urandom > "$storage/$(name)"
unreadable=$storage/$(name)
head -c $file_size /dev/urandom > "$unreadable"
chmod 000 "$unreadable"     # root reads it anyway; the unprivileged case is not covered here
for i in $(seq 1 "$extra"); do printf 'extra %s\n' "$i" > "$storage/extra-$i.txt"; done
# A hard link from outside to a planted file of the right size and name form is a regular file:
# the vault may count it but never owns it, so it must stay untouched too (inode included).
head -c $file_size /dev/urandom > "$outside/linked"
ln "$outside/linked" "$storage/$(name)"
planted=$(ls "$storage")
inventory() {
    printf '%s\n' $planted > "$work/planted"
    find "$storage" -mindepth 1 -printf '%P %y %i %m %s %T@ %n %l\n' |
        awk -v size="$file_size" 'NR == FNR { planted[$1]; next }
             { split($1, part, "/") }
             $2 == "f" && $5 == size && $7 == 1 && $1 ~ /^[a-z2-7]+$/ && length($1) == 26 { $3 = "-"; $6 = "-" }
             part[1] in planted' "$work/planted" - | sort
    (cd "$storage" && find . -type f -print0 | sort -z | xargs -0 sha256sum | grep -F -f "$work/planted")
    sha256sum "$outside"/target-*
    stat -c '%n %i %Y' "$outside"/target-* "$outside/linked"
}
planted=$(comm -23 <(ls "$storage" | sort) <(sort <<<"$covers"))
inventory > "$work/before"

vault=$work/vault
mkdir -p "$vault"
mounts+=("$vault")
printf '%s\n' "$pattern" | timeout 60 "$DOTSAFE_BIN" mount "$storage" "$vault" --pattern-stdin > /dev/null || fail "mount failed"
(cd "$vault"
 head -c 700000 /dev/urandom > large
 for i in $(seq 1 30); do head -c $((i * 100)) /dev/urandom > "small-$i"; done
 sha256sum large small-* > "$work/content.sha256")
timeout 60 "$DOTSAFE_BIN" lock "$vault" > /dev/null || fail "lock failed"
inventory > "$work/after"
diff "$work/before" "$work/after" || fail "a planted entry changed"
mount_vault "$vault" || fail "the second mount failed"
(cd "$vault" && sha256sum -c --quiet "$work/content.sha256") || fail "content differs"
(cd "$vault" && rm small-1 small-2 large)
timeout 60 "$DOTSAFE_BIN" lock "$vault" > /dev/null || fail "lock failed"
inventory > "$work/after"
diff "$work/before" "$work/after" || fail "a planted entry changed"
check_storage "$storage" "$(printf '^(%s)$' "$(tr '\n' '|' <<<"$planted" | sed 's/|$//')")"
note "passed: $(wc -w <<<"$planted") planted entries untouched"
