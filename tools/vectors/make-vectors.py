#!/usr/bin/env python3
"""Writes the DotSafe format test vectors of docs/FORMAT.md §10 from a second implementation.

This script is the independent implementation of the key schedule (§2.2), file names (§3.3),
the seal (§2.3) and the envelope (§4); structures.py beside it is the one of the index root and
pages (§5), records (§6) and the keyring file and export (§8). It shares no code with the Swift
sources: PBKDF2 is
hashlib's, HKDF-SHA256 is written here from RFC 5869 with `hmac`, base32 is the standard library's
(lowercased, padding removed), AES-256-GCM and the AES-256-CTR stream of §10.1 come from the
Python `cryptography` package.

Dependency: python3 (3.9 or later) and `cryptography` (Debian: python3-cryptography; PyPI:
`pip install cryptography`). Tested with cryptography 48.

Usage:
    tools/vectors/make-vectors.py            write keys.txt, seal.txt, recovery-code.txt, index-root.txt,
                                             index-page.txt, item-record.txt, chunk-segment.txt, keyring.txt
                                             and keyring-export.txt into Tests/VaultFormatTests/Vectors/
    tools/vectors/make-vectors.py --check    compare instead of writing; exit 1 on a difference
    tools/vectors/make-vectors.py --counts   print the pattern counts the Swift tests hard-code

Format 2 (§13): vectors2.py, with structures2.py, writes unlock-record.txt, index-root-v2.txt,
index-page-v2.txt, item-record-v2.txt, chunk-segment-v2.txt and seal-v2.txt.

Index version 3 (§15, a draft): vectors3.py, with structures3.py, writes entry-hash.txt,
index-root-v3.txt and index-page-v3.txt, FAIL records among them.

tiny-storage.txt (and the earlier releases' tiny-storage-format1.txt and
tiny-storage-index2.txt) is not written here: it is a regression vector of the Swift
implementation (it depends on the order of every random draw of the engine) and is regenerated
by the Swift test with DOTSAFE_WRITE_VECTORS=1.
"""

import base64
import hashlib
import hmac
import os
import struct
import sys

from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

import structures
import grants
import syncbase
import vectors2
import vectors3

HERE = os.path.dirname(os.path.abspath(__file__))
VECTORS = os.path.join(HERE, "..", "..", "Tests", "VaultFormatTests", "Vectors")

P = 262_144          # payload of one storage file (§1)
F = 262_192          # size of every storage file (§1, §3)


# --- primitives, as docs/FORMAT.md §1 defines them -------------------------------------------

def hkdf(ikm: bytes, info: bytes, length: int) -> bytes:
    """HKDF-SHA256 (RFC 5869) with an empty salt, i.e. HashLen zero bytes (RFC 5869 §2.2)."""
    prk = hmac.new(bytes(32), ikm, hashlib.sha256).digest()
    out, block, counter = b"", b"", 1
    while len(out) < length:
        block = hmac.new(prk, block + info + bytes([counter]), hashlib.sha256).digest()
        out += block
        counter += 1
    return out[:length]


def pbkdf2(password: bytes, salt: bytes, rounds: int, length: int) -> bytes:
    return hashlib.pbkdf2_hmac("sha256", password, salt, rounds, length)


def base32(raw: bytes) -> str:
    """RFC 4648 base32, lowercase alphabet, no padding."""
    return base64.b32encode(raw).decode("ascii").lower().rstrip("=")


def u8(v): return struct.pack("<B", v)
def u16(v): return struct.pack("<H", v)
def u32(v): return struct.pack("<I", v)
def u64(v): return struct.pack("<Q", v)


def stream(seed: bytes, n: int) -> bytes:
    """§10.1: the AES-256-CTR keystream, key = seed, initial counter block = 16 zero bytes."""
    encryptor = Cipher(algorithms.AES(seed), modes.CTR(bytes(16))).encryptor()
    return encryptor.update(bytes(n)) + encryptor.finalize()


