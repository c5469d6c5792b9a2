//! Finding and loading one module's symbols: the lookup order, each candidate's
//! verification, and the `tried` notes.
//!
//! Order: (1) the PDB by (name, GUID, age); (2) Breakpad `.sym`/`.sym.xz` by (PDB name,
//! debug id); both need the PDB identity, which comes from the dump's CodeView record
//! or, when the dump has none (Wine), from the image's. The image itself (by name, timestamp
//! and size, else from dump memory) is looked for first: it supplies that identity and the
//! x64/ARM64 unwind tables. Every search directory is tried in store layout, then plain; the
//! image's own folder is searched for the PDB and `.sym` too, and (only when the store allows
//! it) the PDB path the CodeView record names.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use breakpad_symbols::SymbolFile;
use minidump::{CodeView, MinidumpModule, Module};
use ntdbg_formats::store::{
    breakpad_sym_name, file_name_of, image_key, Guid, PdbIdentity, PdbSignature,
};

use crate::breakpad_lazy::{self, LazyBreakpad};
use crate::demangle;
use crate::download::{Downloads, Fetched};
use crate::image::{ImageSource, MappedImage};
use crate::index::{
    write_index, IndexJob, IndexSlot, IndexedTables, ReadSource, SymbolIndex, Tables,
};
use crate::locate::{look, store_extras, Layout, Lookup};
use crate::module::{ModuleSymbols, SymbolStatus};
use crate::pdb_lazy::LazyPdb;
use crate::source::breakpad::{self, check_module_id};
use crate::source::io;
use crate::source::panic_guard::{contain, guarded};
use crate::source::pdb::convert_pdb;
use crate::unwind::PeUnwinder;
use crate::SharedBytes;
use crate::{SymbolError, SymbolPath};
use ntdbg_formats::pe::Machine;

/// What the dump says about a module.
struct Identity {
    code_name: String,
    base: u64,
    time_date_stamp: u32,
    size_of_image: u32,
    pdb: Option<PdbIdentity>,
    /// The PDB path exactly as the CodeView record has it.
    pdb_path: Option<String>,
}

impl Identity {
    fn of(module: &MinidumpModule) -> Identity {
        let pdb_path = match &module.codeview_info {
            Some(CodeView::Pdb70(cv)) => Some(c_string(&cv.pdb_file_name)),
            Some(CodeView::Pdb20(cv)) => Some(c_string(&cv.pdb_file_name)),
            _ => None,
        };
        let pdb = match &module.codeview_info {
            Some(CodeView::Pdb70(cv)) => {
                let g = &cv.signature;
                Some(PdbIdentity::new(
                    &c_string(&cv.pdb_file_name),
                    PdbSignature::Pdb70 {
                        guid: Guid::from_fields(g.data1, g.data2, g.data3, g.data4),
                        age: cv.age,
                    },
                ))
            }
            Some(CodeView::Pdb20(cv)) => Some(PdbIdentity::new(
                &c_string(&cv.pdb_file_name),
                PdbSignature::Pdb20 {
                    signature: cv.signature,
                    age: cv.age,
                },
            )),
            _ => None,
        }
        .filter(|p| !p.name.is_empty());
        Identity {
            code_name: file_name_of(&module.code_file()).to_string(),
            base: module.base_address(),
            time_date_stamp: module.raw.time_date_stamp,
            size_of_image: module.raw.size_of_image,
            pdb,
            pdb_path,
        }
    }
}

fn c_string(bytes: &[u8]) -> String {
    let end = bytes.iter().position(|&b| b == 0).unwrap_or(bytes.len());
    String::from_utf8_lossy(&bytes[..end]).into_owned()
}

/// A symbol file that was found and read.
struct Loaded {
    status: SymbolStatus,
    /// The symbol file (for export symbols: the image file, if not from dump memory).
    path: Option<PathBuf>,
    symbols: Tables,
    data: Vec<(String, u64)>,
}

