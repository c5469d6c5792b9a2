//! `ntdbg symbolize-image EXE` (hidden, for `bench/bigpdb/run.sh`): symbolizes addresses of one
//! Windows image with ntdbg's symbol loading, as `llvm-symbolizer --obj=EXE -f -i` would.
//!
//! Addresses come on stdin, one virtual address a line (hex, at the image's preferred base).
//! The image's folder is the symbol path, so its PDB is found through the image's CodeView
//! record, as for a dump's module. Prints, for each address, one `function` / `file:line`
//! pair a frame, innermost first, then an empty line (llvm-symbolizer's shape, `??` for
//! unknown parts).

use std::io::{BufRead, Read, Write};
use std::path::Path;

use anyhow::{bail, Context};
use ntdbg_symbols::{SymbolHit, SymbolPath, SymbolStatus, SymbolStore};
use ntdbg_targets::MinidumpModule;

/// The fields of a PE32+ image's headers a module is identified by.
struct ImageHeaders {
    image_base: u64,
    size_of_image: u32,
    time_date_stamp: u32,
}

fn u32_at(bytes: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_le_bytes(bytes.get(at..at + 4)?.try_into().ok()?))
}

/// Reads the PE32+ headers' identity fields (the COFF header's timestamp, the optional
/// header's image base and size).
fn headers(bytes: &[u8]) -> Option<ImageHeaders> {
    let pe = usize::try_from(u32_at(bytes, 0x3c)?).ok()?;
    if bytes.get(pe..pe + 4)? != b"PE\0\0" || bytes.get(pe + 24..pe + 26)? != [0x0b, 0x02] {
        return None;
    }
    let optional = pe + 24;
    Some(ImageHeaders {
        time_date_stamp: u32_at(bytes, pe + 8)?,
        image_base: u64::from_le_bytes(bytes.get(optional + 24..optional + 32)?.try_into().ok()?),
        size_of_image: u32_at(bytes, optional + 56)?,
    })
}

/// Symbolizes the addresses on stdin against `exe`.
pub fn symbolize_image(exe: &Path) -> anyhow::Result<()> {
    // The headers are in the first page; the symbol store reads what it needs of the image.
    let mut bytes = Vec::with_capacity(4096);
    ntdbg_files::open_regular(exe)
        .and_then(|f| f.take(4096).read_to_end(&mut bytes))
        .with_context(|| exe.display().to_string())?;
    let Some(h) = headers(&bytes) else {
        bail!("{}: not a PE32+ image", exe.display());
    };
    let dir = exe.parent().context("the image has no folder")?;
    let store = SymbolStore::new(SymbolPath::parse(&dir.display().to_string())?);
    store.set_offline(true);
    let mut module = MinidumpModule::new(h.image_base, h.size_of_image, &exe.display().to_string());
    module.raw.time_date_stamp = h.time_date_stamp;
    let symbols = store.module(&module, &|_, _| None);
    if symbols.status() != SymbolStatus::Pdb {
        bail!("no PDB: {}", symbols.tried().join("; "));
    }
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    for line in std::io::stdin().lock().lines() {
        let line = line?;
        let text = line.trim().trim_start_matches("0x");
        if text.is_empty() {
            continue;
        }
        let address = u64::from_str_radix(text, 16).with_context(|| line.clone())?;
        let hit = address
            .checked_sub(h.image_base)
            .and_then(|rva| symbols.lookup(rva));
        write_frames(&mut out, hit.as_ref())?;
    }
    out.flush()?;
    Ok(())
}

/// The frames of one address, innermost first.
fn write_frames(out: &mut impl Write, hit: Option<&SymbolHit>) -> std::io::Result<()> {
    let Some(hit) = hit else {
        return writeln!(out, "??\n??:0\n");
    };
    let place = |file: &Option<String>, line: Option<u32>| {
        format!("{}:{}", file.as_deref().unwrap_or("??"), line.unwrap_or(0))
    };
    // `hit.inlines` is outermost first; each one's location is inside that inlinee, and
    // `hit.file`/`hit.line` is the call site in the function itself.
    for inline in hit.inlines.iter().rev() {
        writeln!(out, "{}\n{}", inline.name, place(&inline.file, inline.line))?;
    }
    writeln!(out, "{}\n{}\n", hit.name, place(&hit.file, hit.line))
}
