"""The byte layouts of format 2 (docs/FORMAT.md §13), written from the document alone.

Like structures.py, no cryptography here and every limit of the document asserted, so that a
vector never shows a structure a reader must reject.
"""

from structures import u8, u16, u32, u64, i64, lp8, lp32, GROUP, P, F

NUMBER_BITS = 48


def file_ref(device, number):
    """§13.4: device index in the top 16 bits, file number in the low 48."""
    assert 0 <= device < 1 << 16 and 0 <= number < 1 << NUMBER_BITS
    return device << NUMBER_BITS | number


def groups_ok(groups, next_file_number):
    return (groups and groups[0][0] == 0 and all(b[0] > a[0] + a[1] for a, b in zip(groups, groups[1:]))
            and groups[-1][0] + groups[-1][1] <= next_file_number // GROUP)


def owns(device, number):
    return any(first <= number // GROUP < first + count for first, count in device["groups"])


def device_entry(d):
    """§13.4. d: dict with id, nk, prefix, counter, next_file, covers, groups, releasing, name."""
    assert len(d["id"]) == 16 and len(d["nk"]) == 32 and d["next_file"] % GROUP == 0 and d["next_file"] <= 1 << NUMBER_BITS
    assert d["prefix"] != 0 or d["counter"] > 1
    assert 2 <= d["covers"] <= 6 and groups_ok(d["groups"], d["next_file"])
    assert all(not owns(d, n) and 2 + d["covers"] <= n < d["next_file"] for n in d["releasing"])
    d["name"].decode("utf-8")
    out = d["id"] + d["nk"] + u32(d["prefix"]) + u32(d["counter"]) + u64(d["next_file"]) + u8(d["covers"])
    out += u32(len(d["groups"])) + b"".join(u64(first) + u64(count) for first, count in d["groups"])
    out += u32(len(d["releasing"])) + b"".join(u64(n) for n in d["releasing"])
    return out + lp8(d["name"])


def page_ref(item, sub, ref, key):
    """§13.5: first record key, FileRef, page key: 52 bytes."""
    assert len(key) == 32
    return u64(item) + u32(sub) + u64(ref) + key


def valid_file(devices, ref):
    device, number = ref >> NUMBER_BITS, ref & ((1 << NUMBER_BITS) - 1)
    return device < len(devices) and number >= 2 + devices[device]["covers"] and owns(devices[device], number)


def index_root_v2(generation, writer, devices, specials, level, top, extensions):
    """§13.5. specials: [(FileRef, role, name16)]; top: [(item, sub, FileRef, key)]; extensions: [(tag, value)]."""
    assert generation >= 1 and devices and writer < len(devices)
    assert sum(1 for _, role, _ in specials if role == 1) == 1 and all(role in (1, 2, 3) for _, role, _ in specials)
    assert level <= 4 and (level == 0 or top)
    keys = [(item, sub) for item, sub, _, _ in top]
    assert keys == sorted(set(keys))
    files = [ref for ref, _, _ in specials] + [ref for _, _, ref, _ in top]
    assert len(set(files)) == len(files) and all(valid_file(devices, ref) for ref in files)
    tags = [tag for tag, _ in extensions]
    assert tags == sorted(set(tags)) and all(tag >= 1024 or tag in (2, 3, 4) for tag in tags)
    for tag, value in extensions:
        if tag == 2:
            assert len(value) == 16
        if tag == 4:
            # Former remote names (§13.5): RL and NKd, only beside tag 2.
            assert len(value) == 64 and 2 in tags
        if tag == 3:
            # Names move (§13.5): a role-3 file, two distinct slot files of device 0, valid and unlisted.
            assert len(value) == 112 and any(role == 3 for _, role, _ in specials)
            slot_files = [int.from_bytes(value[96 + 8 * k:104 + 8 * k], "little") for k in (0, 1)]
            assert slot_files[0] != slot_files[1] and all(valid_file(devices, f) and f not in files for f in slot_files)
        if tag == 1025:
            # Staged downloads (§13.5): targets of other devices that the root references,
            # staged in data files of the writer's owned groups that it does not list.
            entries = [(int.from_bytes(value[k:k + 8], "little"), int.from_bytes(value[k + 8:k + 16], "little"))
                       for k in range(0, len(value), 32)]
            assert value and len(value) % 32 == 0
            assert all(t >> NUMBER_BITS != writer and valid_file(devices, t) for t, _ in entries)
            assert all(s >> NUMBER_BITS == writer and valid_file(devices, s) and s not in files for _, s in entries)
    body = u64(generation) + u16(writer) + u16(len(devices)) + b"".join(device_entry(d) for d in devices)
    body += u16(len(specials)) + b"".join(u64(ref) + u8(role) + name for ref, role, name in specials)
    body += u8(level) + u32(len(top)) + b"".join(page_ref(*ref) for ref in top)
    body += u16(len(extensions)) + b"".join(u16(tag) + lp32(value) for tag, value in extensions)
    assert len(body) <= P
    return body


def index_page_v2(level, entries):
    """§13.6. Level 0: entries are ((item, sub), value); above: (item, sub, FileRef, key)."""
    assert entries
    if level == 0:
        keys = [key for key, _ in entries]
        body = u8(0) + u32(len(entries)) + b"".join(u64(item) + u32(sub) + lp32(value) for (item, sub), value in entries)
    else:
        keys = [(item, sub) for item, sub, _, _ in entries]
        body = u8(level) + u32(len(entries)) + b"".join(page_ref(*ref) for ref in entries)
    assert keys == sorted(set(keys)) and len(body) <= P
    return body


FILE, FOLDER, SYMLINK = 1, 2, 3


def item_record_v2(kind, mode, uid, gid, rdev, atime, mtime, ctime, size, version, changed_by, links, xattrs,
                   item_key=b"", layout=None, member=None, target=b""):
    """§13.8. layout: 'empty', 'packed' (member = (FileRef, offset, sealedLength, memberKey)),
    'chunked', or 'packed1' (member = (FileRef, offset, sealedLength, N), a format-1 member: item_key needed)."""
    assert 1 <= kind <= 7 and mode <= 0o7777
    record = u8(2) + u8(kind) + u32(mode) + u32(uid) + u32(gid) + u64(rdev) + i64(atime) + i64(mtime) + i64(ctime) + u64(size)
    record += u64(version) + u16(changed_by)
    record += u16(len(links)) + b"".join(u64(parent) + lp8(name) for parent, name in links)
    record += u16(len(xattrs)) + b"".join(lp8(name) + lp32(value) for name, value in xattrs)
    if kind == FILE:
        assert len(item_key) in (0, 32)
        record += u8(1 if item_key else 0) + item_key
        if layout == "empty":
            record += u8(0)
        elif layout == "chunked":
            record += u8(2)
        else:
            ref, offset, sealed_length, secret = member
            overhead = 16 + (24 if layout == "packed" else 0)
            assert 1 <= sealed_length - overhead <= size < P and offset + sealed_length <= F
            if layout == "packed":
                assert len(secret) == 32
                record += u8(1)
            else:
                assert layout == "packed1" and item_key and len(secret) == 24
                record += u8(3)
            record += u64(ref) + u32(offset) + u32(sealed_length) + secret
    elif kind == SYMLINK:
        assert 1 <= len(target) <= 4095 and b"\0" not in target
        record += lp32(target)
    return record


def chunk_segment_v2(entries):
    """§13.7. entries: [(indexInSegment, scheme, FileRef, key or N)], strictly increasing index."""
    indices = [index for index, _, _, _ in entries]
    assert 1 <= len(entries) <= 1024 and indices == sorted(set(indices)) and indices[-1] < 1024
    out = u16(len(entries))
    for index, scheme, ref, secret in entries:
        assert (scheme, len(secret)) in ((1, 24), (2, 32))
        out += u16(index) + u8(scheme) + u64(ref) + secret
    return out


def unlock_record(role, tags):
    """§13.3. tags: [(tag, value)], strictly increasing."""
    assert role == 1 and [t for t, _ in tags] == sorted(set(t for t, _ in tags))
    assert {1, 2, 3} <= {t for t, _ in tags}
    return u8(role) + u16(len(tags)) + b"".join(u16(tag) + lp32(value) for tag, value in tags)


def staged_downloads(entries):
    """§13.5 extension tag 1025: (target FileRef, staged FileRef, digest16) for each entry."""
    assert entries and all(len(digest) == 16 for _, _, digest in entries)
    return b"".join(u64(target) + u64(staged) + digest for target, staged, digest in entries)
