//! PE headers of a loaded module: `!dh` (file header, optional header, section headers) and
//! `!lmi` (the module summary with its debug record and symbol state). The headers are read
//! from dump memory, or from the module's image file when the dump lacks them.

use crate::error::{excerpt, CommandError, ErrorCode};
use crate::output::{CommandOutput, PeHeadersResult, PeSectionRow, TypedResult};
use crate::render::addr;
use crate::spec::{CommandSpec, Invocation};
use minidump::MinidumpModule;
use ntdbg_engine::module_info::file_name_of;
use ntdbg_engine::{module_name, Session};
use ntdbg_formats::pe::{PeHeaders, PeInfo, PeLayout, SectionTableEntry};

pub(crate) const COMMANDS: &[CommandSpec] = &[
    CommandSpec::inspect(
        &["!dh"],
        "!dh [-f | -s] MOD|ADDR",
        "PE headers of a module: file header, optional header, section headers",
        "MOD is a module name; ADDR any address inside a module (its image base is used). \
         -f shows the file and optional headers only, -s the section headers only. The headers \
         are read from dump memory, else from the module's image file on the symbol path (the \
         first line says which).",
        dh,
    ),
    CommandSpec::inspect(
        &["!lmi"],
        "!lmi MOD|ADDR",
        "module summary: base, image name, machine, timestamp, size, debug record, symbol state",
        "Loads the module's symbols to report their state, as `lmv` does.",
        lmi,
    ),
];

/// Bytes read for the headers (one page, as the loader maps them).
const HEADER_PAGE: usize = 0x1000;

/// The data directory names, in their standard order, as `!dh` prints them.
const DIRECTORY_NAMES: [&str; 16] = [
    "Export Directory",
    "Import Directory",
    "Resource Directory",
    "Exception Directory",
    "Security Directory",
    "Base Relocation Directory",
    "Debug Directory",
    "Description Directory",
    "Special Directory",
    "Thread Storage Directory",
    "Load Configuration Directory",
    "Bound Import Directory",
    "Import Address Table Directory",
    "Delay Import Directory",
    "COR20 Header Directory",
    "Reserved Directory",
];

/// A module's headers and where they were read.
struct Headers<'a> {
    module: &'a MinidumpModule,
    base: u64,
    headers: PeHeaders,
    info: PeInfo,
    from_image: bool,
}

/// Finds the module named by `arg` (a name, or an address inside it) and reads its headers.
fn read_headers<'a>(session: &'a Session, arg: &str) -> Result<Headers<'a>, CommandError> {
    let module = match session.module_by_name(arg) {
        Some(m) => m,
        None => {
            let at = crate::commands::util::eval(session, arg)?;
            session.module_at(at).ok_or_else(|| {
                CommandError::new(
                    ErrorCode::NoSuchModule,
                    format!("{} is not inside a loaded module", addr(session, at)),
                )
                .with_hint("`lm` lists the modules")
            })?
        }
    };
    let base = module.raw.base_of_image;
    let read = session.read_memory(base, HEADER_PAGE);
    let present: Vec<u8> = read.bytes.iter().map_while(|b| *b).collect();
    let unreadable = |why: String| {
        CommandError::new(
            ErrorCode::MemoryUnavailable,
            format!(
                "{}: cannot read the PE headers at {}: {why}",
                module_name(&module.name),
                addr(session, base)
            ),
        )
        .with_hint("the dump does not hold them and no matching image was found on the symbol path (`lmv m MOD` shows the search)")
    };
    if present.is_empty() {
        return Err(unreadable(
            session.target().kind().missing_memory().to_string(),
        ));
    }
    let headers = PeHeaders::parse(&present).map_err(|e| unreadable(e.to_string()))?;
    let info = PeInfo::parse(&present, PeLayout::Mapped).map_err(|e| unreadable(e.to_string()))?;
    Ok(Headers {
        module,
        base,
        headers,
        info,
        from_image: !read.from_image.is_empty(),
    })
}