/// Loads a module's symbols from `path`; never fails (failure is `NoSymbols` with reasons).
pub(crate) fn load_module(
    path: &SymbolPath,
    module: &MinidumpModule,
    read_image: &dyn Fn(u64, usize) -> Option<SharedBytes>,
    codeview_paths: bool,
    downloads: &mut Downloads<'_>,
) -> ModuleSymbols {
    let ident = Identity::of(module);
    let mut tried = Vec::new();
    let mut dirs = Vec::new();
    for dir in path.local_dirs() {
        if dir.is_dir() {
            dirs.push(dir);
        } else {
            tried.push(format!("{}: directory not found", dir.display()));
        }
    }
    if dirs.is_empty() && path.is_empty() {
        tried.push("symbol path is empty".to_string());
    }

    // The image: identity for CodeView-less dumps, unwind tables for x64/ARM64.
    let mut image = find_image(&ident, &dirs, downloads, &mut tried);
    let image_path = image.as_ref().and_then(|i| match &i.source {
        ImageSource::File(p) => Some(p.clone()),
        ImageSource::DumpMemory => None,
    });
    if image.is_none() {
        image = image_from_memory(&ident, read_image, &mut tried);
    }

    let mut pdb_path = ident.pdb_path.clone();
    let pdb = match (&ident.pdb, &image) {
        (Some(p), _) => Some(p.clone()),
        (None, Some(img)) => match &img.info.codeview {
            Some(cv) => {
                pdb_path = Some(cv.pdb_path.clone());
                let id = cv.identity();
                tried.push(format!(
                    "no CodeView record in the dump; the image names {} {}",
                    id.name,
                    id.key()
                ));
                Some(id).filter(|p| !p.name.is_empty())
            }
            None => {
                tried.push("no CodeView record in the dump or in the image".to_string());
                None
            }
        },
        (None, None) => {
            tried.push(
                "no CodeView record in the dump and no image found: the PDB cannot be identified"
                    .to_string(),
            );
            None
        }
    };

    // The image's folder is searched for the PDB and .sym too, unless it lies inside a
    // search directory (a store's `NAME/KEY` folder, a download cache).
    let mut sym_dirs = dirs.clone();
    if let Some(parent) = image_path.as_deref().and_then(Path::parent) {
        if !path.local_dirs().iter().any(|d| parent.starts_with(d)) {
            sym_dirs.push(parent.to_path_buf());
        }
    }

    let code = image
        .as_ref()
        .map(|i| (i.info.image_key(), ident.code_name.clone()));
    let mut loaded = None;
    if let Some(pdb) = &pdb {
        // The PDB first, as WinDbg: it has inline frames, parameter lists and data symbols
        // that a Breakpad file made from it lacks. Breakpad files serve modules without one.
        if let Some((path, symbols, data)) = find_pdb(
            pdb,
            &sym_dirs,
            local_codeview_path(pdb_path.as_deref().filter(|_| codeview_paths)),
            code.as_ref(),
            downloads,
            &mut tried,
        ) {
            loaded = Some(Loaded {
                status: SymbolStatus::Pdb,
                path: Some(path),
                symbols,
                data,
            });
        } else if let Some((path, symbols)) = find_breakpad(pdb, &sym_dirs, downloads, &mut tried) {
            loaded = Some(Loaded {
                status: SymbolStatus::Breakpad,
                path: Some(path),
                symbols,
                data: Vec::new(),
            });
        }
    }

    if loaded.is_none() {
        if let Some(img) = &image {
            loaded = export_symbols(img, &ident, pdb.as_ref(), &mut tried);
        }
    }

    let mut out = match loaded {
        Some(l) => {
            // (Export symbols have their own note, with the count.)
            if let (Some(path), false) = (&l.path, l.status == SymbolStatus::ExportSymbols) {
                tried.push(format!("{}: loaded ({})", path.display(), l.status.label()));
            }
            let mut m = ModuleSymbols::new(l.status, tried);
            m.symbol_file_path = l.path;
            m.symbols = Some(l.symbols);
            m.data_symbols = l.data;
            m
        }
        None => ModuleSymbols::new(SymbolStatus::NoSymbols, tried),
    };
    out.pdb_identity = pdb.map(|p| {
        let key = p.key();
        (p.name, key)
    });
    out.image_path = image_path;
    out.base = ident.base;
    if let Some(img) = image {
        out.image_info = Some(img.info.clone());
        out.image_source = Some(img.source.clone());
        let img = Arc::new(img);
        out.unwinder = PeUnwinder::new(img.clone());
        out.image = Some(img);
    }
    tracing::debug!(
        module = %ident.code_name,
        status = out.status.name(),
        file = ?out.symbol_file_path,
        unwind = out.unwinder.is_some(),
        "module symbols loaded"
    );
    out
}

