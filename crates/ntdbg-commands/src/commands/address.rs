//! `!address`: the address space region by region, from the dump's MemoryInfoList stream
//! when it has one, else derived from what the dump holds (memory list, modules, thread
//! stacks). Each region gets WinDbg's usage: image (module and section), stack and TEB of a
//! thread, PEB, heap (from the PEB's heap list), free, or unknown.

use crate::error::{excerpt, CommandError, ErrorCode};
use crate::output::{CommandOutput, RegionRow, TypedResult};
use crate::render::addr;
use crate::spec::{CommandSpec, Invocation};
use ntdbg_engine::memory::MemorySource;
use ntdbg_engine::{module_name, Session};
use ntdbg_formats::pe::{PeInfo, PeLayout, SectionHeader};
use ntdbg_targets::memory_flags::{
    MEM_COMMIT, MEM_FREE, MEM_IMAGE, MEM_MAPPED, MEM_PRIVATE, MEM_RESERVE,
};
use ntdbg_targets::MemoryInfo;

pub(crate) const COMMANDS: &[CommandSpec] = &[CommandSpec::inspect(
    &["!address"],
    "!address [ADDR | -summary]",
    "memory regions with state, protection, type and usage (image, stack, TEB, PEB, heap)",
    "Without arguments lists every region; `!address ADDR` describes the region holding ADDR; \
     `!address -summary` totals regions by usage, type, state and protection. Regions come from \
     the dump's MemoryInfoList stream when it has one; otherwise they are derived from the \
     memory ranges the dump holds, the module list and the thread stacks, and state, protection \
     and type are unknown (the output says which source it used). `Content source` says where \
     the bytes at ADDR come from: 1 (target) the dump, 2 (mapped) the module's image file, \
     0 (invalid) nowhere.",
    address,
)];

/// What a region is used for.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Usage {
    Free,
    Image {
        module: String,
        path: String,
        section: Option<String>,
    },
    Stack {
        thread: usize,
    },
    Teb {
        thread: usize,
    },
    Peb,
    Heap {
        id: usize,
        handle: u64,
    },
    Unknown,
}

impl Usage {
    /// WinDbg's usage name.
    fn name(&self) -> &'static str {
        match self {
            Usage::Free => "Free",
            Usage::Image { .. } => "Image",
            Usage::Stack { .. } => "Stack",
            Usage::Teb { .. } => "TEB",
            Usage::Peb => "PEB",
            Usage::Heap { .. } => "Heap",
            Usage::Unknown => "<unknown>",
        }
    }
}

/// One region with its usage.
#[derive(Debug, Clone)]
struct Region {
    base: u64,
    end: u64,
    info: Option<MemoryInfo>,
    usage: Usage,
}

/// The regions and where they came from.
struct Layout {
    regions: Vec<Region>,
    from_memory_info: bool,
}

fn address(session: &mut Session, inv: &Invocation<'_>) -> Result<CommandOutput, CommandError> {
    let args = inv.args.trim();
    let layout = regions(session);
    let source = if layout.from_memory_info {
        "memory_info"
    } else {
        "derived"
    };
    let live = session.target().kind() == ntdbg_targets::TargetKind::Live;
    let note = if layout.from_memory_info {
        String::new()
    } else if live {
        "(the stub gives no memory map: regions derived from the modules and thread stacks; \
         state, protection and type unknown)\n\n"
            .to_string()
    } else {
        "(no MemoryInfoList stream: regions derived from the dump's memory ranges, modules and \
         thread stacks; state, protection and type unknown)\n\n"
            .to_string()
    };
    let (text, shown): (String, Vec<&Region>) = if args.is_empty() {
        (
            format!("{note}{}", list_text(session, &layout.regions)),
            layout.regions.iter().collect(),
        )
    } else if args.eq_ignore_ascii_case("-summary") {
        (
            format!("{note}{}", summary_text(session, &layout.regions)),
            layout.regions.iter().collect(),
        )
    } else if args.starts_with('-') {
        return Err(
            CommandError::syntax(format!("!address: unknown option '{}'", excerpt(args)))
                .with_hint("use `!address`, `!address ADDR` or `!address -summary`"),
        );
    } else {
        let at = crate::commands::util::eval(session, args)?;
        let Some(region) = layout.regions.iter().find(|r| r.base <= at && at < r.end) else {
            return Err(CommandError::new(
                ErrorCode::NoRegion,
                format!(
                    "!address: {} is in no region {} describes",
                    addr(session, at),
                    session.target().kind().noun()
                ),
            )
            .with_hint(match (live, layout.from_memory_info) {
                (true, true) => "the stub's memory map does not list it: nothing is mapped there",
                (true, false) => "the stub gives no memory map; only modules and stacks are known",
                (false, true) => "the MemoryInfoList stream does not list it",
                (false, false) => "the dump has no MemoryInfoList stream; only captured memory, modules and stacks are known",
            }));
        };
        (
            format!("{note}{}", region_text(session, region, at)),
            vec![region],
        )
    };
    let rows = shown.into_iter().map(|r| row(r, source)).collect();
    Ok(CommandOutput::with(
        text,
        TypedResult::Regions { regions: rows },
    ))
}

