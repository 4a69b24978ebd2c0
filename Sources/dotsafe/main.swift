#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import DotSafeCLI

// All behaviour lives in DotSafeCLI, where tests reach it without spawning a process.
exit(DotSafeCLI.main())