/// Public symbols from the image's export table, when no symbol file was found.
fn export_symbols(
    img: &MappedImage,
    ident: &Identity,
    pdb: Option<&PdbIdentity>,
    tried: &mut Vec<String>,
) -> Option<Loaded> {
    let (source, path) = match &img.source {
        ImageSource::File(p) => (p.display().to_string(), Some(p.clone())),
        ImageSource::DumpMemory => (format!("{} image in dump memory", ident.code_name), None),
    };
    // The directory's size covers its tables and names: all of it must have been read.
    match img.info.data_directory(IMAGE_DIRECTORY_ENTRY_EXPORT) {
        None => {
            tried.push(format!("{source}: no export table"));
            return None;
        }
        Some(d) if !img.is_valid(d.rva, d.size) => {
            tried.push(format!("{source}: export table not in the dump"));
            return None;
        }
        Some(_) => {}
    }
    let exports = match contain(|| img.exports()) {
        Some(Ok(e)) => e,
        Some(Err(e)) => {
            tried.push(format!("{source}: export table not readable: {e}"));
            return None;
        }
        None => {
            tried.push(format!("{source}: export reader crashed on damaged input"));
            return None;
        }
    };
    let arch = match img.info.machine {
        Machine::X86 => "x86",
        Machine::Arm64 => "arm64",
        _ => "x86_64",
    };
    let key = pdb.map_or_else(|| img.info.image_key(), PdbIdentity::key);
    let name = pdb.map_or(ident.code_name.as_str(), |p| p.name.as_str());
    let publics = exports
        .into_iter()
        .filter(|e| e.forwarder.is_none() && e.rva != 0)
        .filter_map(|e| {
            let name = match e.name {
                Some(n) => demangle::export_name(n),
                None => format!("Ordinal{}", e.ordinal),
            };
            (!name.chars().any(char::is_control)).then_some((u64::from(e.rva), name))
        });
    let symbols = match publics_only_symbol_file(arch, &key, name, publics) {
        Ok(s) => s,
        Err(e) => {
            tried.push(format!("{source}: export symbols did not parse: {e}"));
            return None;
        }
    };
    let count = symbols.publics.len();
    if count == 0 {
        tried.push(format!("{source}: the export table names no code"));
        return None;
    }
    tried.push(format!("{source}: {count} exports loaded (export symbols)"));
    Some(Loaded {
        status: SymbolStatus::ExportSymbols,
        path,
        symbols: Tables::Parsed(Arc::new(symbols)),
        data: Vec::new(),
    })
}

