/*
 * personal.c - a crash whose dump carries planted personal data, for the
 * MCP server's `--redact` (built and run by tools/crashgen/samples.sh).
 *
 *   planted        copies this exe into a user profile folder
 *                  (C:\Users\zquistberg\Tools\personal.exe) and runs the copy
 *                  as `planted_child` with an environment block of planted
 *                  values only (USERNAME, COMPUTERNAME, USERPROFILE, an
 *                  e-mail address, IPv4 and IPv6 addresses, an API token),
 *                  then exits with the child's exit code.
 *   planted_child  copies its environment block onto its stack (a
 *                  MiniDumpNormal dump holds stacks, not the heap where the
 *                  block lives), builds a note with personal data on the stack
 *                  too, and writes through NULL with the note's address in
 *                  rcx and the environment copy's in rdx.
 *
 * Every value is made up (example.org, TEST-NET-1, 2001:db8::/32); the child
 * gets no variable of the machine that builds the dump.
 * See the "personal.exe" section of tools/crashgen/README.md.
 */
// crashgen-modes: planted
// crashgen-flags: -O1
#include "crashgen.h"

#include <wchar.h>

#define PROFILE L"C:\\Users\\zquistberg"
#define CHILD_DIR PROFILE L"\\Tools"
#define CHILD_EXE CHILD_DIR L"\\personal.exe"
#define ENV_COPY_CHARS 1024

/* The child's whole environment block: NUL-separated, ends with two NULs. */
static const wchar_t planted_environment[] =
    L"COMPUTERNAME=ZQ-LAPTOP-7731\0"
    L"CONTACT_EMAIL=zoe.quistberg@example.org\0"
    L"LICENSE_SERVER=192.0.2.147\0"
    L"LICENSE_SERVER6=2001:db8:85a3::8a2e:370:7334\0"
    L"PATH=C:\\windows\\system32;C:\\windows\0"
    L"SERVICE_API_TOKEN=Zq7XkP2mW9vR4tY8uB3nC6hJ1sD5fG0a\0"
    L"SystemRoot=C:\\windows\0"
    L"USERDOMAIN=ZQ-LAPTOP-7731\0"
    L"USERNAME=zquistberg\0"
    L"USERPROFILE=" PROFILE L"\0"
    L"\0";

/* Faults with the note in rcx and the environment copy in rdx, so that
 * `da @rcx` and `du @rdx` show them. */
static CRASHGEN_NOINLINE void crash_holding(const char *note, const wchar_t *environment)
{
    __asm__ volatile("movb $1, 0" : : "c"(note), "d"(environment) : "memory");
}

static void mode_planted_child(void)
{
    wchar_t environment[ENV_COPY_CHARS];
    char note[256];
    const wchar_t *block = GetEnvironmentStringsW();
    size_t used = 0;
    /* Copy the block up to its terminating empty string (or the buffer's end). */
    while (block && used + 1 < ENV_COPY_CHARS && !(block[used] == 0 && (used == 0 || block[used - 1] == 0))) {
        environment[used] = block[used];
        used++;
    }
    environment[used] = 0;
    snprintf(note, sizeof note,
             "support ticket from zoe.quistberg@example.org on ZQ-LAPTOP-7731 (192.0.2.147): "
             "password=Tr0ub4dor-3-planted, file C:\\Users\\zquistberg\\Documents\\plans.docx");
    crash_holding(note, environment);
}

static void mode_planted(void)
{
    wchar_t self[MAX_PATH];
    wchar_t command_line[2 * MAX_PATH];
    char dump_path[MAX_PATH];
    STARTUPINFOW startup;
    PROCESS_INFORMATION child;
    DWORD exit_code = 3;
    ZeroMemory(&startup, sizeof startup);
    startup.cb = sizeof startup;
    if (!GetModuleFileNameW(NULL, self, MAX_PATH) ||
        !GetFullPathNameA(crashgen_dump_path, MAX_PATH, dump_path, NULL)) {
        fprintf(stderr, "personal: cannot resolve paths (error %lu)\n", GetLastError());
        ExitProcess(3);
    }
    CreateDirectoryW(L"C:\\Users", NULL);
    CreateDirectoryW(PROFILE, NULL);
    CreateDirectoryW(CHILD_DIR, NULL);
    if (!CopyFileW(self, CHILD_EXE, FALSE)) {
        fprintf(stderr, "personal: cannot copy to the profile (error %lu)\n", GetLastError());
        ExitProcess(3);
    }
    swprintf(command_line, 2 * MAX_PATH, L"\"%ls\" planted_child \"%hs\"", CHILD_EXE, dump_path);
    if (!CreateProcessW(CHILD_EXE, command_line, NULL, NULL, FALSE, CREATE_UNICODE_ENVIRONMENT,
                        (void *)planted_environment, CHILD_DIR, &startup, &child)) {
        fprintf(stderr, "personal: cannot start the child (error %lu)\n", GetLastError());
        ExitProcess(3);
    }
    WaitForSingleObject(child.hProcess, INFINITE);
    GetExitCodeProcess(child.hProcess, &exit_code);
    ExitProcess(exit_code);
}

int main(int argc, char **argv)
{
    static const struct crashgen_mode modes[] = {
        {"planted", mode_planted},
        {"planted_child", mode_planted_child},
    };
    return crashgen_main(argc, argv, modes, sizeof modes / sizeof modes[0]);
}
