// CDBus: libdbus-1, the reference D-Bus library, for Swift (the system bus: logind's signals).
// Its type codes are cast macros that Swift does not import; SystemBus spells them itself.
#ifndef DOTSAFE_CDBUS_SHIM_H
#define DOTSAFE_CDBUS_SHIM_H

#include <dbus/dbus.h>

#endif