def seal_with_nonce(key: bytes, nonce: bytes, label: bytes, context: bytes, plaintext: bytes) -> bytes:
    """§2.3 SEAL with a given N: returns ciphertext || tag."""
    assert len(nonce) == 24
    subkey = hkdf(key, b"DotSafe v1 subkey" + nonce[:12], 32)
    return AESGCM(subkey).encrypt(nonce[12:], plaintext, label + context)


def envelope(key: bytes, nonce: bytes, label: bytes, context: bytes, kind: int, body: bytes, padding: bytes) -> bytes:
    """§4: N || GCM(inner block), the inner block being version, kind, reserved, length, body, padding."""
    assert len(body) + len(padding) == P
    inner = u8(1) + u8(kind) + u16(0) + u32(len(body)) + body + padding
    file = nonce + seal_with_nonce(key, nonce, label, context, inner)
    assert len(file) == F
    return file


# --- keys and names (§2.1, §2.2, §3.3) --------------------------------------------------------

GRID = 5


def canonical_pattern(text: str) -> str:
    """Canonical notation of §2.1 from a spelling with upper case or spaces (no validation here
    beyond the shape of each point: the vectors use valid patterns)."""
    tokens = text.lower().replace(" ", "-").split("-")
    points = [t for t in tokens if t]
    for p in points:
        assert len(p) == 2 and p[0] in "abcde" and p[1] in "12345", p
    return "-".join(points)


def index_name(loc: bytes, slot: int, location: bytes = b"local") -> str:
    return base32(hkdf(loc, b"DotSafe v1 index name" + u8(slot) + location, 16))


def file_name(loc: bytes, nk: bytes, n: int) -> str:
    if n < 2:
        return index_name(loc, n)
    return base32(hkdf(nk, b"DotSafe v1 file name" + u64(n), 16))


KEY_CASES = [
    # (input spelling, salt, rounds)
    ("B2 C2 D3 D4 C4 B4 A5", bytes.fromhex("d07a5afe" * 8), 1000),
    ("c3-d2-e1-e2", bytes(range(32)), 1000),
]


def keys_txt() -> str:
    lines = [
        "# DotSafe key schedule and file names (docs/FORMAT.md §2.1, §2.2, §3.3, §10).",
        "# Written by tools/vectors/make-vectors.py (an independent Python implementation:",
        "# hashlib PBKDF2, HKDF-SHA256 from RFC 5869 with hmac, base32 from the standard library).",
        "# Vectors use ROUNDS = 1000 so that the test runs fast; keyrings require at least 600,000",
        "# (docs/FORMAT.md §8.1), which changes PK and everything after it, not the method.",
        "#",
        "# INPUT (text) is the pattern as typed; PATTERN (text) its canonical notation and",
        "# PATTERNBYTES the bytes fed to PBKDF2. SALT, PK, LOC, IK, NK in hex.",
        "# NAMEn (text) = name(n): n = 0, 1 are the index slots (location \"local\"), n >= 2 use NK.",
        "",
    ]
    for count, (spelling, salt, rounds) in enumerate(KEY_CASES):
        pattern = canonical_pattern(spelling)
        pattern_bytes = pattern.encode("ascii")
        pk = pbkdf2(pattern_bytes, salt, rounds, 32)
        loc = hkdf(pk, b"DotSafe v1 locator", 32)
        ik = hkdf(pk, b"DotSafe v1 index key", 32)
        nk = hkdf(pk, b"DotSafe v1 file names", 32)
        lines += [
            f"COUNT = {count}",
            f"INPUT = {spelling}",
            f"PATTERN = {pattern}",
            f"PATTERNBYTES = {pattern_bytes.hex()}",
            f"SALT = {salt.hex()}",
            f"ROUNDS = {rounds}",
            f"PK = {pk.hex()}",
            f"LOC = {loc.hex()}",
            f"IK = {ik.hex()}",
            f"NK = {nk.hex()}",
        ]
        for n in range(4):
            lines.append(f"NAME{n} = {file_name(loc, nk, n)}")
        lines.append("")
    return "\n".join(lines)


