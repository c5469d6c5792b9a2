//! Memory the dump lacks, read from module images; `!address`, `s`, `!dh`, `!lmi` on the
//! repository's samples and on real dumps with a MemoryInfoList stream (goldens in
//! `tests/snapshots/image_memory__*`).

use ntdbg_commands::{run_command, TypedResult};
use ntdbg_engine::Session;
use ntdbg_formats::pe::{PeInfo, PeLayout, SectionHeader};

/// Opens a sample with its own folder as the symbol path.
fn open(sample: &str) -> Session {
    ntdbg_testutil::open_sample(sample)
}

/// Opens a dump under the shared test data with no symbol path at all (offline, no images).
fn open_shared(rel: &str) -> Option<Session> {
    let path = ntdbg_testutil::testdata(rel);
    if !path.exists() {
        return None;
    }
    Some(Session::open_dump(&path, Some("")).expect("dump opens"))
}

fn text(session: &mut Session, command: &str) -> String {
    match run_command(session, command) {
        Ok(out) => out.text,
        Err(e) => format!("ERROR {}: {}", e.code, e.message),
    }
}

/// The sample image and the session's load address of it.
fn image(session: &Session) -> (Vec<u8>, PeInfo, u64) {
    let file = std::fs::read(ntdbg_testutil::sample("crashy.exe")).unwrap();
    let pe = PeInfo::parse(&file, PeLayout::File).unwrap();
    let base = session.module_by_name("crashy").unwrap().raw.base_of_image;
    (file, pe, base)
}

fn section<'a>(pe: &'a PeInfo, name: &str) -> &'a SectionHeader {
    pe.sections.iter().find(|s| s.name == name).unwrap()
}

/// The first 16-byte-aligned offset into `section` whose 16 bytes the dump does not hold.
fn missing_offset(session: &Session, base: u64, section: &SectionHeader) -> u32 {
    (0..section.size_of_raw_data.min(section.virtual_size) - 16)
        .step_by(16)
        .find(|off| {
            let at = base + u64::from(section.virtual_address + off);
            session
                .target()
                .read_virtual(at, 16)
                .iter()
                .all(Option::is_none)
        })
        .expect("some of the section is not in the dump")
}

/// The bytes of a `db` line (`ADDR  41 42 …-… 48  ASCII`).
fn db_bytes(line: &str) -> Vec<u8> {
    line.split("  ")
        .nth(1)
        .unwrap()
        .split([' ', '-'])
        .map(|b| u8::from_str_radix(b, 16).unwrap())
        .collect()
}

#[test]
fn db_reads_text_and_rdata_from_the_image_and_leaves_data_missing() {
    let mut session = open("crashy-x64-null.dmp");
    let (file, pe, base) = image(&session);
    assert_eq!(
        base, pe.image_base,
        "the sample is loaded at its preferred base"
    );
    for name in [".text", ".rdata"] {
        let s = section(&pe, name);
        let off = missing_offset(&session, base, s);
        let at = base + u64::from(s.virtual_address + off);
        let out = run_command(&mut session, &format!("db {at:#x} L10")).unwrap();
        let start = (s.pointer_to_raw_data + off) as usize;
        assert_eq!(
            db_bytes(out.text.lines().next().unwrap()),
            file[start..start + 16],
            "{name}"
        );
        let Some(TypedResult::Memory { from_image, .. }) = out.typed else {
            panic!("typed memory")
        };
        assert_eq!(
            from_image,
            vec![[format!("{at:#x}"), format!("{:#x}", at + 16)]],
            "{name}"
        );
    }
    // .data is writable: the image's bytes are not what the process held.
    let data = section(&pe, ".data");
    let at = base + u64::from(data.virtual_address);
    assert!(session.target().read_virtual(at, 16)[0].is_none());
    let out = text(&mut session, &format!("db {at:#x} L10"));
    assert!(out.starts_with("Memory access error at"), "{out}");
}

#[test]
fn da_reads_strings_from_rdata() {
    let mut session = open("crashy-x64-null.dmp");
    let (file, pe, base) = image(&session);
    let s = section(&pe, ".rdata");
    let raw = &file[s.pointer_to_raw_data as usize..][..s.size_of_raw_data as usize];
    // The first NUL-terminated run of 8+ printable characters the dump does not hold.
    let mut i = 0;
    let (off, expected) = loop {
        let len = raw[i..]
            .iter()
            .take_while(|b| (0x20..0x7f).contains(*b))
            .count();
        let at = base + u64::from(s.virtual_address) + i as u64;
        if len >= 8
            && raw.get(i + len) == Some(&0)
            && (i == 0 || raw[i - 1] == 0)
            && session.target().read_virtual(at, 1)[0].is_none()
        {
            break (i, String::from_utf8(raw[i..i + len].to_vec()).unwrap());
        }
        i += len.max(1);
    };
    let at = base + u64::from(s.virtual_address) + off as u64;
    let out = text(&mut session, &format!("da {at:#x}"));
    assert!(out.ends_with(&format!("  \"{expected}\"\n")), "{out}");
}

#[test]
fn missing_memory_is_one_line_and_partial_reads_keep_their_bytes() {
    let mut session = open("crashy-x64-null.dmp");
    for cmd in ["db 0", "dd 0 L40", "dq 0", "dps 0", "da 0", "du 0", "dc 0"] {
        let out = text(&mut session, cmd);
        assert_eq!(out.lines().count(), 1, "{cmd}: {out}");
        assert!(
            out.starts_with("Memory access error at '00000000`00000000'"),
            "{out}"
        );
        assert!(out.contains("nearest captured ranges: none below"), "{out}");
    }
    // A display that runs off the end of the stack: bytes first, then `??`.
    let stack = session.current_thread().unwrap().stack.unwrap();
    let out = text(&mut session, &format!("db {:#x} L20", stack.end() - 0x10));
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 2);
    assert!(!lines[0].contains("??"));
    assert!(lines[1].contains("?? ?? ??"));
}