/// The regions of the address space, classified.
fn regions(session: &Session) -> Layout {
    let known = Known::gather(session);
    match session.target().memory_info() {
        Some(list) if !list.is_empty() => {
            let regions = list
                .iter()
                .map(|m| Region {
                    base: m.base,
                    end: m.end(),
                    info: Some(*m),
                    usage: known.usage_of(session, m.base, m.end(), Some(m)),
                })
                .collect();
            Layout {
                regions,
                from_memory_info: true,
            }
        }
        _ => Layout {
            regions: derived_regions(session, &known),
            from_memory_info: false,
        },
    }
}

/// Regions from what the dump holds: every module (one region for the headers and one per
/// section, each running to the next section, as the loader maps them page-aligned), every
/// captured range outside them.
fn derived_regions(session: &Session, known: &Known) -> Vec<Region> {
    let mut regions = Vec::new();
    for m in session.target().modules().by_addr() {
        let base = m.raw.base_of_image;
        let end = base.saturating_add(u64::from(m.raw.size_of_image));
        let mut starts: Vec<u64> = module_sections(session, base, false)
            .unwrap_or_default()
            .iter()
            .map(|s| base.saturating_add(u64::from(s.virtual_address)))
            .filter(|&s| s > base && s < end)
            .collect();
        starts.sort_unstable();
        starts.dedup();
        let mut at = base;
        for next in starts.into_iter().chain([end]) {
            regions.push(image_region(session, known, at, next));
            at = next;
        }
    }
    let modules: Vec<(u64, u64)> = regions.iter().map(|r| (r.base, r.end)).collect();
    for r in session.target().regions() {
        // Captured ranges inside a module are already described by it.
        let mut at = r.base;
        for &(b, e) in modules.iter().filter(|(b, e)| *b < r.end() && *e > r.base) {
            if b > at {
                regions.push(Region {
                    base: at,
                    end: b,
                    info: None,
                    usage: known.usage_of(session, at, b, None),
                });
            }
            at = at.max(e);
        }
        if at < r.end() {
            regions.push(Region {
                base: at,
                end: r.end(),
                info: None,
                usage: known.usage_of(session, at, r.end(), None),
            });
        }
    }
    regions.sort_by_key(|r| r.base);
    regions
}

fn image_region(session: &Session, known: &Known, base: u64, end: u64) -> Region {
    Region {
        base,
        end,
        info: None,
        usage: known.usage_of(session, base, end, None),
    }
}

/// Addresses that name a region's use: thread stacks and TEBs, the PEB, heaps.
struct Known {
    /// (thread index, stack range from the TEB or the captured stack).
    stacks: Vec<(usize, u64, u64)>,
    /// (thread index, TEB address).
    tebs: Vec<(usize, u64)>,
    peb: Option<u64>,
    /// Heap handles (the heap's base address), in the PEB's order.
    heaps: Vec<u64>,
    /// Allocation bases (MemoryInfoList) of each thread's stack: (thread index, base).
    stack_allocations: Vec<(usize, u64)>,
    /// Allocation bases of each heap: (heap id, base).
    heap_allocations: Vec<(usize, u64)>,
}

