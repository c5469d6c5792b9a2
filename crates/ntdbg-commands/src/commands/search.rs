//! `s`: searching memory for bytes, values, text, or any printable string, over the memory
//! the dump holds and the read-only image sections read from module files.
//!
//! The search walks the readable spans of the range (the dump's captured ranges and the
//! image-backed ranges), never address by address, so `L?` over the whole address space costs
//! what the dump holds. Hits are capped; the output says when the cap stopped the search.

use crate::commands::memory::{render_bytes, render_values};
use crate::error::{excerpt, CommandError, ErrorCode};
use crate::output::{CommandOutput, SearchHit, TypedResult};
use crate::render::addr;
use crate::spec::{CommandSpec, Invocation};
use ntdbg_engine::expr::{parse_range, split_args_indexed, Extent};
use ntdbg_engine::Session;
use std::ops::Range;

pub(crate) const COMMANDS: &[CommandSpec] = &[CommandSpec::inspect(
    &["s"],
    "s [-[FLAGS]TYPE] RANGE PATTERN | s -[FLAGS]sa RANGE | s -[FLAGS]su RANGE",
    "search memory for bytes, words, dwords, qwords, ASCII or UTF-16 text, or printable strings",
    "TYPE is -b (bytes, the default), -w, -d, -q (values at their natural alignment), -a \
     (ASCII text) or -u (UTF-16 text); -sa and -su list printable ASCII / UTF-16 strings of at \
     least 3 characters (`-[l N]sa` sets the minimum). FLAGS in brackets: `1` prints addresses \
     only, `l N` the minimum string length. RANGE is `ADDR L COUNT` (bytes) or `ADDR ADDR`; \
     ranges over 256 MB need `L?`. PATTERN is values (`s -b 0 L?100000 41 42`, \
     `s -d @rsp L1000 'H'`) or quoted text (`s -a crashy L?80000 \"abort\"`). The search covers \
     the memory the dump holds and, inside modules, read-only image sections read from the \
     image file (for at most 16 modules not loaded yet; a wider range searches the images \
     already loaded and says so); it stops after 1,000 hits.",
    search,
)];

/// Largest range without `L?` (WinDbg's limit).
const MAX_PLAIN_RANGE: u64 = 256 * 1024 * 1024;
/// Most hits reported.
const MAX_HITS: usize = 1000;
/// Bytes read at a time (and searched between two cancellation checks).
const CHUNK: u64 = 1024 * 1024;
/// Longest string a string scan shows.
const MAX_STRING_SHOWN: usize = 256;
/// Most modules whose symbols (and image) a search loads to cover their image-backed memory;
/// a wider range searches the images of modules already loaded only, and says so.
const MAX_IMAGE_LOADS: usize = 16;
/// Default minimum length of `-sa`/`-su` strings.
const DEFAULT_MIN_STRING: usize = 3;

/// What is searched for.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Kind {
    /// A byte pattern, matched at multiples of `align` (the value size).
    Pattern {
        bytes: Vec<u8>,
        align: u64,
        display: Display,
    },
    /// Printable strings of at least `min` characters.
    Strings { wide: bool, min: usize },
}

/// How a pattern hit is shown: the display line WinDbg prints at the hit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Display {
    Bytes,
    Words,
    Dwords,
    Qwords,
}

/// The parsed options.
struct Options {
    kind_letter: String,
    addresses_only: bool,
    min_string: usize,
}

fn search(session: &mut Session, inv: &Invocation<'_>) -> Result<CommandOutput, CommandError> {
    let (options, rest) = parse_options(inv.args)?;
    let (range, pattern_text) = split_range(session, rest)?;
    let kind = match options.kind_letter.as_str() {
        "sa" | "su" => {
            if !pattern_text.trim().is_empty() {
                return Err(CommandError::syntax(format!(
                    "s -{}: takes no pattern, got '{}'",
                    options.kind_letter,
                    excerpt(pattern_text.trim())
                )));
            }
            Kind::Strings {
                wide: options.kind_letter == "su",
                min: options.min_string,
            }
        }
        letter => parse_pattern(session, letter, pattern_text)?,
    };
    let not_loaded = session.modules_not_loaded(range.clone());
    let load_images = not_loaded <= MAX_IMAGE_LOADS;
    let (hits, truncated) = run(session, range.clone(), &kind, load_images)?;
    let mut text = String::new();
    if !load_images {
        text.push_str(&format!(
            "(the range covers {not_loaded} modules whose images are not loaded yet: only dump \
             memory and the images of loaded modules were searched; narrow the range or load \
             them first with `.reload /f`)\n"
        ));
    }
    for hit in &hits {
        text.push_str(&hit_text(session, hit, &kind, options.addresses_only));
    }
    if truncated {
        text.push_str(&format!(
            "Search stopped after {MAX_HITS} hits at {}: narrow the range to see the rest\n",
            hits.last()
                .map_or(String::new(), |h| addr(session, h.address))
        ));
    }
    let typed = hits
        .into_iter()
        .map(|h| SearchHit {
            address: format!("{:#x}", h.address),
            text: h.text,
            from_image: h.from_image,
        })
        .collect();
    Ok(CommandOutput::with(
        text,
        TypedResult::SearchHits {
            hits: typed,
            truncated,
        },
    ))
}

