// CLibCrypto: OpenSSL 3 libcrypto for Swift, plus the few process-hygiene calls that Swift
// cannot see because they are variadic or live outside the Glibc module.
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
#include <sys/prctl.h>
#include <sys/mman.h>
#include <sys/random.h>       // getrandom(2): not part of Swift's Glibc module

// prctl(2) is variadic, so Swift cannot call it: these wrap the two uses DotSafe has.
// Returns 0 on success, -1 with errno set.
static inline int dotsafe_set_not_dumpable(void) { return prctl(PR_SET_DUMPABLE, 0, 0, 0, 0); }
static inline int dotsafe_is_dumpable(void) { return prctl(PR_GET_DUMPABLE, 0, 0, 0, 0); }

#endif
