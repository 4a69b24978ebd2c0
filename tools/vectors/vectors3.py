"""The index-3 vectors of docs/FORMAT.md §15.10, from the layouts of structures3.py.

make-vectors.py calls texts(m) with itself as m, as for vectors2.py. Records marked FAIL hold
one broken MUST-reject rule each, named by REASON.
"""

import hashlib

import structures2 as S2
import structures3 as S3
import vectors2 as V2
from structures import u8, u64, P

EHK = bytes(range(32))
T0 = V2.T0


def envelope3(m, key, nonce, label, context, kind, body, padding):
    """§15.1: §13.2's envelope with version 3 in its inner block."""
    assert len(body) + len(padding) == P
    inner = u8(3) + u8(kind) + b"\0\0" + len(body).to_bytes(4, "little") + body + padding
    file = nonce + m.seal_with_nonce(key, nonce, label, context, inner)
    assert len(file) == S2.F
    return file


def colliding_pair():
    """The first two decimal names, counting up from 0, whose hashes under EHK are equal."""
    seen, n = {}, 0
    while True:
        name = str(n).encode()
        h = S3.entry_hash(EHK, name)
        if h in seen:
            return seen[h], name
        seen[h] = name
        n += 1


PAIR = colliding_pair()
NAME_CASES = [("short", b"a"), ("usual", b"hello.txt"), ("longest", bytes(0x41 + i % 26 for i in range(255))),
              ("not UTF-8", b"caf\xe9.txt"), ("collision, first", PAIR[0]), ("collision, second", PAIR[1])]


def entry_hash_txt(m):
    lines = m.header("The folder-entry hash of index version 3 (docs/FORMAT.md §15.3, §15.10).", [
        "EHK: the entry hash key. WHAT (text). NAME: the name's bytes. HASH: decimal, u32be(HMAC-SHA256(EHK, NAME)[0..4]) >> 1.",
        "The two collision records are the first two decimal names, counting up from 0, of one hash.",
    ])
    for count, (what, name) in enumerate(NAME_CASES):
        lines += [f"COUNT = {count}", f"EHK = {EHK.hex()}", f"WHAT = {what}", f"NAME = {name.hex()}",
                  f"HASH = {S3.entry_hash(EHK, name)}", ""]
    return "\n".join(lines)


# --- roots -------------------------------------------------------------------------------------

DEVICE_C = {"id": bytes(range(0x30, 0x40)), "nk": bytes(range(0x40, 0x60)), "prefix": 0, "counter": 4,
            "next_file": 32, "covers": 3, "groups": [(0, 2)], "releasing": [], "name": b"phone"}
OWNER = (S2.file_ref(0, 7), 1, bytes(range(16)))
ROOT_CASES = [
    # generation, writer, devices, specials, level, top, extensions
    (1, 0, [DEVICE_C], [OWNER], 0, [(0, 0, S2.file_ref(0, 8), bytes([0x11] * 32))], [(5, EHK)]),
    (77, 1, [DEVICE_C, V2.DEVICE_A], [OWNER, (S2.file_ref(1, 8), 2, bytes(range(16, 32)))], 1,
     [(0, 0, S2.file_ref(0, 8), bytes([0x22] * 32)), (0x1234abcd_00000002, 0, S2.file_ref(1, 9), bytes([0x33] * 32))],
     [(5, EHK), (2000, b"room for later")]),
]
BIG_DEVICE = dict(DEVICE_C, next_file=S3.FILE_NUMBER_LIMIT + 16)
ROOT_FAILS = [
    ("file number", (1, 0, [BIG_DEVICE], [OWNER], 0, [(0, 0, S2.file_ref(0, 8), bytes(32))], [(5, EHK)])),
    ("no entry hash key", (1, 0, [DEVICE_C], [OWNER], 0, [(0, 0, S2.file_ref(0, 8), bytes(32))], [(2000, b"")])),
    ("entry hash key length", (1, 0, [DEVICE_C], [OWNER], 0, [(0, 0, S2.file_ref(0, 8), bytes(32))], [(5, EHK[:31])])),
]
ROOT_SEED = bytes([0x73] * 32)