/// A symbol file holding only `publics` (RVA, name), built directly instead of written out as
/// Breakpad text and parsed back (that round trip was a tenth of a full-memory dump's
/// `analyze`). `breakpad_symbols` lets its types be built only by its parser, so one parsed
/// `PUBLIC` line serves as the template the others are copied from. Line breaks in `name`
/// become spaces.
fn publics_only_symbol_file(
    arch: &str,
    key: &str,
    name: &str,
    publics: impl Iterator<Item = (u64, String)>,
) -> Result<SymbolFile, breakpad_symbols::SymbolError> {
    let name = name.replace(['\r', '\n'], " ");
    let text = format!("MODULE windows {arch} {key} {name}\nPUBLIC 0 0 template\n");
    let mut symbols = SymbolFile::from_bytes(text.as_bytes())?;
    let Some(mut template) = symbols.publics.pop() else {
        return Err(breakpad_symbols::SymbolError::ParseError(
            "the template PUBLIC line did not parse",
            2,
        ));
    };
    // An empty name: copying the template then allocates nothing.
    template.name = String::new();
    symbols.publics = publics
        .map(|(address, name)| {
            let mut public = template.clone();
            public.address = address;
            public.name = name;
            public
        })
        .collect();
    // Sorted as the parser leaves them: lookups rely on the order.
    symbols.publics.sort();
    Ok(symbols)
}

/// The export directory's index in the data directories.
const IMAGE_DIRECTORY_ENTRY_EXPORT: usize = 0;

/// Looks for the image by name and timestamp/size in every directory.
fn find_image(
    ident: &Identity,
    dirs: &[PathBuf],
    downloads: &mut Downloads<'_>,
    tried: &mut Vec<String>,
) -> Option<MappedImage> {
    if ident.code_name.is_empty() {
        return None;
    }
    let key = image_key(ident.time_date_stamp, ident.size_of_image);
    for dir in dirs {
        for layout in [Layout::Store, Layout::Plain] {
            let found = match look(dir, layout, &ident.code_name, &key) {
                Lookup::Found(f) => f.path,
                Lookup::Missing(note) => {
                    tried.push(note);
                    continue;
                }
            };
            match read_image_file(&found, ident) {
                Ok(img) => return Some(img),
                Err(e) => tried.push(e.to_string()),
            }
        }
    }
    let fetched = downloads.fetch(&ident.code_name, &key, &ident.code_name, tried)?;
    verified(fetched, tried, |p| read_image_file(p, ident))
}

/// Reads a file obtained from a symbol server; one that fails (wrong build, unreadable) and
/// was just downloaded is deleted from the cache.
fn verified<T>(
    fetched: Fetched,
    tried: &mut Vec<String>,
    read: impl FnOnce(&Path) -> Result<T, SymbolError>,
) -> Option<T> {
    match read(&fetched.path) {
        Ok(v) => Some(v),
        Err(e) => {
            let mut note = e.to_string();
            if fetched.downloaded {
                note.push_str(match std::fs::remove_file(&fetched.path) {
                    Ok(()) => "; rejected and deleted from the cache",
                    Err(_) => "; rejected (could not be deleted from the cache)",
                });
            }
            tried.push(note);
            None
        }
    }
}

fn read_image_file(path: &Path, ident: &Identity) -> Result<MappedImage, SymbolError> {
    let file = ntdbg_files::WatchedFile::open(path).map_err(|e| io(path, e))?;
    let img = guarded(path, "PE reader", || {
        MappedImage::from_file(file, ident.base).map_err(|source| SymbolError::Pe {
            path: path.to_path_buf(),
            source,
        })
    })?;
    let want_ts = ident.time_date_stamp;
    if (want_ts != 0 && img.info.time_date_stamp != want_ts)
        || img.info.size_of_image != ident.size_of_image
    {
        return Err(SymbolError::Mismatch {
            path: path.to_path_buf(),
            what: "timestamp/size",
            expected: image_key(want_ts, ident.size_of_image),
            found: img.info.image_key(),
        });
    }
    Ok(img)
}