fn dh(session: &mut Session, inv: &Invocation<'_>) -> Result<CommandOutput, CommandError> {
    let mut show_headers = true;
    let mut show_sections = true;
    let mut target = None;
    for word in inv.args.split_whitespace() {
        match word.to_ascii_lowercase().as_str() {
            "-f" => show_sections = false,
            "-s" => show_headers = false,
            "-a" => {}
            w if w.starts_with('-') => {
                return Err(CommandError::syntax(format!(
                    "!dh: unsupported option '{}'",
                    excerpt(word)
                ))
                .with_hint("use -f (headers), -s (sections) or no option (both)"))
            }
            _ if target.is_some() => {
                return Err(CommandError::syntax(format!(
                    "!dh: unexpected '{}'",
                    excerpt(word)
                )))
            }
            _ => target = Some(word),
        }
    }
    let Some(target) = target else {
        return Err(CommandError::syntax("!dh: missing module or address")
            .with_hint("e.g. `!dh crashy` or `!dh -s ntdll`"));
    };
    let h = read_headers(session, target)?;
    let mut text = format!(
        "(headers read from {})\n\n",
        if h.from_image {
            "the module's image file: the dump does not hold them"
        } else {
            "dump memory"
        }
    );
    if show_headers {
        text.push_str(&file_header_text(&h.headers));
        text.push_str(&optional_header_text(&h.headers));
    }
    if show_sections {
        for (i, s) in h.headers.sections.iter().enumerate() {
            text.push_str(&section_text(i + 1, s));
        }
    }
    Ok(CommandOutput::with(text, typed(&h, None)))
}

fn lmi(session: &mut Session, inv: &Invocation<'_>) -> Result<CommandOutput, CommandError> {
    let arg = inv.args.trim();
    if arg.is_empty() {
        return Err(CommandError::syntax("!lmi: missing module").with_hint("e.g. `!lmi crashy`"));
    }
    let h = read_headers(session, arg)?;
    let m = h.module;
    let symbols = session.module_symbols(m);
    let name = module_name(&m.name);
    let f = &h.headers.file;
    let mut text = format!("Loaded Module Info: [{}]\n", excerpt(arg));
    let mut line = |label: &str, value: String| {
        text.push_str(&format!("{label:>15}: {value}\n"));
    };
    line("Module", name.clone());
    line("Base Address", addr(session, h.base));
    line("Image Name", file_name_of(&m.name).to_string());
    line(
        "Machine Type",
        format!("{} ({})", f.machine, machine_name(f.machine)),
    );
    line(
        "Time Stamp",
        format!("{:x} {}", f.time_date_stamp, ctime(f.time_date_stamp)),
    );
    line("Size", format!("{:x}", h.headers.optional.size_of_image));
    line("CheckSum", format!("{:x}", h.headers.optional.checksum));
    line("Characteristics", format!("{:x}", f.characteristics));
    if let Some(cv) = &h.info.codeview {
        let id = cv.identity();
        line("Debug Data Dirs", "Type  Size     VA  Pointer".to_string());
        text.push_str(&format!(
            "{:>21} - {}\n{:>21}Pdb: {}\n",
            "CODEVIEW RSDS",
            id.key(),
            "",
            cv.pdb_path
        ));
    }
    let image_type = if h.from_image {
        "FILE     - Image read successfully from the image file on the symbol path."
    } else {
        "MEMORY   - Image read successfully from loaded memory."
    };
    let mut line = |label: &str, value: String| {
        text.push_str(&format!("{label:>15}: {value}\n"));
    };
    line("Image Type", image_type.to_string());
    let symbol_file = symbols.symbol_file_path().map(|p| p.display().to_string());
    line(
        "Symbol Type",
        format!(
            "{:<8} - {}",
            symbols.status().name().to_ascii_uppercase(),
            symbols.status().label()
        ),
    );
    if let Some(path) = &symbol_file {
        text.push_str(&format!("{:>17}{path}\n", ""));
    }
    Ok(CommandOutput::with(
        text,
        typed(&h, Some(symbols.status().name().to_string())),
    ))
}

