// cxx.cpp - uncaught C++ exceptions, both ABIs a Windows dump meets:
//
//   Itanium (GCC/Clang with libstdc++, linked statically): a real `throw`
//   through libstdc++'s __cxa_throw and libgcc's SEH unwinder, which raises
//   0x20474343 (' GCC') with the _Unwind_Exception as its one parameter.
//   MSVC: no MSVC runtime exists here, so the ThrowInfo graph (ThrowInfo ->
//   CatchableTypeArray -> CatchableType -> TypeDescriptor, image-relative
//   RVAs as on x64) is laid out by hand in .rdata below, and the throw is
//   Wine's own msvcrt!_CxxThrowException, which raises 0xE06D7363 exactly as
//   MSVC's runtime does.
//
// See the "cxx.exe" section of tools/crashgen/README.md for every mode.
//
// crashgen-modes: msvc_runtime_error msvc_int msvc_terminate itanium_runtime_error itanium_custom
// crashgen-flags: -O1 -isystem /usr/lib/gcc/x86_64-w64-mingw32/12-win32/include/c++ -isystem /usr/lib/gcc/x86_64-w64-mingw32/12-win32/include/c++/x86_64-w64-mingw32
// crashgen-libs: -static
#include "crashgen.h"

#include <csignal>
#include <exception>
#include <stdexcept>

// ---------------------------------------------------------------------------
// MSVC ABI, laid out by hand.
//
// TypeDescriptor  { const void *pVFTable; void *spare; char name[]; }
// CatchableType   { u32 properties; i32 pType; PMD thisDisplacement
//                   {i32 mdisp, pdisp, vdisp}; i32 sizeOrOffset;
//                   i32 copyFunction; }
// CatchableTypeArray { i32 nCatchableTypes; i32 arrayOfCatchableTypes[]; }
// ThrowInfo       { u32 attributes; i32 pmfnUnwind; i32 pForwardCompat;
//                   i32 pCatchableTypeArray; }
// The i32 fields are RVAs (.rva) on x64. The names are MSVC's decorated RTTI
// names. The type_info vftable is a stand-in (nothing here calls it).
// ---------------------------------------------------------------------------
asm(R"(
    .section .rdata,"dr"
    .p2align 3
msvc_type_info_vftable:
    .quad 0, 0
    .p2align 3
msvc_td_runtime_error:
    .quad msvc_type_info_vftable, 0
    .asciz ".?AVruntime_error@std@@"
    .p2align 3
msvc_td_exception:
    .quad msvc_type_info_vftable, 0
    .asciz ".?AVexception@std@@"
    .p2align 3
msvc_td_int:
    .quad msvc_type_info_vftable, 0
    .asciz ".H"
    .p2align 2
msvc_ct_runtime_error:
    .long 0
    .rva msvc_td_runtime_error
    .long 0, -1, 0, 24, 0
msvc_ct_exception:
    .long 0
    .rva msvc_td_exception
    .long 0, -1, 0, 24, 0
msvc_ct_int:
    .long 1
    .rva msvc_td_int
    .long 0, -1, 0, 4, 0
msvc_cta_runtime_error:
    .long 2
    .rva msvc_ct_runtime_error, msvc_ct_exception
msvc_cta_int:
    .long 1
    .rva msvc_ct_int
    .globl msvc_throw_info_runtime_error
msvc_throw_info_runtime_error:
    .long 0, 0, 0
    .rva msvc_cta_runtime_error
    .globl msvc_throw_info_int
msvc_throw_info_int:
    .long 0, 0, 0
    .rva msvc_cta_int
    .p2align 3
    .globl msvc_runtime_error_vftable
msvc_runtime_error_vftable:
    .quad 0, 0
    .text
)");

extern "C" {
extern const char msvc_throw_info_runtime_error[];
extern const char msvc_throw_info_int[];
extern const void *const msvc_runtime_error_vftable[];
// Wine's msvcrt.dll exports MSVC's throw helper and std::terminate.
__declspec(dllimport) void _CxxThrowException(void *object, const void *throw_info);
__declspec(dllimport) void msvcrt_terminate(void) __asm__("?terminate@@YAXXZ");
}

// MSVC's std::exception: the vftable, then __std_exception_data.
struct msvc_std_exception {
    const void *vftable;
    const char *what;
    bool dofree;
};