# --- one sealed chunk (§2.3, §4, §7.1) --------------------------------------------------------

SEAL_ITEM_KEY = bytes.fromhex("00112233445566778899aabbccddeeff" "0123456789abcdeffedcba9876543210")
SEAL_ITEM_ID = 0x1234_5678
SEAL_CHUNK_INDEX = 3
SEAL_NONCE = bytes(range(0xa0, 0xa0 + 24))
SEAL_TEXT = b"DotSafe chunk vector\n"
SEAL_PADDING_SEED = bytes([0x5e] * 32)


def seal_txt() -> str:
    padding = stream(SEAL_PADDING_SEED, P - len(SEAL_TEXT))
    context = u64(SEAL_ITEM_ID) + u64(SEAL_CHUNK_INDEX)
    file = envelope(SEAL_ITEM_KEY, SEAL_NONCE, b"DotSafe v1 chunk", context, 3, SEAL_TEXT, padding)
    return "\n".join([
        "# One chunk envelope (docs/FORMAT.md §2.3, §4, §7.1, §10), written by",
        "# tools/vectors/make-vectors.py with Python cryptography's AES-256-GCM.",
        "#",
        "# ITK: the item key. ITEMID, CHUNKINDEX: decimal; the seal context is u64 ITEMID || u64 CHUNKINDEX.",
        "# N: the 24-byte seal nonce. BODY: the chunk's content (its `length` bytes), hex.",
        "# PADDINGSEED: the rest of the inner block's body is the first P - len(BODY) bytes of the",
        "# deterministic stream of §10.1 with this seed.",
        "# FILESHA256: SHA-256 of the whole F = 262,192-byte file; HEAD, TAIL: its first and last 64 bytes.",
        "",
        "COUNT = 0",
        f"ITK = {SEAL_ITEM_KEY.hex()}",
        f"ITEMID = {SEAL_ITEM_ID}",
        f"CHUNKINDEX = {SEAL_CHUNK_INDEX}",
        f"N = {SEAL_NONCE.hex()}",
        f"BODY = {SEAL_TEXT.hex()}",
        f"PADDINGSEED = {SEAL_PADDING_SEED.hex()}",
        f"FILESIZE = {len(file)}",
        f"FILESHA256 = {hashlib.sha256(file).hexdigest()}",
        f"HEAD = {file[:64].hex()}",
        f"TAIL = {file[-64:].hex()}",
        "",
    ])


# --- recovery codes (§8.3) ---------------------------------------------------------------------

def recovery_code(kdf: bytes, salt: bytes) -> list:
    """§8.3: 42 bytes in base32, 17 groups of 4 characters, each followed by its check character."""
    body = u8(1) + kdf + salt
    raw = body + hashlib.sha256(b"DotSafe v1 recovery code" + body).digest()[:4]
    text = base32(raw)
    assert len(text) == 68
    alphabet = "abcdefghijklmnopqrstuvwxyz234567"
    groups = []
    for g in range(17):
        data = text[4 * g:4 * g + 4]
        check = hashlib.sha256(b"DotSafe v1 recovery group" + u8(g + 1) + data.encode("ascii")).digest()[0] >> 3
        groups.append(data + alphabet[check])
    return groups