/// Reads `-[FLAGS]TYPE` at the start of the arguments; returns the options and the rest.
fn parse_options(args: &str) -> Result<(Options, &str), CommandError> {
    let mut options = Options {
        kind_letter: "b".to_string(),
        addresses_only: false,
        min_string: DEFAULT_MIN_STRING,
    };
    let args = args.trim_start();
    let Some(after_dash) = args.strip_prefix('-') else {
        return Ok((options, args));
    };
    let mut rest = after_dash;
    if let Some(inner) = rest.strip_prefix('[') {
        let close = inner.find(']').ok_or_else(|| {
            CommandError::syntax("s: unclosed '[' in the flags").with_hint("e.g. `s -[l5]sa RANGE`")
        })?;
        parse_flags(&inner[..close], &mut options)?;
        rest = &inner[close + 1..];
    }
    let end = rest
        .find(|c: char| c.is_ascii_whitespace())
        .unwrap_or(rest.len());
    let letter = rest[..end].to_ascii_lowercase();
    if !matches!(
        letter.as_str(),
        "b" | "w" | "d" | "q" | "a" | "u" | "sa" | "su"
    ) {
        return Err(CommandError::syntax(format!(
            "s: unknown search type '-{}'",
            excerpt(&rest[..end])
        ))
        .with_hint("types: -b -w -d -q -a -u -sa -su (`-v` is not supported)"));
    }
    options.kind_letter = letter;
    Ok((options, &rest[end..]))
}

fn parse_flags(flags: &str, options: &mut Options) -> Result<(), CommandError> {
    let mut chars = flags.trim().chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '1' => options.addresses_only = true,
            'l' | 'L' => {
                let digits: String = std::iter::from_fn(|| {
                    while chars.peek() == Some(&' ') {
                        chars.next();
                    }
                    chars.next_if(|d| d.is_ascii_hexdigit())
                })
                .collect();
                // WinDbg's default radix is 16 here too.
                options.min_string = usize::from_str_radix(&digits, 16)
                    .ok()
                    .filter(|&n| n > 0)
                    .ok_or_else(|| {
                        CommandError::syntax("s: the l flag needs a length, e.g. `-[l5]sa`")
                    })?;
            }
            's' | 'r' | 'n' | 'w' => {
                return Err(CommandError::syntax(format!(
                    "s: the '{c}' flag is not supported (saved searches and writable-only scans)"
                ))
                .with_hint("supported flags: 1 (addresses only), l N (minimum string length)"))
            }
            other => return Err(CommandError::syntax(format!("s: unknown flag '{other}'"))),
        }
    }
    Ok(())
}

/// Splits `RANGE PATTERN`: the longest leading run of arguments that reads as a range with a
/// length or an end address.
fn split_range<'a>(
    session: &Session,
    args: &'a str,
) -> Result<(Range<u64>, &'a str), CommandError> {
    let words = split_args_indexed(args);
    let mut last_error = None;
    for n in (1..=words.len()).rev() {
        let cut = words.get(n).map_or(args.len(), |(at, _)| *at);
        match parse_range(&args[..cut], session) {
            Ok(r) => {
                let Some(start) = r.start else { continue };
                let end = match r.extent {
                    Some(Extent::Count(count)) => start.checked_add(count),
                    Some(Extent::End(end)) => end.checked_add(1).filter(|&e| e > start),
                    None => continue,
                }
                .ok_or_else(|| {
                    CommandError::new(
                        ErrorCode::RangeInvalid,
                        "Range error: the range is empty or wraps",
                    )
                })?;
                if end - start > MAX_PLAIN_RANGE && !r.no_size_limit {
                    return Err(CommandError::new(
                        ErrorCode::RangeTooLarge,
                        format!(
                            "Range error: {:#x} bytes; use L? to search more than 256 MB",
                            end - start
                        ),
                    ));
                }
                return Ok((start..end, &args[cut..]));
            }
            Err(e) => last_error = Some(e),
        }
    }
    Err(match last_error {
        Some(e) => {
            CommandError::from(e).with_hint("s needs a range: `ADDR L COUNT` or `ADDR ADDR`")
        }
        None => CommandError::syntax("s: missing range")
            .with_hint("e.g. `s -a crashy L?80000 \"text\"`"),
    })
}

