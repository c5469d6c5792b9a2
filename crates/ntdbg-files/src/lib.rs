//! Files as ntdbg opens them.
//!
//! A long-running server reads files it does not own: dumps, symbol files, images and the
//! indexes in its cache. Two things about such files must never take the process down:
//!
//! - **What the path names.** A FIFO named `crash.dmp` blocks an ordinary `open` until a
//!   writer comes, and a device may do worse. [`open_regular`] opens only regular files: it
//!   looks at the path first, then opens without blocking and checks the file it got (the
//!   path may have changed in between), so nothing else is ever read from or waited on.
//! - **What happens to the file while it is open.** A mapped file that is truncated (or
//!   copied over in place: `cp` truncates first) raises `SIGBUS` at the next touch of a page
//!   past its new end, which kills the process. [`FileMap`] maps a file so that such a page
//!   reads as zeros instead and the mapping remembers it; [`FileMap::check`] (and
//!   [`WatchedFile::check`] for files read with ordinary reads) then says that the file
//!   changed, so the one session using it gets an error and every other goes on.
//!
//! [`ByteSource`] is what a mapping or a buffer lends to readers that keep bytes (`Arc<dyn
//! ByteSource>`), so that they can ask the same question of whatever they hold.

#[cfg(unix)]
mod fault;
mod identity;
mod map;
mod regular;

pub use identity::{FileChanged, WatchedFile};
pub use map::{ByteSource, FileMap};
pub use regular::{open_regular, read_regular, require_regular_or_missing, NotRegularFile};