def recovery_txt() -> str:
    records = [
        ("PBKDF2-HMAC-SHA256, 600,000 rounds", u8(1) + u32(600_000), bytes(range(32))),
        ("scrypt, N = 2^16, r = 8, p = 1", u8(2) + bytes([16, 8, 1, 0]), bytes.fromhex("d07a5afe") * 8),
    ]
    lines = [
        "# Recovery codes (docs/FORMAT.md §8.3), written by tools/vectors/make-vectors.py with",
        "# hashlib's SHA-256 and the standard library's base32.",
        "#",
        "# KDF: the kdf byte and its 4 parameter bytes, hex. SALT: hex. GROUPS: the 17 groups in order,",
        "# separated by spaces (text, not hex).",
        "",
    ]
    for count, (what, kdf, salt) in enumerate(records):
        lines += [f"# {what}", f"COUNT = {count}", f"KDF = {kdf.hex()}", f"SALT = {salt.hex()}",
                  f"GROUPS = {' '.join(recovery_code(kdf, salt))}", ""]
    return "\n".join(lines)


# --- structures (§5, §6, §8): byte layouts from structures.py ------------------------------------

def nonce_from(first: int) -> bytes:
    """24 recognisable bytes first, first+1, …: a nonce recorded in a structure."""
    return bytes((first + i) & 0xff for i in range(24))


def list_field(items) -> str:
    return " ".join(items)


def header(title: str, fields: list) -> list:
    return [f"# {title}", "# Written by tools/vectors/make-vectors.py from the layouts of tools/vectors/structures.py;",
            "# fields are hex unless said otherwise.", "#"] + [f"# {line}" for line in fields] + [""]


ROOT_CASES = [
    # generation, VK, nextFileNumber, nextItemID, coverCount, groups, releasing, pages
    (1, bytes(range(32)), 16, 2, 2, [(0, 1)], [], []),
    (258, bytes(range(0x40, 0x60)), 112, 1000, 5, [(0, 2), (3, 1), (5, 2)], [32, 47],
     [(7, nonce_from(0xc0)), (16, nonce_from(0xd0)), (90, nonce_from(0xe0))]),
]
ROOT_PADDING_SEED = bytes([0x6b] * 32)


def index_root_txt() -> str:
    _, salt, rounds = KEY_CASES[0]
    ik = hkdf(pbkdf2(canonical_pattern(KEY_CASES[0][0]).encode(), salt, rounds, 32), b"DotSafe v1 index key", 32)
    lines = header("Index roots (docs/FORMAT.md §5.1, §2.3, §4, §10).", [
        "GENERATION, NEXTFILENUMBER, NEXTITEMID, COVERCOUNT: decimal. VK: the vault key.",
        "GROUPS (text): owned groups as FIRST+COUNT, space-separated. RELEASING (text): decimal file numbers.",
        "PAGES (text): FILENUMBER:N (N in hex), in order. BODY: the root's body.",
        "The slot file: BODY sealed in an envelope of kind 1 with IK (keys.txt record 0), label",
        "\"DotSafe v1 index root\", context u8 SLOT (= GENERATION mod 2), seal nonce SEALN, padding the first",
        "P - len(BODY) bytes of the stream of §10.1 with seed PADDINGSEED. SLOTSHA256: SHA-256 of the F-byte file.",
    ])
    for count, (generation, vk, next_file, next_item, covers, groups, releasing, pages) in enumerate(ROOT_CASES):
        body = structures.index_root(generation, vk, next_file, next_item, covers, groups, releasing, pages)
        slot = generation % 2
        seal_nonce = nonce_from(0x30 + count)
        file = envelope(ik, seal_nonce, b"DotSafe v1 index root", u8(slot), 1, body, stream(ROOT_PADDING_SEED, P - len(body)))
        lines += [
            f"COUNT = {count}",
            f"GENERATION = {generation}",
            f"VK = {vk.hex()}",
            f"NEXTFILENUMBER = {next_file}",
            f"NEXTITEMID = {next_item}",
            f"COVERCOUNT = {covers}",
            f"GROUPS = {list_field(f'{first}+{n}' for first, n in groups)}",
            f"RELEASING = {list_field(str(n) for n in releasing)}",
            f"PAGES = {list_field(f'{n}:{nonce.hex()}' for n, nonce in pages)}",
            f"BODY = {body.hex()}",
            f"IK = {ik.hex()}",
            f"SLOT = {slot}",
            f"SEALN = {seal_nonce.hex()}",
            f"PADDINGSEED = {ROOT_PADDING_SEED.hex()}",
            f"SLOTSHA256 = {hashlib.sha256(file).hexdigest()}",
            "",
        ]
    return "\n".join(lines)


