//! Symbols for ntdbg: the symbol path, symbol-store lookup, PDB and Breakpad symbols, and
//! unwinding from PE unwind tables.
//!
//! - [`SymbolPath`]: WinDbg symbol path syntax (`DIR;cache*DIR;srv*CACHE*URL`).
//! - [`SymbolStore`]: finds and caches each module's [`ModuleSymbols`] — the PDB verified by
//!   GUID and age, else a Breakpad `.sym` (also `.sym.xz`), else the image's export table
//!   ([`SymbolStatus::ExportSymbols`]), plus the module image (verified by timestamp and
//!   size, else read from dump memory) for identification and unwinding. Files missing
//!   locally are downloaded from the path's HTTP symbol servers into their cache (also
//!   CAB-compressed `name.pd_` and `file.ptr`), verified, with a per-module time budget, a
//!   per-session negative cache and an offline switch. [`SymbolStore::preload`] loads many
//!   modules at once ([`PARALLEL_LOADS`]); a [`DownloadObserver`] follows the progress.
//! - [`TypeDb`]: a PDB's types (records, sizes, members, enumerators) for `dt` and `x /t`.
//! - [`VariableTable`]: a PDB's parameters and locals by procedure and scope, with locations.
//! - [`ModuleSymbols`]: address → function/line/inlines ([`ModuleSymbols::lookup`]), name →
//!   address ([`ModuleSymbols::find`], [`ModuleSymbols::resolve`]), and the two hooks a
//!   `minidump-unwind` symbol provider needs ([`ModuleSymbols::fill_symbol`],
//!   [`ModuleSymbols::walk_frame`]).
//!
//! A module without symbols is not an error: its status is [`SymbolStatus::NoSymbols`] and
//! [`ModuleSymbols::tried`] lists every place looked at and why it was not used, including
//! every request made to an HTTP symbol server (URL, status, bytes, milliseconds).
//!
//! ```
//! use ntdbg_symbols::{SymbolPath, SymbolStatus, SymbolStore};
//! # let Some(data) = ntdbg_testutil::testdata_dir() else { return };
//! let dir = data.join("winelab/x64");
//! let store = SymbolStore::new(SymbolPath::parse(dir.to_str().unwrap()).unwrap());
//! // A Wine dump's module: no CodeView record, found through the image's.
//! let mut module = minidump::MinidumpModule::new(0x1_4000_0000, 0x5c000, r"Z:\tmp\crashy.exe");
//! module.raw.time_date_stamp = 0x6b0cccd2;
//! let symbols = store.module(&module, &|_, _| None);
//! assert_eq!(symbols.status(), SymbolStatus::Pdb);
//! let hit = symbols.lookup(0x2134).unwrap();
//! assert_eq!(hit.name, "crash_null_write(int*)");
//! assert_eq!(hit.line, Some(119));
//! ```

mod breakpad_lazy;
mod compressed;
mod demangle;
mod download;
mod dwarf_cfi;
mod error;
mod filing;
mod image;
mod image_file;
mod index;
mod jit_names;
mod load;
mod locate;
mod module;
mod path;
mod pdb_address;
mod pdb_lazy;
mod pdb_sym;
mod progress;
mod recent_at;
mod remote;
mod shared;
mod shared_bytes;
mod source;
mod store;
mod types;
mod unpacked;
mod unwind;
mod unwind_arm64;
mod variables;
mod wildcard;

pub use breakpad_lazy::LAZY_ENV as BREAKPAD_LAZY_ENV;
pub use demangle::strip_parameters;
pub use error::SymbolError;
pub use filing::{store_place, StorePlace};
pub use image::ImageSource;
pub use index::{
    finish_index_writes, fuzz_symbol_index, write_indexes_out_of_process, write_symbol_index,
    INDEX_ENV, WRITER_COMMAND, WRITER_ENV,
};
pub use jit_names::{
    parse_perf_map, parse_unity_error_log, JitName, JitNames, UnityFrame, UnityStack,
};
pub use module::{InlineHit, ModuleSymbols, SymbolEntry, SymbolHit, SymbolStatus};
pub use path::{default_cache_dir, SymbolPath, SymbolPathEntry, MICROSOFT_SYMBOL_SERVER};
pub use pdb_lazy::LAZY_ENV as PDB_LAZY_ENV;
pub use progress::{DownloadObserver, DownloadProgress, Transfer};
pub use remote::{register_remote_reader, RemoteError, RemoteReader};
pub use shared::{SharedSymbolStats, SharedSymbols, DEFAULT_SYMBOL_MEMORY};
pub use shared_bytes::{ByteOwner, SharedBytes};
pub use store::{CancelCheck, ReadImage, SymbolStore, PARALLEL_LOADS};
pub use types::{
    primitive_named, BaseType, Enumerator, FieldInfo, Member, PointerTarget, Primitive, SymbolType,
    TypeDb, TypeId, TypeKind, TypeRecord,
};
pub use variables::{
    CvRegister, FrameBase, LiveRange, Location, Machine, Procedure, RecordKind, Scope, ScopeAt,
    Storage, Variable, VariableTable,
};
pub use wildcard::wildcard_match;

/// Converts a PDB file to Breakpad symbol text, as Breakpad's `dump_syms` would (functions
/// with lines and inlines, publics, `STACK WIN`). The identity is not checked: the `MODULE`
/// line carries the PDB's own GUID and age.
pub fn pdb_to_breakpad(path: &std::path::Path) -> Result<String, SymbolError> {
    source::pdb::pdb_to_breakpad_text(path)
}
