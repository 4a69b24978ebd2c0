"""The format-2 vectors of docs/FORMAT.md §13.10, from the layouts of structures2.py.

make-vectors.py calls texts(m) with itself as m: the primitives (HKDF, the seal, base32, the
stream of §10.1) are the ones written there from RFC 5869 and the `cryptography` package.
"""

import hashlib

import structures2 as S2
from structures import u8, u16, u32, u64, P, F

T0 = 1_700_000_000_123_456_789
LOCAL = b"local"


def envelope2(m, key, nonce, label, context, kind, body, padding):
    """§13.2: the envelope of §4 with version 2 in its inner block."""
    assert len(body) + len(padding) == P
    inner = u8(2) + u8(kind) + u16(0) + u32(len(body)) + body + padding
    file = nonce + m.seal_with_nonce(key, nonce, label, context, inner)
    assert len(file) == F
    return file


def ref_text(ref):
    return f"{ref >> S2.NUMBER_BITS}.{ref & ((1 << S2.NUMBER_BITS) - 1)}"


def pattern_keys(m):
    spelling, salt, rounds = m.KEY_CASES[0]
    pk = m.pbkdf2(m.canonical_pattern(spelling).encode(), salt, rounds, 32)
    return m.hkdf(pk, b"DotSafe v1 locator", 32), m.hkdf(pk, b"DotSafe v1 index key", 32)


def lines_for(m, title, fields):
    return m.header(title, fields)


# --- §13.3 unlock record -----------------------------------------------------------------------

VK = bytes(range(0xa0, 0xc0))
RL = bytes(range(0xc0, 0xe0))
IDENTITY = bytes(range(0xe0, 0x100))
UNLOCK_FILE = S2.file_ref(0, 7)
UNLOCK_SEED = bytes([0x75] * 32)


def unlock_txt(m):
    loc, ik = pattern_keys(m)
    tags = [(1, VK), (2, RL), (3, u64(UNLOCK_FILE)), (16, IDENTITY), (1024, b"optional")]
    body = S2.unlock_record(1, tags)
    nonce = m.nonce_from(0x10)
    context = m.u8(len(LOCAL)) + LOCAL
    file = envelope2(m, ik, nonce, b"DotSafe v2 unlock", context, 4, body, m.stream(UNLOCK_SEED, P - len(body)))
    rk = m.hkdf(VK, b"DotSafe v2 root key", 32)
    lines = m.header("The owner's unlock record and the keys it leads to (docs/FORMAT.md §13.1-§13.3, §13.10).", [
        "LOC, IK: of keys.txt record 0. UNLOCKNAME (text): the record's file name at location \"local\".",
        "VK, RL, IDENTITY: the record's values; FILEREF (text): DEVICE.NUMBER of its own file; OPTIONAL: tag 1024's value.",
        "BODY: the record's body. SEALN, PADDINGSEED: the envelope (kind 4, version 2) sealed with IK, label",
        "\"DotSafe v2 unlock\", context lp8(\"local\"); FILESHA256: its SHA-256.",
        "RK: the root key from VK. SLOTNAME0, SLOTNAME1 (text): the root slots' names, from RL.",
    ])
    lines += ["COUNT = 0", f"LOC = {loc.hex()}", f"IK = {ik.hex()}",
              f"UNLOCKNAME = {m.base32(m.hkdf(loc, b'DotSafe v2 unlock name' + context, 16))}",
              f"VK = {VK.hex()}", f"RL = {RL.hex()}", f"IDENTITY = {IDENTITY.hex()}", f"FILEREF = {ref_text(UNLOCK_FILE)}",
              f"OPTIONAL = {b'optional'.hex()}", f"BODY = {body.hex()}", f"SEALN = {nonce.hex()}",
              f"PADDINGSEED = {UNLOCK_SEED.hex()}", f"FILESHA256 = {hashlib.sha256(file).hexdigest()}",
              f"RK = {rk.hex()}", f"SLOTNAME0 = {m.index_name(RL, 0)}", f"SLOTNAME1 = {m.index_name(RL, 1)}", ""]
    return "\n".join(lines)


