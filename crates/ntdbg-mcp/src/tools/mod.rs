//! The tool implementations, one module per group. The MCP-facing methods in
//! [`server`](crate::server) are thin and call these.

pub mod commands;
pub mod crashes;
pub mod dumps;
pub mod live;
pub mod sessions;
