// CLibCrypto: OpenSSL 3 libcrypto for Swift, plus getrandom(2), which lives outside the Glibc
// module (prctl is in CSystem).
// Only wrappers for function-like macros and variadic calls belong here; everything else is
// imported from OpenSSL's own headers as-is.
#ifndef DOTSAFE_CLIBCRYPTO_SHIM_H
#define DOTSAFE_CLIBCRYPTO_SHIM_H

#include <openssl/evp.h>
#include <openssl/kdf.h>
#include <openssl/rand.h>
#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/core_names.h>
#include <openssl/params.h>
#include <openssl/proverr.h>   // PROV_R_* reasons: tells a low-order X25519 point from other failures
#include <sys/mman.h>
#include <sys/random.h>       // getrandom(2): not part of Swift's Glibc module

#endif