S = structures
ITEM_KEY = bytes(range(0x80, 0xa0))
T0 = 1_700_000_000_123_456_789
ITEM_CASES = [
    # name, kind, mode, uid, gid, rdev, atime, mtime, ctime, size, links, xattrs, extra
    ("root folder", S.FOLDER, 0o755, 0, 0, 0, T0, T0, T0, 0, [], [(b"user.color", b"blue")], {}),
    ("empty file, two links, time before 1970", S.FILE, 0o644, 1000, 1000, 0, -1_000_000_001, T0, T0 + 1, 0,
     [(1, b"a.txt"), (5, b"b")], [], {"item_key": ITEM_KEY, "layout": "empty"}),
    ("packed file", S.FILE, 0o4755, 1000, 100, 0, T0, T0, T0, 4000, [(1, "café.txt".encode())],
     [(b"user.bin", bytes([0, 0xff, 0])), (b"user.empty", b"")],
     {"item_key": ITEM_KEY, "layout": "packed", "member": (40, 8192, 4016, nonce_from(0x10))}),
    ("chunked file", S.FILE, 0o600, 0, 0, 0, T0, T0, T0, 10_000_000, [(1, b"big.bin")], [],
     {"item_key": bytes(reversed(ITEM_KEY)), "layout": "chunked"}),
    ("symbolic link", S.SYMLINK, 0o777, 0, 0, 0, T0, T0, T0, 8, [(5, b"link")], [], {"target": b"../a.txt"}),
    ("FIFO", S.FIFO, 0o600, 7, 8, 0, T0, T0, T0, 0, [(1, b"pipe")], [], {}),
    ("character device 1:3", S.CHARACTER_DEVICE, 0o666, 0, 0, 0x0103, T0, T0, T0, 0, [(1, b"null")], [], {}),
    ("block device 8:1", S.BLOCK_DEVICE, 0o660, 0, 6, 0x0801, T0, T0, T0, 0, [(1, b"sda1")], [], {}),
    ("socket", S.SOCKET, 0o755, 1, 1, 0, 0, 0, 0, 0, [(1, b"sock")], [], {}),
]


def item_records():
    return [S.item_record(kind, mode, uid, gid, rdev, at, mt, ct, size, links, xattrs, **extra)
            for _, kind, mode, uid, gid, rdev, at, mt, ct, size, links, xattrs, extra in ITEM_CASES]


def item_record_txt() -> str:
    lines = header("Item records (docs/FORMAT.md §6.1, §10).", [
        "WHAT (text): what the record shows. TYPE, UID, GID, RDEV, ATIME, MTIME, CTIME, SIZE: decimal.",
        "MODE (text): octal. LINKS (text): PARENTID:NAME (NAME in hex), space-separated.",
        "XATTRS (text): NAME:VALUE (both hex; an empty value is nothing after the colon), space-separated.",
        "Regular files: ITK, and LAYOUT (text: empty, packed, chunked); packed ones MEMBER (text):",
        "FILENUMBER:OFFSET:SEALEDLENGTH:N (decimal, N in hex). Symbolic links: TARGET.",
        "RECORD: the record's bytes.",
    ])
    for count, (case, record) in enumerate(zip(ITEM_CASES, item_records())):
        what, kind, mode, uid, gid, rdev, at, mt, ct, size, links, xattrs, extra = case
        lines += [f"COUNT = {count}", f"WHAT = {what}", f"TYPE = {kind}", f"MODE = {mode:o}", f"UID = {uid}", f"GID = {gid}",
                  f"RDEV = {rdev}", f"ATIME = {at}", f"MTIME = {mt}", f"CTIME = {ct}", f"SIZE = {size}",
                  f"LINKS = {list_field(f'{parent}:{name.hex()}' for parent, name in links)}",
                  f"XATTRS = {list_field(f'{name.hex()}:{value.hex()}' for name, value in xattrs)}"]
        if kind == S.FILE:
            lines += [f"ITK = {extra['item_key'].hex()}", f"LAYOUT = {extra['layout']}"]
            if extra["layout"] == "packed":
                number, offset, sealed, nonce = extra["member"]
                lines.append(f"MEMBER = {number}:{offset}:{sealed}:{nonce.hex()}")
        if kind == S.SYMLINK:
            lines.append(f"TARGET = {extra['target'].hex()}")
        lines += [f"RECORD = {record.hex()}", ""]
    return "\n".join(lines)


