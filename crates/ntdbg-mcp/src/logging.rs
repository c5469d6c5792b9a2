//! Logs for the `ntdbg mcp` binary: always to stderr (stdout carries the protocol).

/// Installs a stderr logger, filtered by `NTDBG_LOG` (e.g. `debug`, `ntdbg_mcp=trace`;
/// default `warn`, with `minidump` at `error`). Does nothing when a logger is already installed. For binaries only:
/// a library never installs a global logger.
pub fn init_stderr_logging() {
    let filter = tracing_subscriber::EnvFilter::try_from_env("NTDBG_LOG")
        // minidump warns about every CPU context with extra XSTATE, which is normal.
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn,minidump=error"));
    let _ = tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_ansi(false)
        .with_env_filter(filter)
        .try_init();
}
