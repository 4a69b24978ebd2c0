"""The grant and contact-code vectors of docs/FORMAT.md §14.6.

make-vectors.py calls texts(m) with itself as m (HKDF with an empty salt, base32, the stream of
§10.1, the header). HPKE (RFC 9180) is written here from the RFC's pseudocode over the
`cryptography` package's X25519 and AESGCM and the standard library's hmac; bech32m from BIP 173
and BIP 350. Neither shares code with the Swift implementation.
"""

import hashlib
import hmac
import struct

from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey, X25519PublicKey
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

F = 262_192


def header(title, fields):
    return [f"# {title}", "# Written by tools/vectors/make-vectors.py with tools/vectors/grants.py (HPKE and bech32m written",
            "# there from RFC 9180, BIP 173 and BIP 350); fields are hex unless said otherwise.", "#"] + [
            f"# {line}" for line in fields] + [""]


def be16(v): return struct.pack(">H", v)


# --- bech32m (BIP 173, BIP 350) and the contact code (§14.1) ---------------------------------

CHARSET = "qpzry9x8gf2tvdw0s3jn54khce6mua7l"
BECH32M = 0x2bc830a3
HRP = "dotsafe"


def polymod(values):
    gen = [0x3b6a57b2, 0x26508e6d, 0x1ea119fa, 0x3d4233dd, 0x2a1462b3]
    chk = 1
    for v in values:
        top = chk >> 25
        chk = (chk & 0x1ffffff) << 5 ^ v
        for i in range(5):
            if (top >> i) & 1:
                chk ^= gen[i]
    return chk


def hrp_expand(hrp):
    return [ord(c) >> 5 for c in hrp] + [0] + [ord(c) & 31 for c in hrp]


def to_groups(data):
    """8-bit bytes to 5-bit groups, big-endian, zero-padded (BIP 173's convertbits)."""
    acc, bits, out = 0, 0, []
    for b in data:
        acc = (acc << 8) | b
        bits += 8
        while bits >= 5:
            bits -= 5
            out.append((acc >> bits) & 31)
    if bits:
        out.append((acc << (5 - bits)) & 31)
    return out


def bech32m(hrp, data):
    check = polymod(hrp_expand(hrp) + data + [0] * 6) ^ BECH32M
    return hrp + "1" + "".join(CHARSET[d] for d in data + [(check >> 5 * (5 - i)) & 31 for i in range(6)])


def contact_code(public, code_type=1):
    return bech32m(HRP, [code_type] + to_groups(public))


def printed(code):
    """§14.1's printed form: dotsafe1, then the rest in groups of 5 joined by '-'."""
    rest = code[len(HRP) + 1:]
    return "-".join([HRP + "1"] + [rest[i:i + 5] for i in range(0, len(rest), 5)])


def swap_checked(code, position, replacement):
    out = code[:position] + replacement + code[position + 1:]
    assert out != code
    return out


# --- HPKE (RFC 9180), DHKEM(X25519, HKDF-SHA256), HKDF-SHA256, AES-256-GCM, Auth mode ---------

KEM_ID, KDF_ID, AEAD_ID = 0x0020, 0x0001, 0x0002
KEM_SUITE = b"KEM" + be16(KEM_ID)
HPKE_SUITE = b"HPKE" + be16(KEM_ID) + be16(KDF_ID) + be16(AEAD_ID)


def extract(salt, ikm):
    return hmac.new(salt, ikm, hashlib.sha256).digest()   # an empty key is HashLen zeros to HMAC


def expand(prk, info, length):
    out, block, counter = b"", b"", 1
    while len(out) < length:
        block = hmac.new(prk, block + info + bytes([counter]), hashlib.sha256).digest()
        out += block
        counter += 1
    return out[:length]


def labeled_extract(suite, salt, label, ikm):
    return extract(salt, b"HPKE-v1" + suite + label + ikm)


def labeled_expand(suite, prk, label, info, length):
    return expand(prk, be16(length) + b"HPKE-v1" + suite + label + info, length)


def public_of(sk):
    return X25519PrivateKey.from_private_bytes(sk).public_key().public_bytes(Encoding.Raw, PublicFormat.Raw)


def dh(sk, pk):
    out = X25519PrivateKey.from_private_bytes(sk).exchange(X25519PublicKey.from_public_bytes(pk))
    assert out != bytes(32)
    return out