SEGMENT_CASES = [
    [(0, 100, nonce_from(0x40))],
    [(0, 100, nonce_from(0x50)), (5, 101, nonce_from(0x60)), (1023, 18, nonce_from(0x70))],
]


def chunk_segment_txt() -> str:
    lines = header("Chunk-map segments (docs/FORMAT.md §6.2, §10).", [
        "ENTRIES (text): INDEX:FILENUMBER:N (decimal, N in hex), space-separated. SEGMENT: the record's bytes.",
    ])
    for count, entries in enumerate(SEGMENT_CASES):
        lines += [f"COUNT = {count}",
                  f"ENTRIES = {list_field(f'{index}:{number}:{nonce.hex()}' for index, number, nonce in entries)}",
                  f"SEGMENT = {S.chunk_segment(entries).hex()}", ""]
    return "\n".join(lines)


def index_page_txt() -> str:
    records = item_records()
    page = [((1, 0), records[0]), ((2, 0), records[3]), ((2, 1), S.chunk_segment(SEGMENT_CASES[0])),
            ((2, 10), S.chunk_segment(SEGMENT_CASES[1])), ((3, 0), records[4]), ((0x1_0000_0001, 0), records[2])]
    lines = header("An index page (docs/FORMAT.md §5.2, §10).", [
        "RECORDS: decimal. KEYn (text): ITEMID.SUB (decimal). VALUEn: the record's value: item records of",
        "item-record.txt and segments of chunk-segment.txt. BODY: the page's body.",
        "",
    ])
    lines += ["COUNT = 0", f"RECORDS = {len(page)}"]
    for n, ((item, sub), value) in enumerate(page):
        lines += [f"KEY{n} = {item}.{sub}", f"VALUE{n} = {value.hex()}"]
    lines += [f"BODY = {S.index_page(page).hex()}", ""]
    return "\n".join(lines)


SALT_ITEM = ("dotsafe.pattern-salt", [("kdf", "pbkdf2-hmac-sha256"), ("rounds", "600000")], bytes.fromhex("d07a5afe" * 8))
KEYRING_CASES = [
    [SALT_ITEM],
    [SALT_ITEM, ("example.no-attributes", [], b"\x00"), ("example.large", [("note", "4096 bytes")], bytes(range(256)) * 16)],
]


def keyring_txt() -> str:
    lines = header("Keyring files (docs/FORMAT.md §8.1, §10).", [
        "ITEMS: decimal. TAGn (text). ATTRIBUTESn (text): NAME=VALUE pairs joined by ';' (nothing for none).",
        "SECRETn: the secret. FILE: the whole file, its SHA-256 checksum last.",
    ])
    for count, items in enumerate(KEYRING_CASES):
        lines += [f"COUNT = {count}", f"ITEMS = {len(items)}"]
        for n, (tag, attributes, secret) in enumerate(items):
            lines += [f"TAG{n} = {tag}", f"ATTRIBUTES{n} = {';'.join(f'{a}={v}' for a, v in attributes)}", f"SECRET{n} = {secret.hex()}"]
        lines += [f"FILE = {S.keyring_file(items).hex()}", ""]
    return "\n".join(lines)