# --- §13.4, §13.5 roots ------------------------------------------------------------------------

MOVE_FORMER_RL, MOVE_RL, MOVE_NK = bytes([0xa1] * 32), bytes([0xb2] * 32), bytes([0xc3] * 32)
MOVE_SLOT_FILES = (20, 21)
NAMES_MOVE = MOVE_FORMER_RL + MOVE_RL + MOVE_NK + u64(MOVE_SLOT_FILES[0]) + u64(MOVE_SLOT_FILES[1])
FORMER_REMOTE_RL, FORMER_REMOTE_NK = bytes([0xd4] * 32), bytes([0xe5] * 32)
FORMER_REMOTE_NAMES = FORMER_REMOTE_RL + FORMER_REMOTE_NK
DEVICE_A = {"id": bytes(range(0x10, 0x20)), "nk": bytes(range(0x20, 0x40)), "prefix": 0x1234abcd, "counter": 9,
            "next_file": 16, "covers": 3, "groups": [(0, 1)], "releasing": [], "name": b"laptop"}
DEVICE_B = {"id": bytes(range(0x50, 0x60)), "nk": bytes(range(0x60, 0x80)), "prefix": 0, "counter": 1000,
            "next_file": 96, "covers": 6, "groups": [(0, 2), (4, 1)], "releasing": [48, 63], "name": "büro".encode()}
# Tag 1025's entries: target (another device's file), staged (the writer's), SHA-256(staged)[0..16].
STAGED = [(S2.file_ref(1, 20), S2.file_ref(0, 12), bytes(range(0xa0, 0xb0))),
          (S2.file_ref(1, 70), S2.file_ref(0, 13), hashlib.sha256(b"\x5a" * F).digest()[:16])]
ROOT_CASES = [
    # generation, writer, devices, specials, level, top, extensions
    (1, 0, [DEVICE_A], [(S2.file_ref(0, 7), 1, bytes(range(16)))], 0,
     [(1, 0, S2.file_ref(0, 8), bytes([0x11] * 32))], []),
    (258, 1, [DEVICE_A, DEVICE_B], [(S2.file_ref(0, 7), 1, bytes(range(16))), (S2.file_ref(1, 8), 2, bytes(range(16, 32)))], 1,
     [(1, 0, S2.file_ref(0, 9), bytes([0x22] * 32)), (0x1234abcd_00000005, 3, S2.file_ref(1, 70), bytes([0x33] * 32))],
     [(1024, b""), (2000, b"room for later")]),
    # An upgraded vault's pattern change in progress (§13.12): the new record (role 1), the old one
    # (role 3) and extension tag 3, names move: former RL, RL', NKd', slot files 0.20 and 0.21.
    (9, 0, [DEVICE_B], [(S2.file_ref(0, 17), 1, bytes(range(32, 48))), (S2.file_ref(0, 8), 3, bytes(range(48, 64)))], 0,
     [(1, 0, S2.file_ref(0, 9), bytes([0x44] * 32))],
     [(3, NAMES_MOVE), (1024, b"")]),
    # The same change in a synced vault of two devices (§13.12, "with sync"): tag 2, the old
    # pattern's remote record name, and tag 4, the former remote names: RL, then NKd.
    (10, 0, [DEVICE_B, DEVICE_A], [(S2.file_ref(0, 17), 1, bytes(range(32, 48))), (S2.file_ref(0, 8), 3, bytes(range(48, 64)))], 0,
     [(1, 0, S2.file_ref(0, 9), bytes([0x44] * 32)), (0x1234abcd_00000001, 0, S2.file_ref(1, 9), bytes([0x55] * 32))],
     [(2, bytes(range(64, 80))), (3, NAMES_MOVE), (4, FORMER_REMOTE_NAMES)]),
    # A merge's commit with staged downloads (§13.11, "Downloads are staged"): tag 1025 lists two
    # files of device 1 that the root references, staged in free data files of the writer (0).
    (11, 0, [DEVICE_A, DEVICE_B], [(S2.file_ref(0, 7), 1, bytes(range(16)))], 0,
     [(1, 0, S2.file_ref(0, 9), bytes([0x66] * 32))],
     [(1025, S2.staged_downloads(STAGED))]),
]
ROOT_SEED = bytes([0x72] * 32)