fn machine_name(machine: u16) -> &'static str {
    match machine {
        0x14c => "I386",
        0x8664 => "X64",
        0xaa64 => "ARM64",
        0x1c4 => "ARMNT",
        _ => "unknown",
    }
}

fn subsystem_name(subsystem: u16) -> &'static str {
    match subsystem {
        1 => "Native",
        2 => "Windows GUI",
        3 => "Windows CUI",
        5 => "OS/2 CUI",
        7 => "POSIX CUI",
        9 => "Windows CE GUI",
        10 => "EFI Application",
        11 => "EFI Boot Service Driver",
        12 => "EFI Runtime Driver",
        13 => "EFI ROM",
        14 => "Xbox",
        16 => "Windows Boot Application",
        _ => "unknown",
    }
}

/// `Fri Aug 21 01:23:56 2020` (UTC), as `!dh` prints a timestamp.
fn ctime(unix_seconds: u32) -> String {
    let Ok(t) = time::OffsetDateTime::from_unix_timestamp(i64::from(unix_seconds)) else {
        return String::new();
    };
    format!(
        "{} {} {:>2} {:02}:{:02}:{:02} {}",
        &format!("{}", t.weekday())[..3],
        &format!("{}", t.month())[..3],
        t.day(),
        t.hour(),
        t.minute(),
        t.second(),
        t.year()
    )
}