EXPORT_PASSPHRASE = "correct horse battery staple"
EXPORT_ROUNDS = 1000
EXPORT_SALT = bytes(range(0x20, 0x40))
EXPORT_NONCE = nonce_from(0x90)


def keyring_export_txt() -> str:
    keyring = S.keyring_file(KEYRING_CASES[0])
    key = pbkdf2(EXPORT_PASSPHRASE.encode(), EXPORT_SALT, EXPORT_ROUNDS, 32)
    sealed = seal_with_nonce(key, EXPORT_NONCE, b"DotSafe v1 keyring export", b"", keyring)
    export = S.keyring_export(EXPORT_ROUNDS, EXPORT_SALT, EXPORT_NONCE, sealed)
    lines = header("A keyring export (docs/FORMAT.md §8.2, §2.3, §10).", [
        "PASSPHRASE (text, UTF-8). ROUNDS: decimal (1,000 for speed; DotSafe writes 600,000).",
        "KEYRING: the keyring file sealed (keyring.txt record 0). EXPORT: the whole export file.",
    ])
    lines += ["COUNT = 0", f"PASSPHRASE = {EXPORT_PASSPHRASE}", f"ROUNDS = {EXPORT_ROUNDS}", f"SALT = {EXPORT_SALT.hex()}",
              f"N = {EXPORT_NONCE.hex()}", f"KEYRING = {keyring.hex()}", f"EXPORT = {export.hex()}", ""]
    return "\n".join(lines)


# --- pattern counts (§2.1, R-SEC-6) -----------------------------------------------------------

def count_patterns(max_length: int, min_length: int = 4) -> int:
    """Valid patterns (king's moves, no point twice) of min_length … max_length points."""
    def extend(point, used, length):
        total = 1 if length >= min_length else 0
        if length == max_length:
            return total
        c, r = point
        for dc in (-1, 0, 1):
            for dr in (-1, 0, 1):
                nxt = (c + dc, r + dr)
                if (dc, dr) != (0, 0) and 0 <= nxt[0] < GRID and 0 <= nxt[1] < GRID and nxt not in used:
                    total += extend(nxt, used | {nxt}, length + 1)
        return total
    return sum(extend((c, r), {(c, r)}, 1) for c in range(GRID) for r in range(GRID))


def main() -> int:
    if "--counts" in sys.argv:
        for n in (4, 5, 6):
            print(f"patterns of at most {n} points: {count_patterns(n)}")
        return 0
    outputs = {"keys.txt": keys_txt(), "seal.txt": seal_txt(), "index-root.txt": index_root_txt(),
               "index-page.txt": index_page_txt(), "item-record.txt": item_record_txt(),
               "chunk-segment.txt": chunk_segment_txt(), "keyring.txt": keyring_txt(),
               "keyring-export.txt": keyring_export_txt(),
               "recovery-code.txt": recovery_txt(), **vectors2.texts(sys.modules[__name__]), **vectors3.texts(sys.modules[__name__]),
               **grants.texts(sys.modules[__name__]), **syncbase.texts(sys.modules[__name__])}
    # No trailing spaces (an empty list or comment line would leave one).
    outputs = {name: "\n".join(line.rstrip() for line in text.split("\n")) for name, text in outputs.items()}
    check = "--check" in sys.argv
    status = 0
    for name, text in outputs.items():
        path = os.path.join(VECTORS, name)
        if check:
            with open(path, encoding="utf-8") as f:
                if f.read() != text:
                    print(f"{name}: differs from what the script computes", file=sys.stderr)
                    status = 1
        else:
            with open(path, "w", encoding="utf-8") as f:
                f.write(text)
            print(f"wrote {os.path.relpath(path)}")
    return status


if __name__ == "__main__":
    sys.exit(main())
