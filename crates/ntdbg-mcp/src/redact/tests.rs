//! The rules on the kinds of text a debugger prints: what is hidden, and what never changes.

use super::rules::{parse_rules, Category, Counts};
use super::Redactor;
use serde_json::json;
use std::sync::LazyLock;

/// The built-in rules, compiled once for every test.
static BUILT_IN_ONLY: LazyLock<Redactor> = LazyLock::new(|| Redactor::new(Vec::new()));

fn redact(text: &str) -> (String, Counts) {
    let mut counts = Counts::default();
    (BUILT_IN_ONLY.redact_text(text, &mut counts), counts)
}

fn unchanged(text: &str) {
    let (out, counts) = redact(text);
    assert_eq!(out, text, "changed: {counts:?}");
    assert_eq!(counts.total(), 0);
}

#[test]
fn addresses_symbols_hex_numbers_and_registers_never_change() {
    unchanged("00000001`40001517 c60001          mov     byte ptr [rax],1");
    unchanged(
        "crashy!main+0x1a\npersonal!crash_holding+0x4 [C:\\crashgen\\personal\\personal.c @ 47]",
    );
    unchanged("rax=0000000000000000 rbx=000000000011f3e0 rcx=000000000011f3e0\nrip=0000000140001517 rsp=000000000011f3a8 rbp=0000000000000000");
    unchanged("0x7ffe12345678 0xFFFFFFFFFFFFFFFF 0n1234 deadbeef cafebabe12345678");
    unchanged("00000000`0011f3e0  00000001`40001517 personal!main+0x40");
    // A PDB id (33 hex digits), a GUID, a timestamp, a version, C++ names.
    unchanged(
        "crashy.pdb FC4F8CB117DE47F04C4C44205044422E1 {8CB117DE-47F0-4C4C-4420-5044422E1A2B}",
    );
    unchanged("Timestamp: Sun Dec  6 06:58:00 2026 (12:34:56) File version: 10.0.0.1");
    unchanged(
        "std::vector<int>::push_back ntdll!RtlUserThreadStart+0x21 Foo::Bar::baz dt bad::cafe",
    );
    // Words after `token:` in a sentence are no secret.
    unchanged("sessions are not listed without a bearer token: each is reachable by its id");
    // Long identifiers without digits, all-hex runs, paths of the system.
    unchanged("_RTL_CRITICAL_SECTION_DEBUG ThisIsAVeryLongFunctionNameOfTheProgram C:\\windows\\system32\\ntdll.dll /usr/lib/wine/ntdll.so");
    unchanged("C:\\Users\\Public\\Documents\\x.dll C:\\Users\\Default\\y.dll");
    // A symbol store's path: folder names around a debug id are no token.
    unchanged("/work/sym/personal.pdb/13158019C58A423E4C4C44205044422E1/personal.pdb: not found");
}

#[test]
fn profile_paths_hide_the_user_name_only() {
    let (out, counts) = redact(
        r"C:\Users\zquistberg\Tools\personal.exe, c:\users\Zoe Quistberg\Docs\a.txt, /home/alice/core, \Users\bob",
    );
    assert_eq!(
        out,
        r"C:\Users\<user>\Tools\personal.exe, c:\users\<user>\Docs\a.txt, /home/<user>/core, \Users\<user>"
    );
    assert_eq!(counts.0.get(&Category::User), Some(&4));
}

#[test]
fn environment_strings_emails_and_ips() {
    let (out, _) = redact(
        "\"USERNAME=zquistberg\" \"COMPUTERNAME=ZQ-LAPTOP-7731\" LOGONSERVER=\\\\DC01 WINEUSERNAME=root",
    );
    assert_eq!(
        out,
        "\"USERNAME=<user>\" \"COMPUTERNAME=<host>\" LOGONSERVER=\\\\<host> WINEUSERNAME=root"
    );
    let (out, counts) = redact("mail zoe.quistberg@example.org from 192.0.2.147 or [2001:db8:85a3::8a2e:370:7334], fe80::1:2 and ::1");
    assert_eq!(out, "mail <email> from <ip> or [<ip>], <ip> and ::1");
    assert_eq!(counts.describe(), "email 1, ip 3");
    // Versions and dotted runs are not addresses.
    unchanged("version 1.2.3.4, 1.2.3.4.5, 10.0.18362.1");
}

