/* Test-only stand-in for Windows' bcryptprimitives.dll, which Wine 8 lacks.
 *
 * Rust's standard library imports ProcessPrng from bcryptprimitives.dll for its random numbers
 * (HashMap seeds); without the DLL a Rust program built for x86_64-pc-windows-gnu does not start
 * under Wine 8. This shim forwards ProcessPrng to advapi32's SystemFunction036 (RtlGenRandom).
 * tools/windows/build.sh builds it next to the test executables; it is never shipped.
 */
#include <windows.h>

BOOLEAN WINAPI SystemFunction036(PVOID buffer, ULONG length);

__declspec(dllexport) BOOL WINAPI ProcessPrng(PBYTE data, SIZE_T length)
{
    while (length > 0) {
        ULONG chunk = length > 0x40000000 ? 0x40000000 : (ULONG)length;
        if (!SystemFunction036(data, chunk))
            return FALSE;
        data += chunk;
        length -= chunk;
    }
    return TRUE;
}