impl Known {
    fn gather(session: &Session) -> Known {
        let target = session.target();
        let mut stacks = Vec::new();
        let mut tebs = Vec::new();
        for (i, t) in target.threads().iter().enumerate() {
            if t.teb != 0 {
                tebs.push((i, t.teb));
            }
            let from_teb = session.teb(i).ok().and_then(|teb| {
                let (base, limit) = (teb.stack_base?, teb.stack_limit?);
                (limit < base).then_some((limit, base))
            });
            if let Some((limit, base)) = from_teb.or(t.stack.map(|s| (s.base, s.end()))) {
                stacks.push((i, limit, base));
            }
        }
        let peb = session.peb_address();
        let heaps = session.peb().map(|p| p.heaps).unwrap_or_default();
        let allocation_of = |a: u64| {
            let r = ntdbg_targets::memory_info_at(target.memory_info()?, a)
                .filter(|r| r.state != MEM_FREE)?;
            Some(r.allocation_base)
        };
        let stack_allocations = stacks
            .iter()
            .filter_map(|&(i, lo, _)| Some((i, allocation_of(lo)?)))
            .collect();
        let heap_allocations = heaps
            .iter()
            .enumerate()
            .filter_map(|(id, &h)| Some((id, allocation_of(h)?)))
            .collect();
        Known {
            stacks,
            tebs,
            peb,
            heaps,
            stack_allocations,
            heap_allocations,
        }
    }

    /// The usage of `[base, end)`; with MemoryInfo, whole allocations count (a stack's guard
    /// and reserve pages are the stack's too).
    fn usage_of(&self, session: &Session, base: u64, end: u64, info: Option<&MemoryInfo>) -> Usage {
        if info.is_some_and(|m| m.state == MEM_FREE) {
            return Usage::Free;
        }
        if let Some(m) = session.module_at(base) {
            let mbase = m.raw.base_of_image;
            let section = module_sections(session, mbase, false).and_then(|secs| {
                secs.iter()
                    .find(|s| s.contains_rva((base - mbase) as u32))
                    .map(|s| s.name.clone())
            });
            return Usage::Image {
                module: module_name(&m.name),
                path: m.name.clone(),
                section,
            };
        }
        let overlaps = |lo: u64, hi: u64| lo < end && hi > base;
        let allocation = info.map(|m| m.allocation_base);
        if let Some(&(i, _)) = self.tebs.iter().find(|(_, teb)| base <= *teb && *teb < end) {
            return Usage::Teb { thread: i };
        }
        let by_allocation = |list: &[(usize, u64)]| {
            list.iter()
                .find(|(_, a)| Some(*a) == allocation)
                .map(|(i, _)| *i)
        };
        let stack = self
            .stacks
            .iter()
            .find(|(_, lo, hi)| overlaps(*lo, *hi))
            .map(|(i, ..)| *i)
            .or_else(|| by_allocation(&self.stack_allocations));
        if let Some(thread) = stack {
            return Usage::Stack { thread };
        }
        if self.peb.is_some_and(|p| base <= p && p < end) {
            return Usage::Peb;
        }
        let heap = self
            .heaps
            .iter()
            .position(|&h| base <= h && h < end)
            .or_else(|| by_allocation(&self.heap_allocations));
        if let Some(id) = heap {
            return Usage::Heap {
                id,
                handle: self.heaps[id],
            };
        }
        Usage::Unknown
    }
}

fn module_sections(session: &Session, base: u64, load: bool) -> Option<Vec<SectionHeader>> {
    if let Some(symbols) = session.symbols().loaded(base) {
        if let Some(info) = symbols.image_info() {
            return Some(info.sections.clone());
        }
    }
    if load {
        let m = session.module_at(base)?;
        return session
            .module_symbols(m)
            .image_info()
            .map(|i| i.sections.clone());
    }
    let header = session.target().read_exact(base, 0x1000)?;
    PeInfo::parse(&header, PeLayout::Mapped)
        .ok()
        .map(|i| i.sections)
}

