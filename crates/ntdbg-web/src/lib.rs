//! The crash store's HTTP surfaces (issue 38): `ntdbg collect`, an endpoint for the
//! Crashpad/Breakpad upload protocol, and `ntdbg serve`, the crash-stats page.
//!
//! # Design
//!
//! - **One job per module.** [`crashpad`] parses an upload (gzip, multipart, the dump and its
//!   annotations) and says what is wrong with a bad one; [`tokens`] and [`rate`] decide who may
//!   upload; `intake` commits accepted reports in batches; [`collect`] is the handler that
//!   joins them; [`pages`] renders the HTML; [`listener`] and [`access`] give every surface the
//!   security defaults of `ntdbg mcp --http` (loopback unless told otherwise, tokens, size
//!   limits, header and body timeouts, a connection cap).
//! - **Nothing accepted is lost.** A report is answered `200` with its crash id only after its
//!   dump is durable in the object store (`ntdbg-objects`) and its upload and queue entry are
//!   committed durably (`ntdbg-store`); a process killed at any point before leaves the client
//!   to send it again, and a dump already stored is not stored twice.
//! - **Throughput from batching.** Dumps are written and `fsync`ed in parallel (a file system
//!   groups concurrent syncs), and one committer thread puts every upload waiting into one
//!   transaction.
//! - **Pages without a frontend.** Server-rendered HTML, one inline style sheet, charts as
//!   inline SVG, forms that are plain `GET`s: every view is a link, and no script runs.

pub mod access;
pub mod collect;
pub mod crashpad;
mod intake;
pub mod listener;
pub mod pages;
pub mod rate;
pub mod tokens;

pub use access::Exposure;
pub use collect::{run_collector, CollectOptions, SUBMIT_PATH};
pub use listener::Limits;
pub use pages::{run_pages, PageOptions};
pub use tokens::ProductTokens;