def root_fields(m, generation, writer, devices, specials, level, top, extensions):
    """A root's fields as index-root-v2.txt (and index-root-v3.txt) give them."""
    lines = [f"GENERATION = {generation}", f"WRITER = {writer}", f"DEVICES = {len(devices)}"]
    for k, d in enumerate(devices):
        lines += [f"DEVICE{k}ID = {d['id'].hex()}", f"DEVICE{k}NK = {d['nk'].hex()}", f"DEVICE{k}PREFIX = {d['prefix']}",
                  f"DEVICE{k}COUNTER = {d['counter']}", f"DEVICE{k}NEXTFILE = {d['next_file']}", f"DEVICE{k}COVERS = {d['covers']}",
                  f"DEVICE{k}GROUPS = {m.list_field(f'{a}+{n}' for a, n in d['groups'])}",
                  f"DEVICE{k}RELEASING = {m.list_field(str(n) for n in d['releasing'])}",
                  f"DEVICE{k}NAME = {d['name'].decode()}"]
    return lines + [f"SPECIAL = {m.list_field(f'{ref_text(ref)}:{role}:{name.hex()}' for ref, role, name in specials)}",
                    f"LEVEL = {level}",
                    f"TOP = {m.list_field(f'{item}:{sub}:{ref_text(ref)}:{key.hex()}' for item, sub, ref, key in top)}",
                    f"EXTENSIONS = {m.list_field(f'{tag}:{value.hex()}' for tag, value in extensions)}"]


def index_root_v2_txt(m):
    rk = m.hkdf(VK, b"DotSafe v2 root key", 32)
    lines = m.header("Format-2 index roots (docs/FORMAT.md §13.4, §13.5, §13.10).", [
        "GENERATION, WRITER, DEVICES, LEVEL: decimal. For each device k: DEVICEkID, DEVICEkNK, DEVICEkNAME (UTF-8);",
        "DEVICEkPREFIX, DEVICEkCOUNTER, DEVICEkNEXTFILE, DEVICEkCOVERS (decimal); DEVICEkGROUPS (text) FIRST+COUNT;",
        "DEVICEkRELEASING (text) decimal. SPECIAL (text): DEVICE.NUMBER:ROLE:NAME (NAME in hex).",
        "TOP (text): ITEMID:SUB:DEVICE.NUMBER:PAGEKEY. EXTENSIONS (text): TAG:VALUE (hex). BODY: the root's body.",
        "The slot file: BODY in an envelope of kind 1, version 2, sealed with RK (unlock-record.txt), label",
        "\"DotSafe v2 index root\", context u8 SLOT (= GENERATION mod 2: the original), nonce SEALN, padding from",
        "PADDINGSEED; SLOTSHA256. COPYSHA256: the same root sealed for the other slot with nonce COPYN.",
        "Where the root has extension tag 3 (names move): MOVEFORMERRL, MOVERL, MOVENK and MOVESLOTFILES (text,",
        "DEVICE.NUMBER), the fields of its value. Where it has extension tag 4 (former remote names):",
        "FORMERREMOTERL and FORMERREMOTENK, the fields of its value. Where it has extension tag 1025 (staged",
        "downloads): STAGED (text) TARGET:STAGED:DIGEST, TARGET and STAGED as DEVICE.NUMBER, DIGEST in hex.",
    ])
    for count, (generation, writer, devices, specials, level, top, extensions) in enumerate(ROOT_CASES):
        body = S2.index_root_v2(generation, writer, devices, specials, level, top, extensions)
        slot = generation % 2
        nonce, copy_nonce = m.nonce_from(0x40 + count), m.nonce_from(0x50 + count)
        padding = m.stream(ROOT_SEED, P - len(body))
        file = envelope2(m, rk, nonce, b"DotSafe v2 index root", u8(slot), 1, body, padding)
        copy = envelope2(m, rk, copy_nonce, b"DotSafe v2 index root", u8(1 - slot), 1, body, padding)
        lines += [f"COUNT = {count}"] + root_fields(m, generation, writer, devices, specials, level, top, extensions)
        lines += [f"BODY = {body.hex()}", f"RK = {rk.hex()}", f"SLOT = {slot}", f"SEALN = {nonce.hex()}", f"COPYN = {copy_nonce.hex()}",
                  f"PADDINGSEED = {ROOT_SEED.hex()}", f"SLOTSHA256 = {hashlib.sha256(file).hexdigest()}",
                  f"COPYSHA256 = {hashlib.sha256(copy).hexdigest()}"]
        if any(tag == 3 for tag, _ in extensions):
            lines += [f"MOVEFORMERRL = {MOVE_FORMER_RL.hex()}", f"MOVERL = {MOVE_RL.hex()}", f"MOVENK = {MOVE_NK.hex()}",
                      f"MOVESLOTFILES = {m.list_field(ref_text(S2.file_ref(0, n)) for n in MOVE_SLOT_FILES)}"]
        if any(tag == 4 for tag, _ in extensions):
            lines += [f"FORMERREMOTERL = {FORMER_REMOTE_RL.hex()}", f"FORMERREMOTENK = {FORMER_REMOTE_NK.hex()}"]
        if any(tag == 1025 for tag, _ in extensions):
            lines += [f"STAGED = {m.list_field(f'{ref_text(t)}:{ref_text(s)}:{d.hex()}' for t, s, d in STAGED)}"]
        lines += [""]
    return "\n".join(lines)