/// The byte pattern for `-b -w -d -q -a -u`.
fn parse_pattern(session: &Session, letter: &str, text: &str) -> Result<Kind, CommandError> {
    let text = text.trim();
    if text.is_empty() {
        return Err(CommandError::syntax(format!(
            "s -{letter}: missing pattern"
        )));
    }
    if letter == "a" || letter == "u" {
        let body = text
            .strip_prefix('"')
            .and_then(|t| t.strip_suffix('"'))
            .unwrap_or(text)
            .replace("\\\"", "\"")
            .replace("\\\\", "\\");
        let bytes: Vec<u8> = if letter == "a" {
            body.into_bytes()
        } else {
            body.encode_utf16().flat_map(u16::to_le_bytes).collect()
        };
        return Ok(Kind::Pattern {
            bytes,
            align: if letter == "u" { 2 } else { 1 },
            display: Display::Bytes,
        });
    }
    let (width, display) = match letter {
        "w" => (2, Display::Words),
        "d" => (4, Display::Dwords),
        "q" => (8, Display::Qwords),
        _ => (1, Display::Bytes),
    };
    let mut bytes = Vec::new();
    for (_, word) in split_args_indexed(text) {
        let value = match word.strip_prefix('\'').and_then(|w| w.strip_suffix('\'')) {
            Some(chars) if !chars.is_empty() && chars.len() <= width => {
                chars.bytes().fold(0u64, |v, b| (v << 8) | u64::from(b))
            }
            _ => crate::commands::util::eval(session, word)?,
        };
        if width < 8 && value >> (8 * width) != 0 {
            return Err(CommandError::syntax(format!(
                "s -{letter}: {value:#x} does not fit in {width} byte(s)"
            )));
        }
        bytes.extend_from_slice(&value.to_le_bytes()[..width]);
    }
    Ok(Kind::Pattern {
        bytes,
        align: width as u64,
        display,
    })
}

/// One hit.
struct Hit {
    address: u64,
    text: Option<String>,
    from_image: bool,
}

/// Searches the readable spans of `range`; returns the hits and whether the cap was reached.
fn run(
    session: &Session,
    range: Range<u64>,
    kind: &Kind,
    load_images: bool,
) -> Result<(Vec<Hit>, bool), CommandError> {
    let mut hits = Vec::new();
    let runs = merged_runs(session, range, load_images);
    let total: u64 = runs.iter().map(|r| r.end - r.start).sum();
    let mut searched = 0;
    let interrupt = session.interrupt();
    for run in runs {
        let mut pos = run.start;
        while pos < run.end {
            if interrupt.check().is_err() {
                return Err(cancelled(session, pos, hits.len()));
            }
            interrupt.report(searched, Some(total), "searching memory");
            let end = pos.saturating_add(CHUNK).min(run.end);
            let read = session.read_memory(pos, (end - pos) as usize);
            let data: Vec<u8> = read.bytes.iter().map(|b| b.unwrap_or(0)).collect();
            let image = |at: u64, len: u64| {
                read.from_image
                    .iter()
                    .any(|r| r.start < at + len && r.end > at)
            };
            let next = match kind {
                Kind::Pattern { bytes, align, .. } => {
                    for i in find_all(&data, bytes, pos, *align) {
                        let at = pos + i as u64;
                        hits.push(Hit {
                            address: at,
                            text: None,
                            from_image: image(at, bytes.len() as u64),
                        });
                        if hits.len() > MAX_HITS {
                            hits.truncate(MAX_HITS);
                            return Ok((hits, true));
                        }
                    }
                    // Overlap the next chunk so matches across its edge are found.
                    if end < run.end {
                        end.saturating_sub(bytes.len().saturating_sub(1) as u64)
                            .max(pos + 1)
                    } else {
                        end
                    }
                }
                Kind::Strings { wide, min } => {
                    let (found, open) = find_strings(&data, *wide, *min, end == run.end);
                    for (i, len, text) in found {
                        let at = pos + i as u64;
                        hits.push(Hit {
                            address: at,
                            text: Some(text),
                            from_image: image(at, len as u64),
                        });
                        if hits.len() > MAX_HITS {
                            hits.truncate(MAX_HITS);
                            return Ok((hits, true));
                        }
                    }
                    // A string still open at the chunk's end is read again from its start.
                    match open {
                        Some(i) if i > 0 => pos + i as u64,
                        _ => end,
                    }
                }
            };
            searched += next - pos;
            pos = next;
        }
    }
    Ok((hits, false))
}