def index_root_v3_txt(m):
    rk = m.hkdf(V2.VK, b"DotSafe v2 root key", 32)
    lines = m.header("Roots of index version 3 (docs/FORMAT.md §15.1, §15.5, §15.10).", [
        "Fields as index-root-v2.txt; EXTENSIONS holds tag 5, the entry hash key. BODY: the root's body.",
        "The slot file: BODY in an envelope of kind 1, version 3, sealed with RK (unlock-record.txt), label",
        "\"DotSafe v2 index root\", context u8 SLOT (= GENERATION mod 2), nonce SEALN, padding from PADDINGSEED;",
        "SLOTSHA256. COPYSHA256: the same root sealed for the other slot with nonce COPYN.",
        "Records marked FAIL: BODY must be refused as a root of version 3 for REASON (text).",
    ])
    for count, case in enumerate(ROOT_CASES):
        generation = case[0]
        body = S3.index_root_v3(*case)
        slot = generation % 2
        nonce, copy_nonce = m.nonce_from(0x44 + count), m.nonce_from(0x54 + count)
        padding = m.stream(ROOT_SEED, P - len(body))
        file = envelope3(m, rk, nonce, b"DotSafe v2 index root", u8(slot), 1, body, padding)
        copy = envelope3(m, rk, copy_nonce, b"DotSafe v2 index root", u8(1 - slot), 1, body, padding)
        lines += [f"COUNT = {count}"] + V2.root_fields(m, *case)
        lines += [f"BODY = {body.hex()}", f"RK = {rk.hex()}", f"SLOT = {slot}", f"SEALN = {nonce.hex()}",
                  f"COPYN = {copy_nonce.hex()}", f"PADDINGSEED = {ROOT_SEED.hex()}",
                  f"SLOTSHA256 = {hashlib.sha256(file).hexdigest()}", f"COPYSHA256 = {hashlib.sha256(copy).hexdigest()}", ""]
    for count, (reason, case) in enumerate(ROOT_FAILS, start=len(ROOT_CASES)):
        lines += [f"COUNT = {count}", f"BODY = {S3.index_root_v3(*case, check=False).hex()}", f"REASON = {reason}", "FAIL", ""]
    return "\n".join(lines)


# --- pages -------------------------------------------------------------------------------------

H = S3.entry_hash(EHK, PAIR[0])
MEMBER_KEY, CHUNK_KEY = bytes([0x44] * 32), bytes([0x55] * 32)
PACK, CHUNK = 9, 10
FOLDER_RECORD = S2.item_record_v2(S2.FOLDER, 0o755, 0, 0, 0, T0, T0, T0 + 1, 0, 1, 0, [], [])
CHUNKED_RECORD = S2.item_record_v2(S2.FILE, 0o644, 1000, 1000, 0, T0, T0, T0 + 1, 300_000, 1, 0, [(1, PAIR[0])], [],
                                   layout="chunked")
PACKED_RECORD = S2.item_record_v2(S2.FILE, 0o644, 1000, 1000, 0, T0, T0, T0 + 1, 100, 1, 0, [(1, PAIR[1])], [],
                                  layout="packed", member=(S2.file_ref(0, PACK), 0, 140, MEMBER_KEY))