# --- §13.7, §13.8 records ------------------------------------------------------------------------

ITK = bytes(range(0x80, 0xa0))
ITEM_CASES = [
    # what, kind, mode, uid, gid, rdev, size, version, changedBy, links, xattrs, extra
    ("root folder", S2.FOLDER, 0o755, 0, 0, 0, 0, 12, 0, [], [(b"user.color", b"blue")], {}),
    ("empty file", S2.FILE, 0o644, 1000, 1000, 0, 0, 1, 1, [(1, b"a.txt")], [], {"layout": "empty"}),
    ("packed file", S2.FILE, 0o4755, 1000, 100, 0, 4000, 3, 0, [(1, "café.txt".encode())], [(b"user.bin", bytes([0, 0xff]))],
     {"layout": "packed", "member": (S2.file_ref(1, 40), 8192, 4040, bytes([0x44] * 32))}),
    ("chunked file", S2.FILE, 0o600, 0, 0, 0, 10_000_000, 2**40, 0, [(1, b"big.bin")], [], {"layout": "chunked"}),
    ("upgraded packed file (format-1 member, ITK)", S2.FILE, 0o644, 0, 0, 0, 100, 5, 0, [(1, b"old.txt")], [],
     {"layout": "packed1", "item_key": ITK, "member": (S2.file_ref(0, 33), 0, 116, bytes(range(0x10, 0x28)))}),
    ("upgraded chunked file (ITK)", S2.FILE, 0o644, 0, 0, 0, 600_000, 6, 0, [(1, b"old.bin")], [],
     {"layout": "chunked", "item_key": bytes(reversed(ITK))}),
    ("symbolic link", S2.SYMLINK, 0o777, 0, 0, 0, 8, 1, 0, [(1, b"link")], [], {"target": b"../a.txt"}),
]


def item_records_v2():
    return [S2.item_record_v2(kind, mode, uid, gid, rdev, T0, T0, T0 + 1, size, version, changed, links, xattrs, **extra)
            for _, kind, mode, uid, gid, rdev, size, version, changed, links, xattrs, extra in ITEM_CASES]