fn image_from_memory(
    ident: &Identity,
    read_image: &dyn Fn(u64, usize) -> Option<SharedBytes>,
    tried: &mut Vec<String>,
) -> Option<MappedImage> {
    let what = format!("{} image in dump memory", ident.code_name);
    let result = contain(|| MappedImage::from_memory(read_image, ident.base, ident.size_of_image));
    match result {
        Some(Ok(Some(img))) => {
            let read = img.bytes_read();
            if read == u64::from(ident.size_of_image) {
                tried.push(format!("{what}: complete"));
            } else {
                tried.push(format!(
                    "{what}: partial ({read:#x} of {:#x} bytes)",
                    ident.size_of_image
                ));
            }
            Some(img)
        }
        Some(Ok(None)) => {
            tried.push(format!("{what}: not present"));
            None
        }
        Some(Err(e)) => {
            tried.push(format!("{what}: not a readable PE image: {e}"));
            None
        }
        None => {
            tried.push(format!("{what}: reader crashed on damaged input"));
            None
        }
    }
}

/// Looks for a Breakpad `.sym`/`.sym.xz` with the PDB's debug id.
fn find_breakpad(
    pdb: &PdbIdentity,
    dirs: &[PathBuf],
    downloads: &mut Downloads<'_>,
    tried: &mut Vec<String>,
) -> Option<(PathBuf, Tables)> {
    let key = pdb.key();
    let sym = breakpad_sym_name(&pdb.name);
    let xz = format!("{sym}.xz");
    for dir in dirs {
        for (layout, name) in [
            (Layout::Store, &sym),
            (Layout::Store, &xz),
            (Layout::Plain, &sym),
            (Layout::Plain, &xz),
        ] {
            let components: Vec<&str> = match layout {
                Layout::Store => vec![pdb.name.as_str(), key.as_str(), name.as_str()],
                Layout::Plain => vec![name.as_str()],
            };
            let Some(found) = crate::locate::path_ci(dir, &components).filter(|p| p.is_file())
            else {
                let mut shown = dir.clone();
                components.iter().for_each(|c| shown.push(c));
                tried.push(format!("{}: not found", shown.display()));
                continue;
            };
            match read_sym(&found, &pdb.name, &key) {
                Ok(sym) => return Some((found, sym)),
                Err(e) => tried.push(e.to_string()),
            }
        }
    }
    let fetched = downloads.fetch(&pdb.name, &key, &sym, tried)?;
    let path = fetched.path.clone();
    verified(fetched, tried, |p| read_sym(p, &pdb.name, &key)).map(|sym| (path, sym))
}

/// The warm-index slot for a symbol file in the symbol cache (`None` when the index is off).
fn index_slot(kind: &str, path: &Path, name: &str, key: &str) -> Option<IndexSlot> {
    IndexSlot::new(&crate::default_cache_dir(), kind, path, name, key)
}

/// Reads a Breakpad `.sym`/`.sym.xz` for the PDB `name` with debug id `key`: from its warm
/// index when there is a sound one (falling back to the text if a block of it turns out
/// damaged), else from its text (and then writes the index).
fn read_sym(path: &Path, name: &str, key: &str) -> Result<Tables, SymbolError> {
    let slot = index_slot("breakpad", path, name, key);
    if let Some(slot) = &slot {
        if let Some(index) = slot.open() {
            check_module_id(path, index.module_id(), key)?;
            let (path, key) = (path.to_path_buf(), key.to_string());
            let read_source: ReadSource =
                Box::new(move |slot| read_sym_text(&path, &key, Some(slot)));
            let tables = IndexedTables::new(index, slot.clone(), read_source);
            return Ok(Tables::Indexed(tables));
        }
    }
    read_sym_text(path, key, slot)
}

