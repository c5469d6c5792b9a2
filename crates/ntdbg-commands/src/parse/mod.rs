//! The WinDbg command-line grammar above the expression level: splitting a batch into
//! commands ([`split_commands`]) and reading each command's thread prefix, command word and
//! argument text ([`parse_command`]). Arguments are left as text for the command table,
//! which evaluates them with [`ntdbg_engine::expr`].
//!
//! ```
//! # use ntdbg_commands::parse::{parse_command, split_commands, ThreadSelector};
//! let commands = split_commands("~3s; kb 20; .if (1) { r; k }").unwrap();
//! assert_eq!(commands.len(), 3);
//! let kb = parse_command(commands[1].value).unwrap();
//! assert_eq!((kb.name, kb.args), ("kb", "20"));
//! let switch = parse_command(commands[0].value).unwrap();
//! assert_eq!(switch.thread, Some(ThreadSelector::Index(3)));
//! ```

mod command;
mod error;
mod split;
#[cfg(test)]
mod tests;

pub use command::{parse_command, CommandLine, ThreadSelector};
pub use error::{ParseError, ParseErrorKind};
pub use split::{split_commands, Spanned};
