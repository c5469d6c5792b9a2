//! Protocol and tool tests for the ntdbg MCP server: rmcp's own client talks to the server
//! in-process over `tokio::io::duplex` (through the same stdio filter the binary uses), and
//! the HTTP app is driven with in-process requests. The Python SDK suite in
//! `tests/mcp_client/` drives the real binary over stdio and HTTP.

mod common;
mod errors;
mod exact_json;
mod http;
mod live;
mod protocol;
mod schemas;
mod sessions;
mod tools;