def item_record_v2_txt(m):
    lines = m.header("Format-2 item records (docs/FORMAT.md §13.8, §13.10).", [
        "WHAT (text). TYPE, UID, GID, RDEV, ATIME, MTIME, CTIME, SIZE, VERSION, CHANGEDBY: decimal. MODE (text): octal.",
        "LINKS, XATTRS (text): as item-record.txt. Regular files: LAYOUT (text: empty, packed, chunked, packed1),",
        "ITK when the record keeps a format-1 item key; MEMBER (text) DEVICE.NUMBER:OFFSET:SEALEDLENGTH:SECRET",
        "(the member key for packed, the format-1 N for packed1). Symbolic links: TARGET. RECORD: the record's bytes.",
    ])
    for count, (case, record) in enumerate(zip(ITEM_CASES, item_records_v2())):
        what, kind, mode, uid, gid, rdev, size, version, changed, links, xattrs, extra = case
        lines += [f"COUNT = {count}", f"WHAT = {what}", f"TYPE = {kind}", f"MODE = {mode:o}", f"UID = {uid}", f"GID = {gid}",
                  f"RDEV = {rdev}", f"ATIME = {T0}", f"MTIME = {T0}", f"CTIME = {T0 + 1}", f"SIZE = {size}",
                  f"VERSION = {version}", f"CHANGEDBY = {changed}",
                  f"LINKS = {m.list_field(f'{parent}:{name.hex()}' for parent, name in links)}",
                  f"XATTRS = {m.list_field(f'{name.hex()}:{value.hex()}' for name, value in xattrs)}"]
        if kind == S2.FILE:
            lines.append(f"LAYOUT = {extra['layout']}")
            if extra.get("item_key"):
                lines.append(f"ITK = {extra['item_key'].hex()}")
            if "member" in extra:
                ref, offset, sealed, secret = extra["member"]
                lines.append(f"MEMBER = {ref_text(ref)}:{offset}:{sealed}:{secret.hex()}")
        if kind == S2.SYMLINK:
            lines.append(f"TARGET = {extra['target'].hex()}")
        lines += [f"RECORD = {record.hex()}", ""]
    return "\n".join(lines)


SEGMENT_CASES = [
    [(0, 2, S2.file_ref(0, 100), bytes([0x55] * 32))],
    [(0, 1, S2.file_ref(0, 100), bytes(range(0x50, 0x68))), (5, 2, S2.file_ref(1, 101), bytes([0x66] * 32)),
     (1023, 2, S2.file_ref(0, 18), bytes([0x77] * 32))],
]


def chunk_segment_v2_txt(m):
    lines = m.header("Format-2 chunk-map segments (docs/FORMAT.md §13.7, §13.10).", [
        "ENTRIES (text): INDEX:SCHEME:DEVICE.NUMBER:SECRET (the chunk key for scheme 2, the format-1 N for scheme 1).",
        "SEGMENT: the record's bytes.",
    ])
    for count, entries in enumerate(SEGMENT_CASES):
        lines += [f"COUNT = {count}",
                  f"ENTRIES = {m.list_field(f'{i}:{s}:{ref_text(ref)}:{secret.hex()}' for i, s, ref, secret in entries)}",
                  f"SEGMENT = {S2.chunk_segment_v2(entries).hex()}", ""]
    return "\n".join(lines)


# --- §13.6 pages, §13.7 chunk and member seals ----------------------------------------------------

PAGE_SEED = bytes([0x70] * 32)


def page_lines(m, count, level, entries, body, key, nonce, seed, file):
    """A page's fields as index-page-v2.txt (and index-page-v3.txt) give them."""
    lines = [f"COUNT = {count}", f"LEVEL = {level}", f"RECORDS = {len(entries)}"]
    if level == 0:
        for n, ((item, sub), value) in enumerate(entries):
            lines += [f"KEY{n} = {item}.{sub}", f"VALUE{n} = {value.hex()}"]
    else:
        lines.append(f"TOP = {m.list_field(f'{item}:{sub}:{ref_text(ref)}:{k.hex()}' for item, sub, ref, k in entries)}")
    return lines + [f"BODY = {body.hex()}", f"PAGEKEY = {key.hex()}", f"SEALN = {nonce.hex()}",
                    f"PADDINGSEED = {seed.hex()}", f"FILESHA256 = {hashlib.sha256(file).hexdigest()}", ""]