/// Reads a Breakpad `.sym`/`.sym.xz` from its text, checked to be for debug id `key`, and
/// writes its index into `slot`.
pub(crate) fn read_sym_text(
    path: &Path,
    key: &str,
    slot: Option<IndexSlot>,
) -> Result<Tables, SymbolError> {
    let tables = read_breakpad(path, breakpad_lazy::min_len())?;
    check_module_id(path, tables.module_id(), key)?;
    if let Some(slot) = slot {
        match &tables {
            Tables::Parsed(sym) => write_index(slot, IndexJob::Parsed(Arc::clone(sym), Vec::new())),
            Tables::LazyBreakpad(lazy) => write_index(slot, IndexJob::BreakpadText(lazy.text())),
            Tables::Indexed(_) | Tables::LazyPdb(_) => {}
        }
    }
    Ok(tables)
}

/// Reads a Breakpad `.sym`, or a `.sym.xz` (through its decompressed copy in the cache):
/// lazily when the text has `lazy_from` bytes or more and is in the shape the lazy reader
/// answers for, else parsed whole.
fn read_breakpad(path: &Path, lazy_from: Option<usize>) -> Result<Tables, SymbolError> {
    let Some(min) = lazy_from else {
        return breakpad::parse_whole(path).map(Tables::Parsed);
    };
    let raw = SharedBytes::of_file(path).map_err(|e| io(path, e))?;
    let source = raw.clone();
    let is_xz = path
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("xz"));
    let tables = guarded(path, "Breakpad parser", || {
        let text = if is_xz {
            let cache = crate::default_cache_dir();
            let (text, from) =
                crate::unpacked::text_of_xz(&raw, Some(&cache), breakpad::MAX_SYM_SIZE)
                    .map_err(|message| breakpad::bad(path, message))?;
            tracing::debug!(file = %path.display(), source = ?from, "Breakpad text from .xz");
            SharedBytes::from(text)
        } else {
            raw
        };
        let text = if text.len() >= min {
            match LazyBreakpad::new(text) {
                Ok(lazy) => return Ok(Tables::LazyBreakpad(lazy)),
                Err((text, why)) => {
                    tracing::debug!(file = %path.display(), line = why.line, reason = why.reason,
                        "Breakpad file parsed whole");
                    text
                }
            }
        } else {
            text
        };
        breakpad::parse_text(path, &text).map(Tables::Parsed)
    })?;
    // Parsed from a mapping: a file cut or rewritten meanwhile gave zeros or other bytes.
    // (A lazy reader keeps the mapping, which the session checks after each command.)
    if matches!(tables, Tables::Parsed(_)) {
        source.check()?;
    }
    Ok(tables)
}

type LoadedPdb = (PathBuf, Tables, Vec<(String, u64)>);

/// The CodeView record's PDB path as a path on this machine: a Unix absolute path as is, a
/// Wine `Z:\` path (Wine maps drive Z: to `/`) translated; other Windows paths are not
/// reachable.
fn local_codeview_path(path: Option<&str>) -> Option<PathBuf> {
    let path = path?;
    if path.starts_with('/') {
        return Some(PathBuf::from(path));
    }
    let rest = path
        .strip_prefix("Z:")
        .or_else(|| path.strip_prefix("z:"))?;
    rest.starts_with(['\\', '/'])
        .then(|| PathBuf::from(rest.replace('\\', "/")))
}

