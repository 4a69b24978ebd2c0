// CSecret: libsecret (the freedesktop Secret Service: GNOME Keyring, KWallet) for Swift.
// Only what Swift cannot build itself belongs here: a SecretSchema is a struct holding a
// fixed array of 32 attribute slots, which Swift sees as a 32-tuple.
#ifndef DOTSAFE_CSECRET_SHIM_H
#define DOTSAFE_CSECRET_SHIM_H

#include <libsecret/secret.h>

// DotSafe's schema: items are found by one attribute, "keyring".
static inline const SecretSchema *dotsafe_secret_schema(void) {
    static const SecretSchema schema = {
        "org.dotsafe.Keyring", SECRET_SCHEMA_NONE,
        { { "keyring", SECRET_SCHEMA_ATTRIBUTE_STRING }, { NULL, 0 } }
    };
    return &schema;
}

#endif
