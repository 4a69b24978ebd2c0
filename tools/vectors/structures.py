"""The byte layouts of docs/FORMAT.md §5, §6 and §8, written from the document alone.

No cryptography here: make-vectors.py seals what these functions encode. Every function takes the
fields as plain Python values and returns bytes; each asserts the document's limits, so that a
vector can never show a structure a reader must reject.
"""

import hashlib
import struct


def u8(v): return struct.pack("<B", v)
def u16(v): return struct.pack("<H", v)
def u32(v): return struct.pack("<I", v)
def u64(v): return struct.pack("<Q", v)
def i64(v): return struct.pack("<q", v)
def lp8(b): assert len(b) <= 0xff; return u8(len(b)) + b
def lp16(b): assert len(b) <= 0xffff; return u16(len(b)) + b
def lp32(b): return u32(len(b)) + b


GROUP = 16
P = 262_144
F = 262_192


def index_root(generation, vault_key, next_file_number, next_item_id, cover_count, groups, releasing, pages):
    """§5.1. groups: [(firstGroup, groupCount)]; releasing: [fileNumber]; pages: [(fileNumber, N)]."""
    assert generation >= 1 and len(vault_key) == 32 and next_file_number % GROUP == 0 and next_item_id > 1
    assert 2 <= cover_count <= 6 and groups and groups[0][0] == 0
    assert all(b[0] > a[0] + a[1] for a, b in zip(groups, groups[1:])), "sorted, disjoint, not adjacent"
    assert groups[-1][0] + groups[-1][1] <= next_file_number // GROUP
    body = u64(generation) + vault_key + u64(next_file_number) + u64(next_item_id) + u8(cover_count)
    body += u32(len(groups)) + b"".join(u64(first) + u64(count) for first, count in groups)
    body += u32(len(releasing)) + b"".join(u64(n) for n in releasing)
    body += u32(len(pages)) + b"".join(u64(n) + nonce for n, nonce in pages)
    return body


def index_page(records):
    """§5.2. records: [((itemID, sub), value)], strictly increasing keys."""
    keys = [key for key, _ in records]
    assert records and keys == sorted(set(keys))
    body = u32(len(records)) + b"".join(u64(item) + u32(sub) + lp32(value) for (item, sub), value in records)
    assert len(body) <= P
    return body


FILE, FOLDER, SYMLINK, FIFO, CHARACTER_DEVICE, BLOCK_DEVICE, SOCKET = range(1, 8)


def item_record(kind, mode, uid, gid, rdev, atime, mtime, ctime, size, links, xattrs,
                item_key=b"", layout=None, member=None, target=b""):
    """§6.1. links: [(parentID, name)]; xattrs: [(name, value)]; layout: 'empty', 'packed' or
    'chunked' for regular files; member: (fileNumber, offset, sealedLength, N) when packed."""
    assert 1 <= kind <= 7 and mode <= 0o7777
    record = u8(1) + u8(kind) + u32(mode) + u32(uid) + u32(gid) + u64(rdev) + i64(atime) + i64(mtime) + i64(ctime) + u64(size)
    record += u16(len(links)) + b"".join(u64(parent) + lp8(name) for parent, name in links)
    record += u16(len(xattrs)) + b"".join(lp8(name) + lp32(value) for name, value in xattrs)
    if kind == FILE:
        assert len(item_key) == 32
        record += item_key
        if layout == "empty":
            record += u8(0)
        elif layout == "packed":
            number, offset, sealed_length, nonce = member
            assert 1 <= sealed_length - 16 <= size < P and offset + sealed_length <= F and len(nonce) == 24
            record += u8(1) + u64(number) + u32(offset) + u32(sealed_length) + nonce
        else:
            assert layout == "chunked"
            record += u8(2)
    elif kind == SYMLINK:
        assert 1 <= len(target) <= 4095 and b"\0" not in target
        record += lp32(target)
    return record


def chunk_segment(entries):
    """§6.2. entries: [(indexInSegment, fileNumber, N)], strictly increasing index."""
    indices = [index for index, _, _ in entries]
    assert 1 <= len(entries) <= 1024 and indices == sorted(set(indices)) and indices[-1] < 1024
    return u16(len(entries)) + b"".join(u16(index) + u64(number) + nonce for index, number, nonce in entries)


def keyring_file(items):
    """§8.1. items: [(tag, [(name, value)], secret)], text as str; the SHA-256 checksum last."""
    content = b"DSKEYRNG" + u8(1) + u16(len(items))
    for tag, attributes, secret in items:
        assert 1 <= len(secret) <= 4096
        content += lp8(tag.encode()) + u16(len(attributes))
        content += b"".join(lp8(name.encode()) + lp16(value.encode()) for name, value in attributes)
        content += lp16(secret)
    return content + hashlib.sha256(content).digest()


def keyring_export(rounds, salt, nonce, sealed):
    """§8.2: the layout around the sealed keyring file (ciphertext || tag)."""
    assert len(salt) == 32 and len(nonce) == 24
    return b"DSKREXPT" + u8(1) + u32(rounds) + salt + nonce + sealed