def auth_setup_sender(pk_r, info, sk_s, sk_e):
    """SetupAuthS: enc and the key schedule's values (shared secret, key, base nonce, exporter secret)."""
    enc = public_of(sk_e)
    kem_context = enc + pk_r + public_of(sk_s)
    eae_prk = labeled_extract(KEM_SUITE, b"", b"eae_prk", dh(sk_e, pk_r) + dh(sk_s, pk_r))
    shared = labeled_expand(KEM_SUITE, eae_prk, b"shared_secret", kem_context, 32)
    context = (bytes([2]) + labeled_extract(HPKE_SUITE, b"", b"psk_id_hash", b"")
               + labeled_extract(HPKE_SUITE, b"", b"info_hash", info))
    secret = labeled_extract(HPKE_SUITE, shared, b"secret", b"")
    return {"enc": enc, "shared": shared, "key": labeled_expand(HPKE_SUITE, secret, b"key", context, 32),
            "base_nonce": labeled_expand(HPKE_SUITE, secret, b"base_nonce", context, 12),
            "exporter": labeled_expand(HPKE_SUITE, secret, b"exp", context, 32)}


def export(exporter, context, length):
    return labeled_expand(HPKE_SUITE, exporter, b"sec", context, length)


# --- grants (§14.3) --------------------------------------------------------------------------

SK_S = bytes(range(0xa0, 0xc0))
SK_R = bytes(range(0xc0, 0xe0))
VK = bytes(range(0x40, 0x60))
RL = bytes(range(0x60, 0x80))
NUMBER_BITS = 48
GRANT_CASES = [
    # location, salt G, ephemeral scalar, padding seed, FileRef (device, number), optional tags, role
    (b"local", bytes(range(0x10, 0x20)), bytes([0x5e] * 32), bytes([0x47] * 32), (0, 9), [], 2),
    (b"remote", bytes(range(0x20, 0x30)), bytes(range(0xe0, 0x100)), bytes([0x48] * 32), (1, 35), [(1024, b"optional")], 2),
    # §14.8: the ended grant a withdrawal leaves at the same name (role 3, tag 3 only)
    (b"local", bytes(range(0x30, 0x40)), bytes([0x6e] * 32), bytes([0x49] * 32), (0, 9), [], 3),
]


def grant_body(vk, rl, ref, optional, role=2):
    """§14.3: an unlock record of role 2 (tags 1, 2, 3 and optional ones from 1024), never tag 16;
    §14.8: an ended grant, role 3, holds tag 3 alone."""
    if role == 3:
        assert not optional
        tags = [(3, struct.pack("<Q", ref))]
    else:
        tags = [(1, vk), (2, rl), (3, struct.pack("<Q", ref))] + optional
    assert [t for t, _ in tags] == sorted(set(t for t, _ in tags)) and 16 not in [t for t, _ in tags]
    return bytes([role]) + struct.pack("<H", len(tags)) + b"".join(
        struct.pack("<H", t) + struct.pack("<I", len(v)) + v for t, v in tags)


def grant_block(body):
    assert len(body) <= 1016
    return bytes([2, 5, 0, 0]) + struct.pack("<I", len(body)) + body + bytes(1016 - len(body))


