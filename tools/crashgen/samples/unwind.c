/*
 * unwind.c - stacks whose frames have no unwind data: code a JIT wrote into
 * VirtualAlloc memory (frame pointers only, outside every module), and a
 * leaf function whose image the test then leaves off the symbol path.
 *
 * See the "unwind.exe" section of tools/crashgen/README.md for every mode;
 * tools/crashgen/generate-unwind.sh builds this program and the x86 MinGW
 * one (unwind_throw.cpp) and writes testdata/unwind/.
 */
// crashgen-modes: jit_callback jit_fault leaf_no_image
// crashgen-flags: -O1
// crashgen-out: unwind
#include "crashgen.h"

#include <stdint.h>

/* ---- JIT: three functions of x64 machine code written at run time into
 * memory from VirtualAlloc, each with a standard frame (push rbp; mov rbp,
 * rsp), calling the next through `mov rax, imm64; call rax`. The innermost
 * calls `target`: back into the program (jit_callback) or a JIT leaf that
 * writes through NULL (jit_fault). ---- */

/* Bytes of one JIT function, and where its call target goes. */
#define JIT_FUNCTION_SIZE 32
#define JIT_TARGET_AT 10

/* push rbp; mov rbp,rsp; sub rsp,32; mov rax,imm64; call rax;
 * mov rsp,rbp; pop rbp; ret */
static const unsigned char jit_function[] = {
    0x55,                   /* push rbp */
    0x48, 0x89, 0xE5,       /* mov rbp, rsp */
    0x48, 0x83, 0xEC, 0x20, /* sub rsp, 32 (home space) */
    0x48, 0xB8,             /* mov rax, imm64 (JIT_TARGET_AT) */
    0, 0, 0, 0, 0, 0, 0, 0,
    0xFF, 0xD0,             /* call rax */
    0x48, 0x89, 0xEC,       /* mov rsp, rbp */
    0x5D,                   /* pop rbp */
    0xC3,                   /* ret */
};

/* mov byte ptr [0], 1; ret: a JIT leaf (no frame, no stack adjustment). */
static const unsigned char jit_leaf[] = {0xC6, 0x04, 0x25, 0, 0, 0, 0, 0x01, 0xC3};

/* The frames of ours below the JIT code. */
static CRASHGEN_NOINLINE void write_null(void)
{
    *(volatile int *)0 = 0x0BAD;
}

/* Called by the innermost JIT function. */
static CRASHGEN_NOINLINE void callback_from_jit(void)
{
    write_null();
    printf("not reached\n");
}

/* Writes three chained JIT functions (and the leaf) into fresh executable
 * memory; returns the outermost. `target` is what the innermost one calls,
 * or NULL for the JIT leaf. */
static void *emit_jit(void (*target)(void))
{
    unsigned char *code = VirtualAlloc(NULL, 4096, MEM_COMMIT | MEM_RESERVE, PAGE_READWRITE);
    unsigned char *leaf = code + 3 * JIT_FUNCTION_SIZE;
    DWORD old;
    int i;
    if (!code) {
        fprintf(stderr, "VirtualAlloc failed\n");
        ExitProcess(5);
    }
    memset(code, 0xCC, 4096);
    memcpy(leaf, jit_leaf, sizeof jit_leaf);
    for (i = 0; i < 3; i++) {
        unsigned char *f = code + i * JIT_FUNCTION_SIZE;
        uint64_t next = i < 2 ? (uint64_t)(uintptr_t)(f + JIT_FUNCTION_SIZE)
                              : (target ? (uint64_t)(uintptr_t)target : (uint64_t)(uintptr_t)leaf);
        memcpy(f, jit_function, sizeof jit_function);
        memcpy(f + JIT_TARGET_AT, &next, sizeof next);
    }
    /* As JITs do: written, then made executable. */
    VirtualProtect(code, 4096, PAGE_EXECUTE_READ, &old);
    FlushInstructionCache(GetCurrentProcess(), code, 4096);
    return code;
}

/* Windows' exception dispatcher cannot unwind through JIT code that
 * registered no unwind data (RtlAddFunctionTable), so the unhandled-exception
 * filter would never run: a vectored handler, called before any unwinding,
 * writes the dump instead. */
static LONG CALLBACK dump_from_vectored_handler(EXCEPTION_POINTERS *ep)
{
    crashgen_write_dump(ep, GetCurrentThreadId(), FALSE);
    return EXCEPTION_CONTINUE_SEARCH;
}

/* Enters the JIT code (the frame the chain must reach again). */
static CRASHGEN_NOINLINE void run_jit(void *entry)
{
    ((void (*)(void))entry)();
    printf("not reached\n");
}

static void mode_jit_callback(void)
{
    AddVectoredExceptionHandler(1, dump_from_vectored_handler);
    run_jit(emit_jit(callback_from_jit));
}

static void mode_jit_fault(void)
{
    AddVectoredExceptionHandler(1, dump_from_vectored_handler);
    run_jit(emit_jit(NULL));
}

/* ---- a leaf in the program: the dump is opened without unwind.exe, so
 * only the bytes around the fault say that [rsp] is the return address.
 * call_leaf comes first so that its call lies in the bytes the dump keeps
 * around the faulting instruction. ---- */

static void leaf_store(void);

static CRASHGEN_NOINLINE void call_leaf(void)
{
    leaf_store();
    printf("not reached\n");
}

__attribute__((naked, noinline)) static void leaf_store(void)
{
    __asm__ volatile("movb $1, 0\n\t"
                     "ret");
}

static void mode_leaf_no_image(void)
{
    call_leaf();
}

static const struct crashgen_mode modes[] = {
    {"jit_callback", mode_jit_callback},
    {"jit_fault", mode_jit_fault},
    {"leaf_no_image", mode_leaf_no_image},
};

int main(int argc, char **argv)
{
    return crashgen_main(argc, argv, modes, sizeof modes / sizeof modes[0]);
}