/// The error of a search cancelled before `at`, saying how far it got.
fn cancelled(session: &Session, at: u64, hits: usize) -> CommandError {
    let error = CommandError::from(ntdbg_engine::Cancelled);
    CommandError {
        message: format!(
            "Search cancelled at {} ({hits} hit(s) so far were not shown)",
            addr(session, at)
        ),
        ..error
    }
}

/// The readable spans of `range` with touching spans joined (a match may cross from dump
/// memory into image memory).
fn merged_runs(session: &Session, range: Range<u64>, load_images: bool) -> Vec<Range<u64>> {
    let mut runs: Vec<Range<u64>> = Vec::new();
    for span in session.memory_spans(range, load_images) {
        match runs.last_mut() {
            Some(last) if last.end >= span.range.start => last.end = last.end.max(span.range.end),
            _ => runs.push(span.range),
        }
    }
    runs
}

/// Offsets in `data` (which starts at address `base`) where `pattern` starts at an address
/// that is a multiple of `align`.
fn find_all(data: &[u8], pattern: &[u8], base: u64, align: u64) -> Vec<usize> {
    if pattern.is_empty() || data.len() < pattern.len() {
        return Vec::new();
    }
    let first = (align - base % align) % align;
    (first as usize..=data.len() - pattern.len())
        .step_by(align as usize)
        .filter(|&i| data[i..].starts_with(pattern))
        .collect()
}

/// Printable strings in `data`: (offset, length in bytes, text); and the offset of a string
/// still running at the end of `data` when more data follows (`last` false).
fn find_strings(
    data: &[u8],
    wide: bool,
    min: usize,
    last: bool,
) -> (Vec<(usize, usize, String)>, Option<usize>) {
    let step = if wide { 2 } else { 1 };
    let printable = |i: usize| -> Option<char> {
        let c = if wide {
            let unit = u16::from_le_bytes([data[i], *data.get(i + 1)?]);
            char::from_u32(u32::from(unit))?
        } else {
            char::from(data[i])
        };
        (c == '\t' || (' '..='~').contains(&c)).then_some(c)
    };
    let mut out = Vec::new();
    let mut i = 0;
    while i + step <= data.len() {
        if printable(i).is_none() {
            i += step;
            continue;
        }
        let start = i;
        let mut text = String::new();
        while i + step <= data.len() {
            let Some(c) = printable(i) else { break };
            if text.len() < MAX_STRING_SHOWN {
                text.push(c);
            }
            i += step;
        }
        if i + step > data.len() && !last {
            return (out, Some(start));
        }
        if (i - start) / step >= min {
            out.push((start, i - start, text));
        }
    }
    (out, None)
}

fn hit_text(session: &Session, hit: &Hit, kind: &Kind, addresses_only: bool) -> String {
    if addresses_only {
        return format!("{}\n", addr(session, hit.address));
    }
    match kind {
        Kind::Strings { .. } => format!(
            "{}  \"{}\"\n",
            addr(session, hit.address),
            hit.text.as_deref().unwrap_or_default()
        ),
        Kind::Pattern { display, .. } => {
            let data = session.read_virtual(hit.address, 16);
            match display {
                Display::Bytes => render_bytes(session, hit.address, &data),
                Display::Words => render_values(session, hit.address, &data, 2, 8, false),
                Display::Dwords => render_values(session, hit.address, &data, 4, 4, true),
                Display::Qwords => render_values(session, hit.address, &data, 8, 2, false),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn patterns_are_found_at_their_alignment() {
        let data = [0u8, 0x48, 0, 0, 0, 0x48, 0, 0, 0];
        assert_eq!(find_all(&data, &[0x48, 0, 0, 0], 0x1000, 1), vec![1, 5]);
        assert_eq!(
            find_all(&data, &[0x48, 0, 0, 0], 0x1000, 4),
            Vec::<usize>::new()
        );
        assert_eq!(find_all(&data, &[0x48, 0, 0, 0], 0x1003, 4), vec![1, 5]);
        assert_eq!(find_all(&data, &[], 0, 1), Vec::<usize>::new());
    }

    #[test]
    fn strings_respect_the_minimum_and_chunk_edges() {
        let data = b"\x01ab\x00abcd\x00xyz";
        let (found, open) = find_strings(data, false, 3, true);
        assert_eq!(
            found
                .iter()
                .map(|(i, _, t)| (*i, t.as_str()))
                .collect::<Vec<_>>(),
            vec![(4, "abcd"), (9, "xyz")]
        );
        assert_eq!(open, None);
        let (found, open) = find_strings(data, false, 3, false);
        assert_eq!(found.len(), 1);
        assert_eq!(open, Some(9));
        let wide: Vec<u8> = "hi there"
            .encode_utf16()
            .flat_map(u16::to_le_bytes)
            .collect();
        let (found, _) = find_strings(&wide, true, 3, true);
        assert_eq!(found[0].2, "hi there");
    }
}