CRASHGEN_NOINLINE static void load_settings_msvc(void)
{
    // The thrown object lives in this frame: the dump's stack holds it, and
    // `what` points at a literal in the exe's .rdata.
    msvc_std_exception error = {msvc_runtime_error_vftable, "settings.ini: no [server] section",
                                false};
    _CxxThrowException(&error, msvc_throw_info_runtime_error);
}

static void msvc_runtime_error(void)
{
    load_settings_msvc();
}

CRASHGEN_NOINLINE static void parse_port_msvc(void)
{
    int code = 42;
    _CxxThrowException(&code, msvc_throw_info_int);
}

static void msvc_int(void)
{
    parse_port_msvc();
}

static void install_abort_hook(void);

// MSVC's runtime ends an uncaught C++ exception from its unhandled-exception
// filter: terminate() -> abort(). This filter does the same for 0xE06D7363
// with Wine's msvcrt!terminate, so the exception record stays on the stack
// below the terminate path.
static LONG WINAPI terminate_on_cxx_exception(EXCEPTION_POINTERS *ep)
{
    const EXCEPTION_RECORD *r = ep->ExceptionRecord;
    if (r->ExceptionCode == 0xE06D7363 && r->NumberParameters >= 3 && r->ExceptionInformation[0] == 0x19930520)
        msvcrt_terminate();
    return crashgen_filter(ep);
}

static void msvc_terminate(void)
{
    SetUnhandledExceptionFilter(terminate_on_cxx_exception);
    install_abort_hook();
    load_settings_msvc();
}

// ---------------------------------------------------------------------------
// Itanium ABI (libstdc++).
// ---------------------------------------------------------------------------

// mingw's CRT installs an unhandled-exception filter that continues any
// continuable GCC exception, so that __cxa_throw returns into std::terminate;
// crashgen_main replaced it, so this filter puts that behaviour back and
// leaves every other exception to crashgen's.
static LONG WINAPI continue_gcc_exceptions(EXCEPTION_POINTERS *ep)
{
    const EXCEPTION_RECORD *r = ep->ExceptionRecord;
    if ((r->ExceptionCode & 0x20ffffff) == 0x20474343 && !(r->ExceptionFlags & EXCEPTION_NONCONTINUABLE))
        return EXCEPTION_CONTINUE_EXECUTION;
    return crashgen_filter(ep);
}

// abort() raises SIGABRT: write the dump there as crash reporters do
// (Crashpad's abort handler), with a STATUS_FATAL_APP_EXIT record and the
// context of the handler itself.
static void dump_on_abort(int)
{
    CONTEXT context;
    EXCEPTION_RECORD record;
    EXCEPTION_POINTERS pointers = {&record, &context};
    RtlCaptureContext(&context);
    memset(&record, 0, sizeof record);
    record.ExceptionCode = 0x40000015; /* STATUS_FATAL_APP_EXIT */
    record.ExceptionFlags = EXCEPTION_NONCONTINUABLE;
    record.ExceptionAddress = (void *)context.Rip;
    crashgen_write_dump(&pointers, GetCurrentThreadId(), FALSE);
}

static void install_abort_hook(void)
{
    signal(SIGABRT, dump_on_abort);
}

static void terminate_through_abort(void)
{
    SetUnhandledExceptionFilter(continue_gcc_exceptions);
    install_abort_hook();
}

namespace app {
// A class of the program's own, not derived from std::exception.
struct config_error {
    int line;
    int column;
};
} // namespace app

CRASHGEN_NOINLINE static void load_settings(void)
{
    throw std::runtime_error("settings.ini: no [server] section");
}

static void itanium_runtime_error(void)
{
    terminate_through_abort();
    load_settings();
}

CRASHGEN_NOINLINE static void parse_config(void)
{
    throw app::config_error{12, 7};
}

static void itanium_custom(void)
{
    terminate_through_abort();
    parse_config();
}

static const struct crashgen_mode modes[] = {
    {"msvc_runtime_error", msvc_runtime_error},
    {"msvc_int", msvc_int},
    {"msvc_terminate", msvc_terminate},
    {"itanium_runtime_error", itanium_runtime_error},
    {"itanium_custom", itanium_custom},
};

int main(int argc, char **argv)
{
    return crashgen_main(argc, argv, modes, sizeof modes / sizeof modes[0]);
}
