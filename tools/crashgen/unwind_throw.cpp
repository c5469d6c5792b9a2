// unwind_throw.cpp - an x86 MinGW C++ throw that nothing catches, unwound by
// DWARF: built with i686-w64-mingw32 g++ (libstdc++ and libgcc's DWARF-2
// unwinder, linked statically; only .eh_frame describes its frames), not by
// samples.sh but by generate-unwind.sh beside it.
//
// load_config() throws; start_server() is noexcept, so libgcc's search
// phase stops there and __gxx_personality_v0 calls std::terminate from inside
// _Unwind_RaiseException: the stack at abort() runs through the personality
// routine, _Unwind_RaiseException and __cxa_throw to the thrower and main.
// abort() raises SIGABRT, whose handler writes the dump with its own context
// (as Crashpad's abort handler does).
#include "samples/crashgen.h"

#include <csignal>
#include <stdexcept>

static void dump_on_abort(int)
{
    CONTEXT context;
    EXCEPTION_RECORD record;
    EXCEPTION_POINTERS pointers = {&record, &context};
    RtlCaptureContext(&context);
    memset(&record, 0, sizeof record);
    record.ExceptionCode = 0x40000015; /* STATUS_FATAL_APP_EXIT */
    record.ExceptionFlags = EXCEPTION_NONCONTINUABLE;
    record.ExceptionAddress = (void *)(uintptr_t)context.Eip;
    crashgen_write_dump(&pointers, GetCurrentThreadId(), FALSE);
}

CRASHGEN_NOINLINE void load_config(const char *path)
{
    (void)path;
    throw std::runtime_error("config.ini: no [server] section");
}

CRASHGEN_NOINLINE void start_server() noexcept
{
    load_config("config.ini");
}

static void mode_throw_noexcept()
{
    signal(SIGABRT, dump_on_abort);
    start_server();
}

static const struct crashgen_mode modes[] = {
    {"throw_noexcept", mode_throw_noexcept},
};

int main(int argc, char **argv)
{
    return crashgen_main(argc, argv, modes, sizeof modes / sizeof modes[0]);
}
