//! The crate's one error type.

use ntdbg_errors::ErrorCode;
use std::path::PathBuf;

/// What went wrong reading a symbol path or a symbol file.
///
/// Loading a module's symbols never fails as a whole (a module without symbols is a status,
/// not an error); these errors describe single candidates and end up, formatted, in
/// [`crate::ModuleSymbols::tried`]. [`SymbolError::code`] gives a stable `snake_case` key.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SymbolError {
    /// A symbol path element could not be understood.
    #[error("invalid symbol path element {element:?}: {reason}")]
    InvalidSymbolPath {
        /// The `;`-separated element.
        element: String,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// A file could not be opened or read.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// The OS error.
        source: std::io::Error,
    },
    /// A PDB could not be read.
    #[error("{}: not a readable PDB: {source}", path.display())]
    Pdb {
        /// The file.
        path: PathBuf,
        /// The PDB reader's error.
        source: pdb_addr2line::Error,
    },
    /// A Breakpad symbol file could not be parsed or decompressed.
    #[error("{}: not a readable Breakpad symbol file: {message}", path.display())]
    Breakpad {
        /// The file.
        path: PathBuf,
        /// The parser's or decompressor's message.
        message: String,
    },
    /// An image could not be parsed as PE.
    #[error("{}: not a readable PE image: {source}", path.display())]
    Pe {
        /// The file (or a description of the memory it was read from).
        path: PathBuf,
        /// The PE reader's error.
        source: ntdbg_formats::FormatError,
    },
    /// A file was found but belongs to a different build.
    #[error("{}: {what} mismatch (want {expected}, file has {found})", path.display())]
    Mismatch {
        /// The file.
        path: PathBuf,
        /// Which identity differs (`GUID/age`, `debug id`, `timestamp/size`).
        what: &'static str,
        /// The identity the module asks for.
        expected: String,
        /// The identity the file has.
        found: String,
    },
    /// A file changed on disk (truncated, copied over, written) while it was being read.
    #[error(transparent)]
    Changed(#[from] ntdbg_files::FileChanged),
    /// A file is none of the kinds a symbol store files (`ntdbg symbols upload`).
    #[error("{}: not a PDB, a PE image or a Breakpad .sym file", path.display())]
    NotSymbolFile {
        /// The file.
        path: PathBuf,
    },
    /// A reader panicked on a damaged file; the panic was contained.
    #[error("{}: reader crashed on damaged input ({what})", path.display())]
    Panicked {
        /// The file.
        path: PathBuf,
        /// Which reader.
        what: &'static str,
    },
}

impl SymbolError {
    /// A stable `snake_case` name for this kind of error.
    pub fn code(&self) -> ErrorCode {
        match self {
            SymbolError::InvalidSymbolPath { .. } => ErrorCode::InvalidSymbolPath,
            SymbolError::Io { .. } => ErrorCode::Io,
            SymbolError::Pdb { .. } => ErrorCode::BadPdb,
            SymbolError::Breakpad { .. } => ErrorCode::BadBreakpadSymbols,
            SymbolError::Pe { .. } => ErrorCode::BadImage,
            SymbolError::Mismatch { .. } => ErrorCode::Mismatch,
            SymbolError::Changed(_) => ErrorCode::FileChanged,
            SymbolError::NotSymbolFile { .. } => ErrorCode::NotASymbolFile,
            SymbolError::Panicked { .. } => ErrorCode::ReaderPanicked,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mismatch_message_names_both_identities() {
        let e = SymbolError::Mismatch {
            path: PathBuf::from("/s/crashy.pdb"),
            what: "GUID/age",
            expected: "AA1".into(),
            found: "BB2".into(),
        };
        assert_eq!(e.code(), "mismatch");
        assert_eq!(
            e.to_string(),
            "/s/crashy.pdb: GUID/age mismatch (want AA1, file has BB2)"
        );
    }
}