LEAF = [
    (S3.file_block_key(0, 0), S3.file_block(DEVICE_C, 0, [7, 8, PACK, CHUNK], [(PACK, 140, 140)])),
    ((1, 0), FOLDER_RECORD),
    ((1, S3.SUMMARY_SUB), S3.folder_summary(2, 0)),
    ((1, S3.ENTRIES_SUB + H), S3.folder_entries(EHK, H, [(PAIR[0], 2, S2.FILE), (PAIR[1], 3, S2.FILE)])),
    ((2, 0), CHUNKED_RECORD),
    ((2, 1), S2.chunk_segment_v2([(0, 2, S2.file_ref(0, CHUNK), CHUNK_KEY)])),
    ((3, 0), PACKED_RECORD),
    (S3.members_key(0, PACK), S3.pack_members([3])),
]
INTERIOR = [(0, 0, S2.file_ref(0, 8), bytes([0x22] * 32)), (3, 0, S2.file_ref(0, 11), bytes([0x33] * 32))]
OTHER = S3.entry_hash(EHK, b"a")
PAGE_FAILS = [
    ("sub", [((2, 0), CHUNKED_RECORD), ((2, 5_000_000), S3.folder_summary(0, 0))]),
    ("reserved range", [((S3.reserved_id(0, 4097), 0), S3.pack_members([3]))]),
    ("device", [(S3.file_block_key(1, 0), S3.file_block(DEVICE_C, 0, [], []))]),
    ("entries under a file", [((2, 0), CHUNKED_RECORD),
                              ((2, S3.ENTRIES_SUB + H), S3.folder_entries(EHK, H, [(PAIR[0], 3, S2.FILE)]))]),
    ("hash", [((1, S3.ENTRIES_SUB + H), S3.folder_entries(EHK, H, [(PAIR[0], 2, S2.FILE), (b"a", 3, S2.FILE)], check=False))]),
    ("order", [((1, S3.ENTRIES_SUB + H), S3.folder_entries(EHK, H, [(PAIR[1], 3, S2.FILE), (PAIR[0], 2, S2.FILE)], check=False))]),
    ("count 0", [((1, S3.ENTRIES_SUB + OTHER), S3.folder_entries(EHK, OTHER, [], check=False))]),
    ("count 17", [((1, S3.ENTRIES_SUB + OTHER), S3.folder_entries(EHK, OTHER, [(b"a", 2, S2.FILE)] * 17, check=False))]),
    ("summary", [((1, S3.SUMMARY_SUB), S3.folder_summary(1, 2, check=False))]),
    ("cover bit", [(S3.file_block_key(0, 0), S3.file_block(DEVICE_C, 0, [3], [], check=False))]),
    ("bit outside the groups", [(S3.file_block_key(0, 0), S3.file_block(DEVICE_C, 0, [40], [], check=False))]),
    ("block outside the groups", [(S3.file_block_key(0, 1), S3.file_block(DEVICE_C, 1, [4100], [], check=False))]),
    ("pack on a clear bit", [(S3.file_block_key(0, 0), S3.file_block(DEVICE_C, 0, [8], [(PACK, 140, 140)], check=False))]),
    ("live bytes", [(S3.file_block_key(0, 0), S3.file_block(DEVICE_C, 0, [PACK], [(PACK, 141, 140)], check=False))]),
    ("list order", [(S3.members_key(0, PACK), S3.pack_members([3, 2], check=False))]),
    ("list length", [(S3.members_key(0, PACK), S3.pack_members([3], check=False)[:7])]),
    ("list of no pack", [(S3.members_key(0, 3), S3.pack_members([3]))]),
]
PAGE_SEED = bytes([0x71] * 32)


def index_page_v3_txt(m):
    lines = m.header("Pages of index version 3 (docs/FORMAT.md §15.2-§15.5, §15.10), under root 0 of index-root-v3.txt.", [
        "LEVEL, RECORDS: decimal. Level 0: KEYn (text) ITEMID.SUB and VALUEn: a file block of device 0 (numbers 7, 8,",
        "9 and 10 held, pack 9), item 1's record, summary and an entry record of the two names of one hash of",
        "entry-hash.txt, a chunked file's record and segment, a packed file's record and pack 9's member list.",
        "Level 1: TOP (text) as index-root-v2.txt. BODY: the page's body. The page file: BODY in an envelope of",
        "kind 2, version 3, sealed with PAGEKEY, label \"DotSafe v2 index page\", context u8 LEVEL, nonce SEALN,",
        "padding from PADDINGSEED; FILESHA256.",
        "Records marked FAIL: BODY, a leaf, must be refused under root 0 for REASON (text).",
    ])
    for count, (level, entries) in enumerate([(0, LEAF), (1, INTERIOR)]):
        body = S2.index_page_v2(level, entries)
        key, nonce = bytes([0x98 + count] * 32), m.nonce_from(0x64 + count)
        file = envelope3(m, key, nonce, b"DotSafe v2 index page", u8(level), 2, body, m.stream(PAGE_SEED, P - len(body)))
        lines += V2.page_lines(m, count, level, entries, body, key, nonce, PAGE_SEED, file)
    for count, (reason, entries) in enumerate(PAGE_FAILS, start=2):
        lines += [f"COUNT = {count}", f"BODY = {S2.index_page_v2(0, entries).hex()}", f"REASON = {reason}", "FAIL", ""]
    return "\n".join(lines)


def texts(m):
    return {"entry-hash.txt": entry_hash_txt(m), "index-root-v3.txt": index_root_v3_txt(m),
            "index-page-v3.txt": index_page_v3_txt(m)}
