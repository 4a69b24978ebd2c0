"""The byte layouts of index version 3 (docs/FORMAT.md §15), written from the document alone.

As structures2.py: no cryptography here (the entry hash is given as a function), and every
limit of the document asserted unless check=False, which the FAIL vectors use to show exactly
one broken rule.
"""

import hashlib
import hmac

import structures2 as S2
from structures import u8, u16, u32, u64, lp8, F

SUMMARY_SUB = 1 << 30
ENTRIES_SUB = 1 << 31
BLOCK = 4096
FILE_NUMBER_LIMIT = 1 << 44


def entry_hash(ehk, name):
    """§15.3: u32be(HMAC-SHA256(EHK, name)[0..4]) >> 1."""
    return int.from_bytes(hmac.new(ehk, name, hashlib.sha256).digest()[:4], "big") >> 1


def reserved_id(device, z):
    """§15.2: R(d, z) = d << 48 | z << 32."""
    assert 0 <= z < 1 << 16
    return device << 48 | z << 32


def file_block_key(device, block):
    return reserved_id(device, 0), block


def members_key(device, pack):
    assert pack < FILE_NUMBER_LIMIT
    return reserved_id(device, 1 + (pack >> 32)), pack & 0xffffffff


def name_ok(name):
    return 1 <= len(name) <= 255 and b"/" not in name and b"\0" not in name and name not in (b".", b"..")


def folder_entries(ehk, h, entries, check=True):
    """§15.3: entries [(name, itemID, type)], names strictly increasing, each of hash h."""
    if check:
        names = [name for name, _, _ in entries]
        assert 1 <= len(entries) <= 16 and names == sorted(set(names))
        assert all(name_ok(n) and entry_hash(ehk, n) == h and 1 <= t <= 7 and item != 1 and item & 0xffffffff
                   for n, item, t in entries)
    return u8(len(entries)) + b"".join(lp8(name) + u64(item) + u8(kind) for name, item, kind in entries)


def folder_summary(entry_count, subfolder_count, check=True):
    assert not check or subfolder_count <= entry_count
    return u64(entry_count) + u64(subfolder_count)


def usable(device, number):
    """A number a file block may set: owned by the device, not a slot or cover."""
    return number >= 2 + device["covers"] and S2.owns(device, number)


def file_block(device, block, held, packs, check=True):
    """§15.4: held, the numbers set; packs [(number, liveBytes, reservedEnd)], increasing."""
    bits = bytearray(512)
    for number in held:
        i = number - block * BLOCK
        assert 0 <= i < BLOCK
        bits[i >> 3] |= 1 << (i & 7)
    if check:
        assert any(S2.owns(device, block * BLOCK + i) for i in range(BLOCK))
        assert all(usable(device, n) for n in held)
        numbers = [n for n, _, _ in packs]
        assert numbers == sorted(set(numbers)) and all(n in held and 1 <= live <= end <= F for n, live, end in packs)
    return bytes(bits) + u16(len(packs)) + b"".join(u16(n - block * BLOCK) + u32(live) + u32(end) for n, live, end in packs)


def pack_members(items, check=True):
    """§15.4: count × u64 itemID, strictly increasing, count ≥ 1 (the length says the count)."""
    assert not check or (items and items == sorted(set(items)) and all(i & 0xffffffff for i in items))
    return b"".join(u64(i) for i in items)


def index_root_v3(generation, writer, devices, specials, level, top, extensions, check=True):
    """§15.5: §13.5's body with tag 5 (EHK, 32 bytes) and every nextFileNumber ≤ 2^44."""
    if check:
        assert [len(v) for t, v in extensions if t == 5] == [32]
        assert all(d["next_file"] <= FILE_NUMBER_LIMIT for d in devices)
        # tag 5 is the format's own, below 1024: index_root_v2 knows tags 2, 3, 4 only.
        rest = [(t, v) for t, v in extensions if t != 5]
        S2.index_root_v2(generation, writer, devices, specials, level, top, rest)
    body = u64(generation) + u16(writer) + u16(len(devices)) + b"".join(S2.device_entry(d) for d in devices)
    body += u16(len(specials)) + b"".join(u64(ref) + u8(role) + name for ref, role, name in specials)
    body += u8(level) + u32(len(top)) + b"".join(S2.page_ref(*ref) for ref in top)
    body += u16(len(extensions)) + b"".join(u16(tag) + u32(len(value)) + value for tag, value in extensions)
    return body