/// The names of the set flags, in table order.
fn flag_names(value: u32, table: &[(u32, &'static str)]) -> Vec<&'static str> {
    table
        .iter()
        .filter(|(bit, _)| value & bit != 0)
        .map(|(_, n)| *n)
        .collect()
}

fn file_header_text(h: &PeHeaders) -> String {
    let f = &h.file;
    let kind = if f.characteristics & 0x2000 != 0 {
        "DLL"
    } else {
        "EXECUTABLE IMAGE"
    };
    let mut out = format!("File Type: {kind}\nFILE HEADER VALUES\n");
    out.push_str(&format!(
        "{:8X} machine ({})\n",
        f.machine,
        machine_name(f.machine)
    ));
    out.push_str(&format!("{:8X} number of sections\n", f.number_of_sections));
    out.push_str(&format!(
        "{:8X} time date stamp {}\n\n",
        f.time_date_stamp,
        ctime(f.time_date_stamp)
    ));
    out.push_str(&format!(
        "{:8X} file pointer to symbol table\n",
        f.pointer_to_symbol_table
    ));
    out.push_str(&format!("{:8X} number of symbols\n", f.number_of_symbols));
    out.push_str(&format!(
        "{:8X} size of optional header\n",
        f.size_of_optional_header
    ));
    out.push_str(&format!("{:8X} characteristics\n", f.characteristics));
    const FLAGS: &[(u32, &str)] = &[
        (0x0001, "Relocations stripped"),
        (0x0002, "Executable"),
        (0x0004, "Line numbers stripped"),
        (0x0008, "Symbols stripped"),
        (0x0020, "App can handle >2gb addresses"),
        (0x0100, "32 bit word machine"),
        (0x0200, "Debug information stripped"),
        (0x1000, "System"),
        (0x2000, "DLL"),
    ];
    for name in flag_names(u32::from(f.characteristics), FLAGS) {
        out.push_str(&format!("            {name}\n"));
    }
    out
}

/// One `!dh` value line: the value in hex, right-aligned in 8 columns, then its label.
fn hex_line(out: &mut String, value: u64, label: &str) {
    out.push_str(&format!("{value:8X} {label}\n"));
}

fn optional_header_text(h: &PeHeaders) -> String {
    let o = &h.optional;
    let wide = o.magic == 0x20b;
    let version = |(major, minor): (u16, u16)| format!("{major}.{minor:02}");
    let mut out = String::from("\nOPTIONAL HEADER VALUES\n");
    hex_line(&mut out, u64::from(o.magic), "magic #");
    let linker = format!("{}.{:02}", o.linker_version.0, o.linker_version.1);
    out.push_str(&format!("{linker:>8} linker version\n"));
    hex_line(&mut out, u64::from(o.size_of_code), "size of code");
    hex_line(
        &mut out,
        u64::from(o.size_of_initialized_data),
        "size of initialized data",
    );
    hex_line(
        &mut out,
        u64::from(o.size_of_uninitialized_data),
        "size of uninitialized data",
    );
    hex_line(
        &mut out,
        u64::from(o.address_of_entry_point),
        "address of entry point",
    );
    hex_line(&mut out, u64::from(o.base_of_code), "base of code");
    if let Some(data) = o.base_of_data {
        hex_line(&mut out, u64::from(data), "base of data");
    }
    out.push_str("         ----- new -----\n");
    let big = |value: u64| {
        if wide {
            format!("{value:016x}")
        } else {
            format!("{value:8x}")
        }
    };
    out.push_str(&format!("{} image base\n", big(o.image_base)));
    out.push_str(&format!("{:8X} section alignment\n", o.section_alignment));
    out.push_str(&format!("{:8X} file alignment\n", o.file_alignment));
    out.push_str(&format!(
        "{:8X} subsystem ({})\n",
        o.subsystem,
        subsystem_name(o.subsystem)
    ));
    out.push_str(&format!(
        "{:>8} operating system version\n",
        version(o.os_version)
    ));
    out.push_str(&format!("{:>8} image version\n", version(o.image_version)));
    out.push_str(&format!(
        "{:>8} subsystem version\n",
        version(o.subsystem_version)
    ));
    out.push_str(&format!("{:8X} size of image\n", o.size_of_image));
    out.push_str(&format!("{:8X} size of headers\n", o.size_of_headers));
    out.push_str(&format!("{:8X} checksum\n", o.checksum));
    out.push_str(&format!(
        "{} size of stack reserve\n",
        big(o.size_of_stack_reserve)
    ));
    out.push_str(&format!(
        "{} size of stack commit\n",
        big(o.size_of_stack_commit)
    ));
    out.push_str(&format!(
        "{} size of heap reserve\n",
        big(o.size_of_heap_reserve)
    ));
    out.push_str(&format!(
        "{} size of heap commit\n",
        big(o.size_of_heap_commit)
    ));
    out.push_str(&format!(
        "{:8X}  DLL characteristics\n",
        o.dll_characteristics
    ));
    const DLL_FLAGS: &[(u32, &str)] = &[
        (0x0020, "High entropy VA supported"),
        (0x0040, "Dynamic base"),
        (0x0080, "Force integrity"),
        (0x0100, "NX compatible"),
        (0x0200, "No isolation"),
        (0x0400, "No SEH"),
        (0x0800, "Do not bind"),
        (0x1000, "AppContainer"),
        (0x2000, "WDM driver"),
        (0x4000, "Guard"),
        (0x8000, "Terminal server aware"),
    ];
    for name in flag_names(u32::from(o.dll_characteristics), DLL_FLAGS) {
        out.push_str(&format!("            {name}\n"));
    }
    for (i, name) in DIRECTORY_NAMES.iter().enumerate() {
        let d = h.data_directories.get(i).copied().unwrap_or_default();
        out.push_str(&format!(
            "{:8X} [{:8X}] address [size] of {name}\n",
            d.rva, d.size
        ));
    }
    out
}

fn section_text(number: usize, s: &SectionTableEntry) -> String {
    let mut out = format!("\n\nSECTION HEADER #{number:X}\n{:>8} name\n", s.name);
    let rows: [(u64, &str); 8] = [
        (u64::from(s.virtual_size), "virtual size"),
        (u64::from(s.virtual_address), "virtual address"),
        (u64::from(s.size_of_raw_data), "size of raw data"),
        (u64::from(s.pointer_to_raw_data), "file pointer to raw data"),
        (
            u64::from(s.pointer_to_relocations),
            "file pointer to relocation table",
        ),
        (
            u64::from(s.pointer_to_linenumbers),
            "file pointer to line numbers",
        ),
        (u64::from(s.number_of_relocations), "number of relocations"),
        (u64::from(s.number_of_linenumbers), "number of line numbers"),
    ];
    for (value, label) in rows {
        out.push_str(&format!("{value:8X} {label}\n"));
    }
    out.push_str(&format!("{:8X} flags\n", s.characteristics));
    for line in section_flags(s.characteristics) {
        out.push_str(&format!("         {line}\n"));
    }
    out
}

/// The lines `!dh` prints under a section's flags: contents, alignment, access.
fn section_flags(c: u32) -> Vec<String> {
    const CONTENTS: &[(u32, &str)] = &[
        (0x20, "Code"),
        (0x40, "Initialized Data"),
        (0x80, "Uninitialized Data"),
        (0x200, "Info"),
        (0x800, "Remove"),
        (0x1000, "Comdat"),
        (0x0200_0000, "Discardable"),
        (0x0400_0000, "Not Cached"),
        (0x0800_0000, "Not Paged"),
        (0x1000_0000, "Shared"),
    ];
    let mut lines: Vec<String> = flag_names(c, CONTENTS)
        .into_iter()
        .map(str::to_string)
        .collect();
    let align = (c >> 20) & 0xf;
    lines.push(if align == 0 {
        "(no align specified)".to_string()
    } else {
        format!("{} byte align", 1u32 << (align - 1))
    });
    let access: Vec<&str> = flag_names(
        c,
        &[
            (0x2000_0000, "Execute"),
            (0x4000_0000, "Read"),
            (0x8000_0000, "Write"),
        ],
    );
    lines.push(match access.as_slice() {
        ["Read"] => "Read Only".to_string(),
        [] => "No Access".to_string(),
        parts => parts.join(" "),
    });
    lines
}

fn typed(h: &Headers<'_>, symbols: Option<String>) -> TypedResult {
    let f = &h.headers.file;
    let o = &h.headers.optional;
    TypedResult::PeHeaders(Box::new(PeHeadersResult {
        module: module_name(&h.module.name),
        base: format!("{:#x}", h.base),
        source: if h.from_image {
            "image_file"
        } else {
            "dump_memory"
        }
        .to_string(),
        machine: format!("{:#x}", f.machine),
        time_date_stamp: format!("{:#010x}", f.time_date_stamp),
        characteristics: format!("{:#x}", f.characteristics),
        image_base: format!("{:#x}", o.image_base),
        entry_point: format!("{:#x}", o.address_of_entry_point),
        size_of_image: format!("{:#x}", o.size_of_image),
        checksum: format!("{:#x}", o.checksum),
        subsystem: subsystem_name(o.subsystem).to_string(),
        dll_characteristics: format!("{:#x}", o.dll_characteristics),
        pdb: h.info.codeview.as_ref().map(|cv| cv.pdb_path.clone()),
        symbols,
        sections: h
            .headers
            .sections
            .iter()
            .map(|s| PeSectionRow {
                name: s.name.clone(),
                address: format!("{:#x}", h.base.wrapping_add(u64::from(s.virtual_address))),
                virtual_size: format!("{:#x}", s.virtual_size),
                raw_size: format!("{:#x}", s.size_of_raw_data),
                characteristics: format!("{:#x}", s.characteristics),
            })
            .collect(),
    }))
}
