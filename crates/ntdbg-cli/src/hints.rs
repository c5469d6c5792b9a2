//! Hints the command line adds to command errors, by code: what to do with this program's
//! flags (the command layer's own hints name no front end).

use ntdbg_commands::ErrorCode;

/// The `hint:` line printed under an error with `code`, or nothing.
pub fn line(code: ErrorCode) -> String {
    let hint = match code {
        ErrorCode::KernelSymbolsMissing => {
            "give the folder holding the kernel's PDB with --symbols DIR"
        }
        _ => return String::new(),
    };
    format!("hint: {hint}\n")
}