#[test]
fn search_finds_bytes_in_dump_memory_and_in_the_image() {
    let mut session = open("crashy-x64-null.dmp");
    let (file, pe, base) = image(&session);
    let text_section = section(&pe, ".text");
    let off = missing_offset(&session, base, text_section);
    let at = base + u64::from(text_section.virtual_address + off);
    let start = (text_section.pointer_to_raw_data + off) as usize;
    let pattern: Vec<String> = file[start..start + 8]
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    let end = base + u64::from(pe.size_of_image);
    let out = run_command(
        &mut session,
        &format!("s -b {base:#x} {:#x} {}", end - 1, pattern.join(" ")),
    )
    .unwrap();
    let Some(TypedResult::SearchHits { hits, truncated }) = out.typed else {
        panic!("typed hits")
    };
    assert!(!truncated);
    let hit = hits
        .iter()
        .find(|h| h.address == format!("{at:#x}"))
        .expect("the image bytes are searched");
    assert!(hit.from_image);
    // A string scan of .rdata finds the strings `da` shows.
    let rdata = section(&pe, ".rdata");
    let out = run_command(
        &mut session,
        &format!(
            "s -[l8]sa {:#x} L{:x}",
            base + u64::from(rdata.virtual_address),
            rdata.virtual_size
        ),
    )
    .unwrap();
    let Some(TypedResult::SearchHits { hits, .. }) = out.typed else {
        panic!("typed hits")
    };
    assert!(!hits.is_empty());
    assert!(hits.iter().all(|h| h.text.as_ref().unwrap().len() >= 8));
    // Huge ranges need L?.
    let err = run_command(&mut session, "s -b 0 L20000000 41").unwrap_err();
    assert_eq!(err.code, "range_too_large");
    let out = text(&mut session, "s -b 0 L?7fffffffffff 4d 5a");
    assert!(
        out.contains(&format!("{:08x}`{:08x}", base >> 32, base & 0xffff_ffff)),
        "{out}"
    );
}

#[test]
fn sample_goldens() {
    let mut session = open("crashy-x64-null.dmp");
    let (_, pe, base) = image(&session);
    let text_at = base + u64::from(section(&pe, ".text").virtual_address);
    for (name, command) in [
        ("db_text", format!("db {text_at:#x} L20")),
        ("db_missing", "db 10".to_string()),
        ("address", "!address".to_string()),
        ("address_summary", "!address -summary".to_string()),
        ("address_text", format!("!address {text_at:#x}")),
        ("address_stack", "!address @rsp".to_string()),
        (
            "search_ascii",
            format!("s -a {base:#x} L?{:x} \"crashy\"", pe.size_of_image),
        ),
        ("search_qword", "s -q @rsp L200 140001a1e".to_string()),
        ("search_strings", format!("s -[l6]sa {text_at:#x} L200")),
        ("dh", "!dh crashy".to_string()),
        ("dh_sections", "!dh -s crashy".to_string()),
        ("lmi", "!lmi crashy".to_string()),
    ] {
        let root = ntdbg_testutil::repo_root().display().to_string();
        let out = text(&mut session, &command).replace(&root, "<repo>");
        insta::assert_snapshot!(format!("x64_null__{name}"), out, &command);
    }
}

#[test]
fn address_uses_the_memory_info_list_of_a_real_dump() {
    ntdbg_testutil::require_testdata!();
    let Some(mut session) =
        open_shared("mozilla-minidump-stackwalk-pgo/pgo_data/minidumps/windows-x86_64.dmp")
    else {
        return;
    };
    let list = session
        .target()
        .memory_info()
        .expect("MemoryInfoList")
        .len();
    let out = run_command(&mut session, "!address").unwrap();
    let Some(TypedResult::Regions { regions }) = &out.typed else {
        panic!("typed regions")
    };
    assert_eq!(regions.len(), list);
    assert!(regions.iter().all(|r| r.source == "memory_info"));
    assert!(regions
        .iter()
        .any(|r| r.usage == "Stack" && r.thread == Some(0)));
    assert!(regions.iter().any(|r| r.usage == "TEB"));
    assert!(regions
        .iter()
        .any(|r| r.usage == "Image" && r.module.as_deref() == Some("xul")));
    // A search of the whole address space covers what the dump holds, in bounded time, and
    // says that the images of 128 modules not loaded yet were left out.
    let started = std::time::Instant::now();
    let out = run_command(&mut session, "s -a 0 L?7fffffffffff \"Nightly\"").unwrap();
    let elapsed = started.elapsed();
    eprintln!("s over the whole Firefox dump: {elapsed:?}");
    assert!(
        out.text.starts_with("(the range covers 128 modules"),
        "{}",
        out.text
    );
    let Some(TypedResult::SearchHits { hits, .. }) = &out.typed else {
        panic!("typed hits")
    };
    assert!(!hits.is_empty());
    for (name, command) in [
        ("summary", "!address -summary"),
        ("rip", "!address @rip"),
        ("rsp", "!address @rsp"),
        ("dh_ntdll", "!dh -f ntdll"),
        ("lmi_ntdll", "!lmi ntdll"),
        ("search_sa", "s -[l8]sa @rsp L5000"),
    ] {
        let out = text(&mut session, command);
        insta::assert_snapshot!(format!("firefox_x64__{name}"), out, command);
    }
}