/// Looks for the PDB by name, GUID and age: in every directory (store layout, `file.ptr`,
/// plain), then at the path the CodeView record names, if it is local.
fn find_pdb(
    pdb: &PdbIdentity,
    dirs: &[PathBuf],
    codeview_path: Option<PathBuf>,
    code: Option<&(String, String)>,
    downloads: &mut Downloads<'_>,
    tried: &mut Vec<String>,
) -> Option<LoadedPdb> {
    let key = pdb.key();
    for dir in dirs {
        let mut candidates = Vec::new();
        match look(dir, Layout::Store, &pdb.name, &key) {
            Lookup::Found(f) => candidates.push(f.path),
            Lookup::Missing(note) => tried.push(note),
        }
        let (extra, notes) = store_extras(dir, &pdb.name, &key);
        tried.extend(notes);
        candidates.extend(extra);
        match look(dir, Layout::Plain, &pdb.name, "") {
            Lookup::Found(f) => candidates.push(f.path),
            Lookup::Missing(note) => tried.push(note),
        }
        for path in candidates {
            match read_pdb(&path, pdb, code) {
                Ok((sym, data)) => return Some((path, sym, data)),
                Err(e) => tried.push(e.to_string()),
            }
        }
    }
    if let Some(fetched) = downloads.fetch(&pdb.name, &key, &pdb.name, tried) {
        let path = fetched.path.clone();
        if let Some((sym, data)) = verified(fetched, tried, |p| read_pdb(p, pdb, code)) {
            return Some((path, sym, data));
        }
    }
    let path = codeview_path?;
    if !path.is_file() {
        tried.push(format!(
            "{}: not found (the CodeView record's path)",
            path.display()
        ));
        return None;
    }
    match read_pdb(&path, pdb, code) {
        Ok((sym, data)) => Some((path, sym, data)),
        Err(e) => {
            tried.push(e.to_string());
            None
        }
    }
}

/// Reads a PDB's symbols: from its warm index when there is a sound one (made from this
/// very file, once its identity had been checked; falling back to the PDB if a block of it
/// turns out damaged), else from the PDB ([`read_pdb_file`]).
fn read_pdb(
    path: &Path,
    want: &PdbIdentity,
    code: Option<&(String, String)>,
) -> Result<(Tables, Vec<(String, u64)>), SymbolError> {
    let slot = index_slot("pdb", path, &want.name, &want.key());
    if let Some(slot) = &slot {
        if let Some(index) = slot.open() {
            match index.checked(SymbolIndex::data_symbols) {
                Some(data) => {
                    let (path, want, code) = (path.to_path_buf(), want.clone(), code.cloned());
                    let read_source: ReadSource = Box::new(move |slot| {
                        read_pdb_file(&path, &want, code.as_ref(), Some(slot)).map(|(t, _)| t)
                    });
                    let tables = IndexedTables::new(index, slot.clone(), read_source);
                    return Ok((Tables::Indexed(tables), data));
                }
                None => slot.discard(),
            }
        }
    }
    read_pdb_file(path, want, code, slot)
}

/// Reads a PDB's symbols from the file: opens it and checks its identity, then converts it one
/// procedure at a time as lookups need them when it is large ([`crate::pdb_lazy`]), else
/// whole; and writes its index into `slot`.
pub(crate) fn read_pdb_file(
    path: &Path,
    want: &PdbIdentity,
    code: Option<&(String, String)>,
    slot: Option<IndexSlot>,
) -> Result<(Tables, Vec<(String, u64)>), SymbolError> {
    if crate::pdb_lazy::wanted(path) {
        let (lazy, data) = LazyPdb::open(path, want, code)?;
        if let Some(slot) = slot {
            write_index(slot, IndexJob::PdbFile(want.clone()));
        }
        return Ok((Tables::LazyPdb(lazy), data));
    }
    let (sym, data) = convert_pdb(path, want, code)?;
    let sym = Arc::new(sym);
    if let Some(slot) = slot {
        write_index(slot, IndexJob::Parsed(Arc::clone(&sym), data.clone()));
    }
    Ok((Tables::Parsed(sym), data))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codeview_paths_usable_here() {
        let p = |s: &str| local_codeview_path(Some(s));
        assert_eq!(p("/build/x.pdb"), Some(PathBuf::from("/build/x.pdb")));
        assert_eq!(p(r"Z:\tmp\x.pdb"), Some(PathBuf::from("/tmp/x.pdb")));
        assert_eq!(p("z:/tmp/x.pdb"), Some(PathBuf::from("/tmp/x.pdb")));
        assert_eq!(p(r"C:\build\x.pdb"), None);
        assert_eq!(p("Z:x.pdb"), None);
        assert_eq!(p("x.pdb"), None);
        assert_eq!(local_codeview_path(None), None);
    }
}