def index_page_v2_txt(m):
    records = item_records_v2()
    leaf = [((1, 0), records[0]), ((2, 0), records[3]), ((2, 1), S2.chunk_segment_v2(SEGMENT_CASES[0])),
            ((3, 0), records[6]), ((0x1234abcd_00000001, 0), records[2])]
    interior = [(1, 0, S2.file_ref(0, 9), bytes([0x22] * 32)), (0x1234abcd_00000005, 3, S2.file_ref(1, 70), bytes([0x33] * 32))]
    lines = m.header("Format-2 index pages (docs/FORMAT.md §13.6, §13.10).", [
        "LEVEL, RECORDS: decimal. Level 0: KEYn (text) ITEMID.SUB and VALUEn (records of item-record-v2.txt and",
        "segments of chunk-segment-v2.txt). Level 1: TOP (text) as index-root-v2.txt. BODY: the page's body.",
        "The page file: BODY in an envelope of kind 2, version 2, sealed with PAGEKEY, label \"DotSafe v2 index page\",",
        "context u8 LEVEL, nonce SEALN, padding from PADDINGSEED; FILESHA256.",
    ])
    for count, (level, entries) in enumerate([(0, leaf), (1, interior)]):
        body = S2.index_page_v2(level, entries)
        key, nonce = bytes([0x90 + count] * 32), m.nonce_from(0x60 + count)
        file = envelope2(m, key, nonce, b"DotSafe v2 index page", u8(level), 2, body, m.stream(PAGE_SEED, P - len(body)))
        lines += page_lines(m, count, level, entries, body, key, nonce, PAGE_SEED, file)
    return "\n".join(lines)


def seal_v2_txt(m):
    chunk_key, chunk_nonce, index = bytes(range(0x30, 0x50)), m.nonce_from(0xa0), 3
    body = b"DotSafe chunk vector\n"
    chunk = envelope2(m, chunk_key, chunk_nonce, b"DotSafe v2 chunk", u64(index), 3, body, m.stream(bytes([0x5e] * 32), P - len(body)))
    member_key, member_nonce, content = bytes(range(0x40, 0x60)), m.nonce_from(0xb0), b"Hello, DotSafe!\n"
    member = member_nonce + m.seal_with_nonce(member_key, member_nonce, b"DotSafe v2 member", b"", content)
    lines = m.header("Format-2 chunk and pack member seals (docs/FORMAT.md §13.7, §13.10).", [
        "CHUNKKEY, CHUNKINDEX (decimal), SEALN, BODY, PADDINGSEED: a chunk envelope (kind 3, version 2), label",
        "\"DotSafe v2 chunk\", context u64 CHUNKINDEX; FILESHA256, HEAD and TAIL (its first and last 64 bytes).",
        "MEMBERKEY, MEMBERN, CONTENT: a member, label \"DotSafe v2 member\", no context; MEMBER: N || ciphertext || tag.",
    ])
    lines += ["COUNT = 0", f"CHUNKKEY = {chunk_key.hex()}", f"CHUNKINDEX = {index}", f"SEALN = {chunk_nonce.hex()}",
              f"BODY = {body.hex()}", f"PADDINGSEED = {bytes([0x5e] * 32).hex()}",
              f"FILESHA256 = {hashlib.sha256(chunk).hexdigest()}", f"HEAD = {chunk[:64].hex()}", f"TAIL = {chunk[-64:].hex()}",
              f"MEMBERKEY = {member_key.hex()}", f"MEMBERN = {member_nonce.hex()}", f"CONTENT = {content.hex()}",
              f"MEMBER = {member.hex()}", ""]
    return "\n".join(lines)


def texts(m):
    return {"unlock-record.txt": unlock_txt(m), "index-root-v2.txt": index_root_v2_txt(m),
            "item-record-v2.txt": item_record_v2_txt(m), "chunk-segment-v2.txt": chunk_segment_v2_txt(m),
            "index-page-v2.txt": index_page_v2_txt(m), "seal-v2.txt": seal_v2_txt(m)}
