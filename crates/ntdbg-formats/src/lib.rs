//! On-disk Windows formats for ntdbg, read from byte slices.
//!
//! - [`pe`]: PE images in file or mapped layout — machine, timestamp, size, sections, the
//!   CodeView record naming the PDB, the exception directory and its x64/ARM64 entries, and
//!   the version resource ([`pe::PeInfo`]).
//! - [`store`]: symbol-store keys and names ([`store::pdb_key`], [`store::image_key`],
//!   [`store::Guid`]).
//! - [`unwind_arm64`]: ARM64 `.pdata`/`.xdata` unwinding.
//!
//! **Architecture invariant:** this crate does no I/O. Callers read files or dump memory and
//! hand over bytes; every parser checks bounds and returns a [`FormatError`] instead of
//! panicking on bad input.
//!
//! ```
//! use ntdbg_formats::store::{image_key, pdb_key, Guid};
//! let guid = Guid::parse("99B57C97-E2C0-99B2-4C4C-44205044422E").unwrap();
//! assert_eq!(pdb_key(&guid, 1), "99B57C97E2C099B24C4C44205044422E1");
//! assert_eq!(image_key(0x6b0cccd2, 0x5c000), "6B0CCCD25c000");
//! ```

mod bytes;
mod error;
pub mod pe;
pub mod store;
pub mod unwind_arm64;

pub use error::FormatError;