/// `PAGE_*` names joined with ` | `, as WinDbg prints them.
fn protect_name(protect: u32) -> String {
    const BASE: &[(u32, &str)] = &[
        (0x01, "PAGE_NOACCESS"),
        (0x02, "PAGE_READONLY"),
        (0x04, "PAGE_READWRITE"),
        (0x08, "PAGE_WRITECOPY"),
        (0x10, "PAGE_EXECUTE"),
        (0x20, "PAGE_EXECUTE_READ"),
        (0x40, "PAGE_EXECUTE_READWRITE"),
        (0x80, "PAGE_EXECUTE_WRITECOPY"),
        (0x100, "PAGE_GUARD"),
        (0x200, "PAGE_NOCACHE"),
        (0x400, "PAGE_WRITECOMBINE"),
    ];
    let names: Vec<&str> = BASE
        .iter()
        .filter(|(bit, _)| protect & bit != 0)
        .map(|(_, n)| *n)
        .collect();
    if names.is_empty() {
        format!("{protect:x}")
    } else {
        names.join(" | ")
    }
}

fn state_name(state: u32) -> &'static str {
    match state {
        MEM_COMMIT => "MEM_COMMIT",
        MEM_RESERVE => "MEM_RESERVE",
        MEM_FREE => "MEM_FREE",
        _ => "",
    }
}

fn type_name(kind: u32) -> &'static str {
    match kind {
        MEM_PRIVATE => "MEM_PRIVATE",
        MEM_MAPPED => "MEM_MAPPED",
        MEM_IMAGE => "MEM_IMAGE",
        _ => "",
    }
}

/// A size as WinDbg's `(  16.000 kB)`.
fn human(size: u64) -> String {
    const UNITS: &[&str] = &["kB", "MB", "GB", "TB"];
    let mut value = size as f64 / 1024.0;
    let mut unit = 0;
    while value >= 1024.0 && unit + 1 < UNITS.len() {
        value /= 1024.0;
        unit += 1;
    }
    format!("({value:8.3} {})", UNITS[unit])
}

/// A 64-bit value as the summary columns show it: `7ffe`e8a4f000`, `0`0c9a6000`.
fn split_hex(value: u64) -> String {
    format!("{:x}`{:08x}", value >> 32, value & 0xffff_ffff)
}

/// The usage column's detail: `[~0; 1f4c.1e60]`, `[crashy; "C:\…\crashy.exe"]`.
fn usage_detail(session: &Session, usage: &Usage) -> String {
    let thread_tag = |i: usize| {
        let tid = session.target().threads().get(i).map_or(0, |t| t.id);
        match session.target().system().process_id {
            Some(pid) => format!("[~{i}; {pid:x}.{tid:x}]"),
            None => format!("[~{i}; {tid:x}]"),
        }
    };
    match usage {
        Usage::Image { module, path, .. } => format!("[{module}; \"{path}\"]"),
        Usage::Stack { thread } | Usage::Teb { thread } => thread_tag(*thread),
        Usage::Heap { id, handle } => format!("[ID: {id}; Handle: {}]", addr(session, *handle)),
        _ => String::new(),
    }
}

