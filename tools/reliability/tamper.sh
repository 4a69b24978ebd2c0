#!/usr/bin/env bash
# Tamper suite on the mounted view (R-BLK-2, R-VLT-2). A locked vault holds small (packed) and
# large (chunked) files written over two commits. Its files are found by diffing the storage
# listing against the one after init. For each of its files and each tampering — bit flip,
# truncate, extend, zero-fill, swap with another of its files, put back the version of the
# file from before the second commit, delete — the vault is mounted and every file read:
# each read returns the right bytes or fails with EIO ("Input/output error"), never other
# bytes; the daemon still serves afterwards. A mount that refuses must say, in one line, that
# the index is damaged. The storage is restored between cases.
#
# Two outcomes are by design and accepted here (docs/FORMAT.md §9.1, README "Security model"):
# - a deleted index (both slots) looks like no vault: the mount shows an empty vault;
# - the newest root slot damaged, deleted or put back older makes the vault open at the older
#   root, the previous commit: an older authentic state. Files then read as the version of
#   that commit (here: files of the second commit are absent, files rewritten show their first
#   version), which is checked against the first commit's digests.
#   tools/reliability/tamper.sh [all|quick]     quick: a random fifth of the cases
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
mode=${1:-all}

init_storage
ls "$storage" | sort > "$work/covers"
vault=$work/vault
expected=$work/expected

# First commit: two small files, one of three chunks, one rewritten later.
mount_vault "$vault"
(cd "$vault"
 head -c 1000 /dev/urandom > small-1
 head -c 70000 /dev/urandom > small-2
 head -c 600000 /dev/urandom > large-1
 head -c 5000 /dev/urandom > rewritten
 mkdir folder && head -c 300000 /dev/urandom > folder/large-2
 sync -f .)
lock_vault "$vault"
mount_vault "$vault"
(cd "$vault" && find . -type f -print0 | sort -z | xargs -0 sha256sum) > "$work/first.sha256"
lock_vault "$vault"
mkdir "$work/older"
cp -a "$storage/." "$work/older/"
# Second commit: more files, one rewritten in place.
mount_vault "$vault"
(cd "$vault"
 head -c 2000 /dev/urandom > small-3
 head -c 800000 /dev/urandom > large-3
 head -c 7000 /dev/urandom > rewritten
 sync -f .)
(cd "$vault" && find . -type f -print0 | sort -z | xargs -0 sha256sum) > "$work/final.sha256"
lock_vault "$vault"
mkdir "$work/pristine"
cp -a "$storage/." "$work/pristine/"
mapfile -t owned < <(comm -13 "$work/covers" <(ls "$storage" | sort))
((${#owned[@]} >= 16)) || fail "the vault owns ${#owned[@]} files"
note "the vault owns ${#owned[@]} files; cases: $mode"

restore() {
    find "$storage" -mindepth 1 -delete
    cp -a "$work/pristine/." "$storage/"
}

# tamper KIND FILE
tamper() {
    local path=$storage/$2
    case $1 in
    flip)     printf "\\x$(printf %02x $((RANDOM % 255 + 1)))" | dd of="$path" bs=1 seek=$((RANDOM * 8 % file_size)) conv=notrunc status=none ;;
    truncate) truncate -s $((RANDOM * 8 % file_size)) "$path" ;;
    extend)   head -c 100 /dev/urandom >> "$path" ;;
    zero)     dd if=/dev/zero of="$path" bs=$file_size count=1 conv=notrunc status=none ;;
    swap)     local other=${owned[$(( (RANDOM % (${#owned[@]} - 1) + 1 + $3) % ${#owned[@]} ))]}
              mv "$path" "$work/swap" && mv "$storage/$other" "$path" && mv "$work/swap" "$storage/$other" ;;
    older)    if [[ -e $work/older/$2 ]]; then cp "$work/older/$2" "$path"; else rm -f "$path"; fi ;;
    delete)   rm -f "$path" ;;
    esac
}

# Reads every file; each must match a digest of the final state or, when the vault opened at
# its older root, of the first commit; or fail with EIO.
check_reads() {
    local case=$1 older=0 line digest name out
    # The older root is recognisable: the second commit's files are absent.
    [[ -e $vault/small-3 || -e $vault/large-3 ]] || older=1
    while IFS= read -r -d '' name; do
        name=${name#./}
        if out=$(sha256sum < "$vault/$name" 2> "$work/read.err"); then
            digest=${out%% *}
            grep -qxF "$digest  ./$name" "$work/final.sha256" && continue
            ((older)) && grep -qxF "$digest  ./$name" "$work/first.sha256" && continue
            fail "$case: $name read other bytes"
        else
            grep -q "Input/output error" "$work/read.err" || fail "$case: reading $name failed otherwise: $(cat "$work/read.err")"
            eio=$((eio + 1))
        fi
    done < <(cd "$vault" && find . -type f -print0)
    ((older)) && older_opens=$((older_opens + 1))
    return 0
}

cases=0 refused=0 eio=0 older_opens=0 empty=0
for index in "${!owned[@]}"; do
    file=${owned[$index]}
    for kind in flip truncate extend zero swap older delete; do
        [[ $mode == quick ]] && ((RANDOM % 5)) && continue
        restore
        tamper "$kind" "$file" "$index"
        case="$kind $file"
        cases=$((cases + 1))
        if ! out=$(printf '%s\n' "$pattern" | ds mount "$storage" "$vault" --pattern-stdin 2>&1); then
            [[ $out == "dotsafe: the vault's index is damaged: "* && $out != *$'\n'* ]] || fail "$case: mount failed with: $out"
            is_mounted "$vault" && fail "$case: a failed mount left a mount"
            refused=$((refused + 1))
            continue
        fi
        mounts+=("$vault")
        pid=$(daemon_pid "$vault")
        if [[ -z $(ls -A "$vault") ]]; then
            empty=$((empty + 1))     # the index is gone: looks like no vault, by design
        else
            check_reads "$case"
        fi
        ls -laR "$vault" > /dev/null || fail "$case: listing failed"
        kill -0 "$pid" 2>/dev/null || fail "$case: the daemon died"
        stat "$vault" > /dev/null || fail "$case: the daemon no longer serves"
        lock_vault "$vault" || fail "$case: lock failed"
    done
done
# Every file of the vault deleted, index slots among them: no vault, by design (R-VLT-2).
restore
for file in "${owned[@]}"; do rm "$storage/$file"; done
mount_vault "$vault" || fail "mount failed with the vault deleted"
[[ -z $(ls -A "$vault") ]] || fail "a deleted vault shows files"
lock_vault "$vault"
cmp <(ls "$storage") <(ls "$work/pristine" | grep -vxFf <(printf '%s\n' "${owned[@]}")) > /dev/null || fail "mounting a deleted vault changed the storage"
note "passed: $cases cases; $refused refused at mount, $eio reads failed with EIO, $older_opens opened the older root, $empty showed no vault"