#[test]
fn secrets_by_key_shape_and_length() {
    let (out, _) = redact("password=Tr0ub4dor-3-planted SERVICE_API_TOKEN=Zq7XkP2mW9vR4tY8uB3nC6hJ1sD5fG0a api_key: \"0123456789abcdef\" password: hunter2 pwd=x");
    assert_eq!(
        out,
        "password=<secret> SERVICE_API_TOKEN=<secret> api_key: \"<secret>\" password: <secret> pwd=<secret>"
    );
    let (out, _) = redact(
        "Authorization: Bearer abcdefghijklmnop1234 then Zq7XkP2mW9vR4tY8uB3nC6hJ1sD5fG0a alone",
    );
    assert_eq!(out, "Authorization: Bearer <secret> then <secret> alone");
    let key = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08";
    assert_eq!(redact(&format!("sha {key}")).0, "sha <secret>");
    assert_eq!(
        redact("ghp_abcdefghijklmnopqrstuvwxyz0123456789").0,
        "<secret>"
    );
}

#[test]
fn names_read_from_a_dump_are_hidden_wherever_they_appear() {
    let redactor = Redactor::new(Vec::new());
    redactor.learn_names(vec![
        ("zquistberg".into(), Category::User),
        ("ZQ-LAPTOP-7731".into(), Category::Host),
    ]);
    let mut counts = Counts::default();
    let out = redactor.redact_text(
        "ticket on ZQ-LAPTOP-7731 by ZQuistberg; zquistbergs stays; personal!main+0x1a",
        &mut counts,
    );
    assert_eq!(
        out,
        "ticket on <host> by <user>; zquistbergs stays; personal!main+0x1a"
    );
}

#[test]
fn typed_results_are_redacted_string_by_string() {
    let redactor = Redactor::new(Vec::new());
    let mut value = json!({
        "version": "1.2.13.0",
        "path": "C:\\Users\\zquistberg\\a.dmp",
        "address": 5368714519u64,
        "frames": [{"symbol": "personal!main+0x1a", "text": "mail a.b@example.org"}],
    });
    let mut counts = Counts::default();
    redactor.redact_value(&mut value, &mut counts);
    assert_eq!(
        value,
        json!({
            "version": "1.2.13.0",
            "path": "C:\\Users\\<user>\\a.dmp",
            "address": 5368714519u64,
            "frames": [{"symbol": "personal!main+0x1a", "text": "mail <email>"}],
        })
    );
    assert_eq!(counts.total(), 2);
}

#[test]
fn a_rules_file_adds_patterns_and_refuses_bad_ones() {
    let rules = parse_rules("# project names\n\n(?i)quistberg\nACME-[0-9]+\n").unwrap();
    let redactor = Redactor::new(rules);
    let mut counts = Counts::default();
    assert_eq!(
        redactor.redact_text("Zoe Quistberg filed ACME-1234 at 0x140001517", &mut counts),
        "Zoe <redacted> filed <redacted> at 0x140001517"
    );
    assert_eq!(counts.describe(), "rule 2");
    assert!(parse_rules("(unclosed").unwrap_err().contains("line 1"));
    assert!(parse_rules("ok\na*").unwrap_err().contains("line 2"));
    // A custom pattern never changes an address either.
    let redactor = Redactor::new(parse_rules("[0-9a-f]{16}").unwrap());
    let text = "rip=0000000140001517";
    assert_eq!(redactor.redact_text(text, &mut Counts::default()), text);
}

#[test]
fn no_hex_number_is_ever_taken_for_a_token() {
    // Values from a fixed linear congruential sequence, in every form a debugger prints.
    let mut x: u64 = 0x2545_f491_4f6c_dd1d;
    for _ in 0..2000 {
        x = x
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        let (high, low) = (x >> 32, x & 0xffff_ffff);
        unchanged(&format!(
            "{x:x} {x:016x} {x:#x} {x:#X} {high:08x}`{low:08x} rax={x:016x} [rsp+{low:x}] {x:016X}{x:016x}"
        ));
    }
}