fn list_text(session: &Session, regions: &[Region]) -> String {
    let mut out = format!(
        "{:>17} {:>17} {:>17} {:<11} {:<11} {:<34} {}\n{}\n",
        "BaseAddress",
        "EndAddress+1",
        "RegionSize",
        "Type",
        "State",
        "Protect",
        "Usage",
        "-".repeat(130)
    );
    let mut last_allocation = None;
    for r in regions {
        let info = r.info.as_ref();
        let allocation = info.map(|m| m.allocation_base);
        let mark = if allocation.is_some() && allocation != last_allocation {
            '+'
        } else {
            ' '
        };
        last_allocation = allocation;
        let line = format!(
            "{mark}{:>16} {:>17} {:>17} {:<11} {:<11} {:<34} {:<10} {}",
            split_hex(r.base),
            split_hex(r.end),
            split_hex(r.end - r.base),
            info.map_or("", |m| type_name(m.kind)),
            info.map_or("", |m| state_name(m.state)),
            info.filter(|m| m.protect != 0)
                .map_or(String::new(), |m| protect_name(m.protect)),
            r.usage.name(),
            usage_detail(session, &r.usage)
        );
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

fn region_text(session: &Session, r: &Region, at: u64) -> String {
    let mut out = String::new();
    let mut line = |label: &str, value: String| {
        out.push_str(&format!("{:<24}{value}\n", format!("{label}:")));
    };
    line("Usage", r.usage.name().to_string());
    line("Base Address", addr(session, r.base));
    line("End Address", addr(session, r.end));
    line(
        "Region Size",
        format!(
            "{:08x}`{:08x} {}",
            (r.end - r.base) >> 32,
            (r.end - r.base) & 0xffff_ffff,
            human(r.end - r.base)
        ),
    );
    if let Some(m) = &r.info {
        line(
            "State",
            format!("{:08x}          {}", m.state, state_name(m.state)),
        );
        if m.protect != 0 {
            line(
                "Protect",
                format!("{:08x}          {}", m.protect, protect_name(m.protect)),
            );
        }
        if m.kind != 0 {
            line(
                "Type",
                format!("{:08x}          {}", m.kind, type_name(m.kind)),
            );
        }
        if m.state != MEM_FREE {
            line("Allocation Base", addr(session, m.allocation_base));
            line(
                "Allocation Protect",
                format!(
                    "{:08x}          {}",
                    m.allocation_protect,
                    protect_name(m.allocation_protect)
                ),
            );
        }
    }
    match &r.usage {
        Usage::Image {
            module,
            path,
            section,
        } => {
            line("Image Path", path.clone());
            line("Module Name", module.clone());
            if let Some(s) = section {
                line("Section", s.clone());
            }
            line("More info", format!("lmv m {module}"));
            line("More info", format!("!lmi {module}"));
            line("More info", format!("ln {at:#x}"));
            line(
                "More info",
                format!("!dh {:#x}", image_base(session, r.base)),
            );
        }
        Usage::Stack { thread } => {
            line("Additional info", usage_detail(session, &r.usage));
            line("More info", format!("~{thread}k"));
        }
        Usage::Teb { .. } => {
            line("Additional info", usage_detail(session, &r.usage));
            line("More info", "!teb".to_string());
        }
        Usage::Peb => line("More info", "!peb".to_string()),
        Usage::Heap { .. } => line("Additional info", usage_detail(session, &r.usage)),
        Usage::Free | Usage::Unknown => {}
    }
    let (source, length) = content_source(session, at, r.end);
    out.push_str(&format!(
        "\n\nContent source: {source}, length: {length:x}\n"
    ));
    out
}

fn image_base(session: &Session, at: u64) -> u64 {
    session.module_at(at).map_or(at, |m| m.raw.base_of_image)
}

/// Where the bytes from `at` come from, and for how long they keep coming from there (up to
/// `end`): WinDbg's `1 (target)`, `2 (mapped)` (the image file) or `0 (invalid)`.
fn content_source(session: &Session, at: u64, end: u64) -> (&'static str, u64) {
    let spans = session.memory_spans(at..end, true);
    match spans.first() {
        Some(s) if s.range.start == at => {
            // Spans of one source that follow each other count as one run.
            let mut run_end = s.range.end;
            for next in spans.iter().skip(1) {
                if next.range.start != run_end || next.source != s.source {
                    break;
                }
                run_end = next.range.end;
            }
            let name = match s.source {
                MemorySource::Dump => "1 (target)",
                MemorySource::Image => "2 (mapped)",
            };
            (name, run_end - at)
        }
        first => (
            "0 (invalid)",
            first.map_or(end, |s| s.range.start).saturating_sub(at),
        ),
    }
}

/// One line of a summary table.
fn summary_line(out: &mut String, name: &str, count: usize, size: u64, busy: u64, total: u64) {
    let pct = |part: u64, whole: u64| {
        if whole == 0 {
            0.0
        } else {
            part as f64 * 100.0 / whole as f64
        }
    };
    let busy_pct = if name == "Free" || name == "MEM_FREE" {
        String::new()
    } else {
        format!("{:.2}%", pct(size, busy))
    };
    out.push_str(&format!(
        "{name:<30} {count:>10} {:>17} {} {busy_pct:>8} {:>8.2}%\n",
        split_hex(size),
        human(size),
        pct(size, total)
    ));
}

fn summary_text(session: &Session, regions: &[Region]) -> String {
    let total: u64 = regions.iter().map(|r| r.end - r.base).sum();
    let busy: u64 = regions
        .iter()
        .filter(|r| r.usage != Usage::Free)
        .map(|r| r.end - r.base)
        .sum();
    let header = |title: &str| {
        format!(
            "--- {title} {} RgnCount ----------- Total Size -------- %ofBusy %ofTotal\n",
            "-".repeat(29usize.saturating_sub(title.len()))
        )
    };
    let mut out = String::new();
    let table = |out: &mut String, rows: Vec<(String, usize, u64)>| {
        let mut rows = rows;
        rows.sort_by(|a, b| b.2.cmp(&a.2).then(a.0.cmp(&b.0)));
        for (name, count, size) in rows {
            summary_line(out, &name, count, size, busy, total);
        }
    };
    let group = |key: &dyn Fn(&Region) -> Option<String>| {
        let mut rows: Vec<(String, usize, u64)> = Vec::new();
        for r in regions {
            let Some(k) = key(r) else { continue };
            match rows.iter_mut().find(|row| row.0 == k) {
                Some(row) => {
                    row.1 += 1;
                    row.2 += r.end - r.base;
                }
                None => rows.push((k, 1, r.end - r.base)),
            }
        }
        rows
    };
    out.push_str(&header("Usage Summary"));
    table(&mut out, group(&|r| Some(r.usage.name().to_string())));
    let has_info = regions.iter().any(|r| r.info.is_some());
    if has_info {
        out.push('\n');
        out.push_str(&header("Type Summary (for busy)"));
        table(
            &mut out,
            group(&|r| {
                r.info
                    .filter(|m| m.state != MEM_FREE && m.kind != 0)
                    .map(|m| type_name(m.kind).to_string())
            }),
        );
        out.push('\n');
        out.push_str(&header("State Summary"));
        table(
            &mut out,
            group(&|r| r.info.map(|m| state_name(m.state).to_string())),
        );
        out.push('\n');
        out.push_str(&header("Protect Summary (for commit)"));
        table(
            &mut out,
            group(&|r| {
                r.info
                    .filter(|m| m.state == MEM_COMMIT)
                    .map(|m| protect_name(m.protect))
            }),
        );
    }
    out.push('\n');
    out.push_str(
        "--- Largest Region by Usage ----------- Base Address -------- Region Size ----------\n",
    );
    let mut names: Vec<&str> = Vec::new();
    for r in regions {
        if !names.contains(&r.usage.name()) {
            names.push(r.usage.name());
        }
    }
    let mut largest: Vec<&Region> = names
        .iter()
        .filter_map(|n| {
            regions
                .iter()
                .filter(|r| r.usage.name() == *n)
                .max_by_key(|r| r.end - r.base)
        })
        .collect();
    largest.sort_by_key(|r| std::cmp::Reverse(r.end - r.base));
    for r in largest {
        let line = format!(
            "{:<30} {:>17} {:>17} {} {}",
            r.usage.name(),
            split_hex(r.base),
            split_hex(r.end - r.base),
            human(r.end - r.base),
            usage_detail(session, &r.usage)
        );
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

/// The typed row of a region.
fn row(r: &Region, source: &str) -> RegionRow {
    let (module, section, thread) = match &r.usage {
        Usage::Image {
            module, section, ..
        } => (Some(module.clone()), section.clone(), None),
        Usage::Stack { thread } | Usage::Teb { thread } => (None, None, Some(*thread)),
        _ => (None, None, None),
    };
    let info = r.info.as_ref();
    RegionRow {
        base: format!("{:#x}", r.base),
        end: format!("{:#x}", r.end),
        size: format!("{:#x}", r.end - r.base),
        state: info.map(|m| state_name(m.state).to_string()),
        protect: info
            .filter(|m| m.protect != 0)
            .map(|m| protect_name(m.protect)),
        kind: info.map(|m| type_name(m.kind).to_string()),
        usage: r.usage.name().to_string(),
        module,
        section,
        thread,
        source: source.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_sizes() {
        assert_eq!(protect_name(0x104), "PAGE_READWRITE | PAGE_GUARD");
        assert_eq!(protect_name(0x20), "PAGE_EXECUTE_READ");
        assert_eq!(human(0x4000), "(  16.000 kB)");
        assert_eq!(human(0x0c9a_6000), "( 201.648 MB)");
        assert_eq!(split_hex(0x7ffe_e8a4_f000), "7ffe`e8a4f000");
        assert_eq!(split_hex(0x1000), "0`00001000");
    }
}