def grant_txt(m):
    pk_s, pk_r = public_of(SK_S), public_of(SK_R)
    z = dh(SK_S, pk_r)
    assert z == dh(SK_R, pk_s)
    lines = header("Grants from vault S to vault R (docs/FORMAT.md §14.2-§14.4, §14.6).", [
        "SKS, SKR: the identities' private keys; PKS, PKR their public keys, CODES, CODER (text) their contact codes.",
        "Per record: LOCATION (text); ROLE (2 a grant, 3 an ended grant, §14.8); VK, RL (empty for role 3),",
        "FILEREF (text DEVICE.NUMBER) and OPTIONAL (tag 1024's value, or nothing): the record, whose encoding",
        "is BODY. G, SKE, PADDINGSEED: the draws of the seal (the",
        "salt, the ephemeral scalar, and the padding as the stream of §10.1). Z: X25519(SKS, PKR); NAME (text);",
        "MASK; ENC (unmasked); SHARED, KEY, BASENONCE, EXPORTER: HPKE's KEM shared secret and key schedule;",
        "COMMITMENT: Export(\"DotSafe v2 grant commitment\", 32); HEAD: the file's first 1,120 bytes (header and",
        "sealed block); FILESHA256: the SHA-256 of the whole F-byte file.",
    ])
    lines += [f"# SKS = {SK_S.hex()}", f"# SKR = {SK_R.hex()}", ""]
    for count, (location, salt, sk_e, seed, (device, number), optional, role) in enumerate(GRANT_CASES):
        ref = device << NUMBER_BITS | number
        body = grant_body(VK, RL, ref, optional, role)
        vk, rl = (VK, RL) if role == 2 else (b"", b"")
        hp = auth_setup_sender(pk_r, b"DotSafe v2 grant", SK_S, sk_e)
        mask = m.hkdf(z, b"DotSafe v2 grant mask" + pk_s + pk_r + salt, 32)
        commitment = export(hp["exporter"], b"DotSafe v2 grant commitment", 32)
        head = salt + bytes(a ^ b for a, b in zip(hp["enc"], mask)) + commitment
        sealed = AESGCM(hp["key"]).encrypt(hp["base_nonce"], grant_block(body), head)
        file = head + sealed + m.stream(seed, F - 1120)
        assert len(file) == F
        name = m.base32(m.hkdf(z, b"DotSafe v2 grant name" + pk_s + pk_r + bytes([len(location)]) + location, 16))
        lines += [f"COUNT = {count}", f"SKS = {SK_S.hex()}", f"SKR = {SK_R.hex()}", f"PKS = {pk_s.hex()}",
                  f"PKR = {pk_r.hex()}", f"CODES = {printed(contact_code(pk_s))}", f"CODER = {printed(contact_code(pk_r))}",
                  f"LOCATION = {location.decode()}", f"ROLE = {role}", f"VK = {vk.hex()}", f"RL = {rl.hex()}", f"FILEREF = {device}.{number}",
                  f"OPTIONAL = {b''.join(v for _, v in optional).hex()}", f"BODY = {body.hex()}",
                  f"G = {salt.hex()}", f"SKE = {sk_e.hex()}", f"PADDINGSEED = {seed.hex()}", f"Z = {z.hex()}",
                  f"NAME = {name}", f"MASK = {mask.hex()}", f"ENC = {hp['enc'].hex()}", f"SHARED = {hp['shared'].hex()}",
                  f"KEY = {hp['key'].hex()}", f"BASENONCE = {hp['base_nonce'].hex()}", f"EXPORTER = {hp['exporter'].hex()}",
                  f"COMMITMENT = {commitment.hex()}", f"HEAD = {file[:1120].hex()}",
                  f"FILESHA256 = {hashlib.sha256(file).hexdigest()}", ""]
    return "\n".join(lines)


# --- contact codes ---------------------------------------------------------------------------

ALICE = bytes.fromhex("8520f0098930a754748b7ddcb43ef75a0dbf3a0d26381af4eba4a98eaa9b4e6a")
BOB = bytes.fromhex("de9edb7d7b7dc1b4d35b61c2ece435373f8343c85b78674dadfc7e146f882b4f")
CODE_KEYS = [("RFC 7748 §6.1 Alice", ALICE), ("RFC 7748 §6.1 Bob", BOB), ("all zeros", bytes(32)),
             ("all ff", bytes([0xff] * 32)), ("00 01 … 1f", bytes(range(32)))]


def contact_code_txt(m):
    lines = header("Contact codes (docs/FORMAT.md §14.1, §14.6).", [
        "PUBLIC: an X25519 public key; CODE (text): its contact code as DotSafe prints it; COMPACT (text): without",
        "separators. Records marked FAIL: TEXT (text) must be refused for REASON (text): prefix, character,",
        "length, typo, type, padding.",
    ])
    for count, (what, key) in enumerate(CODE_KEYS):
        code = contact_code(key)
        assert len(code) == 67
        lines += [f"# {what}", f"COUNT = {count}", f"PUBLIC = {key.hex()}", f"CODE = {printed(code)}", f"COMPACT = {code}", ""]
    alice = contact_code(ALICE)
    # A code whose 4 padding bits are not zero but whose checksum holds: the last data group + 1.
    data = [1] + to_groups(ALICE)
    data[-1] |= 1
    bad_padding = bech32m(HRP, data)
    fails = [
        ("prefix", "age" + alice[len(HRP):]),
        ("prefix", "dotsafe2" + alice[8:]),
        ("character", alice[:20] + "o" + alice[21:]),
        ("character", alice[:30] + "b" + alice[31:]),
        ("length", alice[:-1]),
        ("length", alice + "q"),
        ("typo", swap_checked(alice, 40, "q" if alice[40] != "q" else "p")),
        ("typo", alice[:25] + alice[26] + alice[25] + alice[27:]),
        ("typo", bech32m("dotsafe", [1] + to_groups(BOB))[:30] + alice[30:]),
        ("type", contact_code(ALICE, code_type=2)),
        ("type", contact_code(ALICE, code_type=0)),
        ("padding", bad_padding),
    ]
    for index, (reason, text) in enumerate(fails):
        lines += [f"COUNT = {len(CODE_KEYS) + index}", f"TEXT = {text}", f"REASON = {reason}", "FAIL", ""]
    return "\n".join(lines)


def texts(m):
    return {"contact-code.txt": contact_code_txt(m), "grant.txt": grant_txt(m)}
