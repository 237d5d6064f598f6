/* For running the Windows unit tests under Wine 8 (Debian 12) only: Rust's
 * std on Windows draws random numbers with ProcessPrng from
 * bcryptprimitives.dll, which Wine gained only in 9.x. This stand-in
 * forwards to RtlGenRandom (advapi32's SystemFunction036). It is never part
 * of magus; .ci/run builds it with mingw next to the test executable. */
#include <windows.h>
#define SystemFunction036 NTAPI SystemFunction036
#include <ntsecapi.h>
#undef SystemFunction036

BOOL WINAPI ProcessPrng(PBYTE data, SIZE_T len) {
    while (len > 0) {
        ULONG chunk = len > 0x10000000 ? 0x10000000 : (ULONG)len;
        if (!RtlGenRandom(data, chunk))
            return FALSE;
        data += chunk;
        len -= chunk;
    }
    return TRUE;
}
