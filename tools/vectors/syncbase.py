"""The sync vectors of docs/FORMAT.md §13.11: the remote's unlock and slot names, the sync base's
header (root extension tag 1), its stream and one sealed piece. Written from FORMAT.md alone.

make-vectors.py calls texts(m) with itself as m (HKDF, the seal, base32, the stream of §10.1).
"""

import hashlib

from structures import u8, u16, u32, u64, P, F
import vectors2 as V2
import structures2 as S2

REMOTE = b"remote"
PIECE_KEY = bytes(range(0x60, 0x80))
PIECE_SEED = bytes([0x5b] * 32)
ITEMS = [(1, 3, 0, b"", bytes([0x11] * 16)), (0x1234_5678_0000_0002, 7, 1, b"notes.txt", bytes([0x22] * 16))]
PINNED = [0x0000_0000_0000_0010, 0x0001_0000_0000_0011]
RECIPIENTS = [bytes(range(0x20, 0x40)), bytes(range(0x40, 0x60))]
RECORD_SEED = bytes([0x5c] * 32)


def name_hash(name):
    return hashlib.sha256(name).digest()[:16]


def stream():
    body = u32(len(ITEMS))
    for item_id, version, parent, name, digest in ITEMS:
        body += u64(item_id) + u64(version) + u64(parent) + name_hash(name) + digest
    body += u32(len(PINNED)) + b"".join(u64(f) for f in PINNED)
    return body


def sync_base_txt(m):
    loc, _ = V2.pattern_keys(m)
    unlock = m.base32(m.hkdf(loc, b"DotSafe v2 unlock name" + u8(len(REMOTE)) + REMOTE, 16))
    slots = [m.base32(m.hkdf(V2.RL, b"DotSafe v1 index name" + u8(s) + REMOTE, 16)) for s in (0, 1)]
    body = stream()
    nonce = m.nonce_from(0xc0)
    piece = V2.envelope2(m, PIECE_KEY, nonce, b"DotSafe v2 sync base", u32(0), 5, body, m.stream(PIECE_SEED, P - len(body)))
    piece_file = V2.S2.file_ref(1, 37)
    header = u64(12) + u64(4) + u64(5) + u32(1) + u64(piece_file) + PIECE_KEY
    # The remote's unlock record (§13.11): VK, RL and FileRef of unlock-record.txt's, the
    # owner's identity (tag 16) and two recipients (tag 1025), sealed with IK for "remote".
    _, ik = V2.pattern_keys(m)
    tags = [(1, V2.VK), (2, V2.RL), (3, u64(V2.UNLOCK_FILE)), (16, V2.IDENTITY), (1025, b"".join(RECIPIENTS))]
    record = S2.unlock_record(1, tags)
    record_nonce = m.nonce_from(0xc8)
    record_file = V2.envelope2(m, ik, record_nonce, b"DotSafe v2 unlock", u8(len(REMOTE)) + REMOTE, 4, record,
                               m.stream(RECORD_SEED, P - len(record)))
    lines = m.header("Sync: the remote's index names and the sync base (docs/FORMAT.md §13.11).", [
        "REMOTEUNLOCK (text): the unlock record's name at location \"remote\" from keys.txt record 0's LOC;",
        "REMOTESLOT0, REMOTESLOT1 (text): the remote's root slots from RL of unlock-record.txt.",
        "ITEMS (text): ITEMID:VERSION:PARENT:NAME:DIGEST (decimal, NAME as text, DIGEST hex); PINNED (text): raw FileRefs",
        "(decimal); the base's name hashes are SHA-256(NAME)[0..16].",
        "STREAM: the base's stream. PIECEKEY, SEALN, PADDINGSEED: its one piece (kind 5, version 2), label",
        "\"DotSafe v2 sync base\", context u32 0; PIECESHA256. HEADER: extension tag 1's value (generations 12, 4, 5",
        "and the piece at FileRef 1.37).",
        "RECORDBODY: the remote's unlock record (VK, RL, FILEREF and IDENTITY of unlock-record.txt, tag 1025 =",
        "RECIPIENT0 || RECIPIENT1); RECORDN, RECORDSEED: its envelope (kind 4, version 2) sealed with IK, label",
        "\"DotSafe v2 unlock\", context lp8(\"remote\"); RECORDSHA256: the file's SHA-256.",
    ])
    items = " ".join(f"{i}:{v}:{p}:{n.decode()}:{d.hex()}" for i, v, p, n, d in ITEMS)
    lines += ["COUNT = 0", f"REMOTEUNLOCK = {unlock}", f"REMOTESLOT0 = {slots[0]}", f"REMOTESLOT1 = {slots[1]}",
              f"ITEMS = {items}", f"PINNED = {' '.join(str(f) for f in PINNED)}", f"STREAM = {body.hex()}",
              f"PIECEKEY = {PIECE_KEY.hex()}", f"SEALN = {nonce.hex()}", f"PADDINGSEED = {PIECE_SEED.hex()}",
              f"PIECESHA256 = {hashlib.sha256(piece).hexdigest()}", f"HEADER = {header.hex()}",
              f"RECIPIENT0 = {RECIPIENTS[0].hex()}", f"RECIPIENT1 = {RECIPIENTS[1].hex()}", f"RECORDBODY = {record.hex()}",
              f"RECORDN = {record_nonce.hex()}", f"RECORDSEED = {RECORD_SEED.hex()}",
              f"RECORDSHA256 = {hashlib.sha256(record_file).hexdigest()}", ""]
    return "\n".join(lines)


def texts(m):
    return {"sync-base.txt": sync_base_txt(m)}
