//! [`ErrorCode`]: the one list of stable error keys, from the formats and the GDB client up to
//! the front ends.
//!
//! Every error a user or a client sees carries one of these codes; [`ErrorCode::name`] is the
//! snake_case key on the wire (MCP `code`, `CommandError.code`). Each crate's error type says
//! its code as a variant of this list (there is no catch-all), so a new key is added here,
//! once, and front ends branch on the variant, never on the text.

/// Declares [`ErrorCode`] with its wire names, so each name is written once.
macro_rules! error_codes {
    ($($(#[$doc:meta])* $variant:ident = $name:literal,)*) => {
        /// A stable error key.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        #[non_exhaustive]
        pub enum ErrorCode {
            $($(#[$doc])* $variant,)*
        }

        impl ErrorCode {
            /// The snake_case key clients see.
            pub fn name(self) -> &'static str {
                match self {
                    $(ErrorCode::$variant => $name,)*
                }
            }

            /// The code whose key is `name`, if the list has it.
            pub fn from_name(name: &str) -> Option<ErrorCode> {
                match name {
                    $($name => Some(ErrorCode::$variant),)*
                    _ => None,
                }
            }
        }
    };
}

error_codes! {
    // Command lines.
    /// Bad syntax in a command line or its arguments.
    SyntaxError = "syntax_error",
    /// A blank command.
    EmptyCommand = "empty_command",
    /// A `"` with no closing quote.
    UnterminatedQuote = "unterminated_quote",
    /// A `{` with no closing `}`.
    UnterminatedBlock = "unterminated_block",
    /// A `}` with no opening `{`.
    UnmatchedBrace = "unmatched_brace",
    /// A malformed `~` thread prefix.
    BadThread = "bad_thread",
    /// A command line over the length limit.
    LineTooLong = "line_too_long",
    /// More commands in one batch than a front end accepts.
    TooManyCommands = "too_many_commands",
    /// A command word the table does not know.
    UnknownCommand = "unknown_command",
    /// A command acting on the host, refused by the front end's policy.
    HostEffectRefused = "host_effect_refused",
    // Expressions.
    /// An operator with no operand.
    MissingExpression = "missing_expression",
    /// A symbol that does not resolve.
    Unresolved = "unresolved",
    /// A register the target does not have.
    BadRegister = "bad_register",
    /// Memory an expression reads is not available.
    MemoryAccess = "memory_access",
    /// Division by zero.
    DivideByZero = "divide_by_zero",
    /// A number over 64 bits.
    Overflow = "overflow",
    /// An expression over the length limit.
    TooLong = "too_long",
    /// An expression nested too deep.
    TooDeep = "too_deep",
    /// Operands whose types do not fit the operator (C++ expressions).
    TypeConflict = "type_conflict",
    /// A variable whose location is not valid at the frame's instruction.
    ValueUnavailable = "value_unavailable",
    // What a command asked for.
    /// A thread that does not exist.
    NoSuchThread = "no_such_thread",
    /// No PDB type information for what an expression names.
    NoTypeInformation = "no_type_information",
    /// A stack frame that does not exist.
    NoSuchFrame = "no_such_frame",
    /// A frame whose function has no parameters or locals in its symbols.
    NoFrameVariables = "no_frame_variables",
    /// A handle the dump does not list.
    NoSuchHandle = "no_such_handle",
    /// The dump has no handle data stream.
    NoHandleData = "no_handle_data",
    /// The dump has no thread times (ThreadInfoList stream).
    NoThreadTimes = "no_thread_times",
    /// A module that does not exist.
    NoSuchModule = "no_such_module",
    /// A type the symbols do not have.
    NoSuchType = "no_such_type",
    /// A field the type does not have.
    NoSuchField = "no_such_field",
    /// A breakpoint that does not exist.
    NoSuchBreakpoint = "no_such_breakpoint",
    /// Memory the target does not hold.
    MemoryUnavailable = "memory_unavailable",
    /// A range over a command's limit.
    RangeTooLarge = "range_too_large",
    /// A range that is empty or wraps around the address space.
    RangeInvalid = "range_invalid",
    /// An address in no memory region the target describes (`!address`).
    NoRegion = "no_region",
    /// An address not aligned as the command needs.
    BadAlignment = "bad_alignment",
    /// An architecture the command does not handle.
    UnsupportedArch = "unsupported_arch",
    /// Something this build does not do yet.
    Unsupported = "unsupported",
    /// A thread without a register context.
    NoContext = "no_context",
    /// No exception event to show.
    NoException = "no_exception",
    /// No exception context (`.ecxr` on a dump without one).
    NoExceptionContext = "no_exception_context",
    /// No context record at an address (`.cxr ADDR`).
    BadContextRecord = "bad_context_record",
    /// No trap frame at an address (`.trap ADDR`).
    BadTrapFrame = "bad_trap_frame",
    /// No bugcheck in the dump.
    NoBugcheck = "no_bugcheck",
    /// A kernel command on a user-mode target.
    NotKernelDump = "not_kernel_dump",
    /// The kernel's symbols are needed and missing.
    KernelSymbolsMissing = "kernel_symbols_missing",
    /// No current kernel process.
    NoCurrentProcess = "no_current_process",
    /// A kernel thread with no saved context.
    NoSavedContext = "no_saved_context",
    /// No function bounds for `uf`.
    NoFunctionBounds = "no_function_bounds",
    /// A bad symbol path.
    BadSymbolPath = "bad_symbol_path",
    // Live targets.
    /// Refused: the session is read-only.
    ReadOnly = "read_only",
    /// The target is running (or still running after the wait).
    TargetRunning = "target_running",
    /// The target is not running.
    TargetNotRunning = "target_not_running",
    /// The target exited or the debugger detached.
    TargetGone = "target_gone",
    /// Run control on a target that does not run (a dump).
    NotLive = "not_live",
    /// No return address to run to (`gu`).
    NoReturnAddress = "no_return_address",
    /// More breakpoints than the target takes.
    TooManyBreakpoints = "too_many_breakpoints",
    /// A live target kind this build cannot attach to.
    UnsupportedTarget = "unsupported_target",
    /// The engine's wait for the target ran out (the front ends' batch limit is
    /// [`ErrorCode::Timeout`] where clients already see that key).
    TimedOut = "timed_out",
    /// A wait ran out (the GDB remote client's and the windbg-mcp profile's key).
    Timeout = "timeout",
    /// Connecting to a GDB stub failed.
    ConnectFailed = "connect_failed",
    /// An MCP `attach` the server's `--allow-attach` refuses, or whose stub did not answer (one
    /// answer for both, so that a client cannot probe what listens where).
    AttachRefused = "attach_refused",
    /// Reading or writing the GDB connection failed.
    Io = "io",
    /// The GDB stub disconnected; also a profile's session after shutdown.
    Disconnected = "disconnected",
    /// The GDB stub broke the protocol.
    Protocol = "protocol",
    /// The GDB stub answered an error.
    RemoteError = "remote_error",
    /// The stub's target description is unusable.
    TargetXml = "target_xml",
    /// An argument the GDB client refuses.
    InvalidArgument = "invalid_argument",
    // Files.
    /// A file that does not exist.
    FileNotFound = "file_not_found",
    /// A file that cannot be read or written.
    IoError = "io_error",
    /// A file that is not a dump.
    NotADump = "not_a_dump",
    /// A damaged or truncated dump.
    CorruptDump = "corrupt_dump",
    /// A kind of dump this build cannot open.
    UnsupportedDump = "unsupported_dump",
    /// A dump whose header cannot be read (listing).
    UnreadableDump = "unreadable_dump",
    /// The dump changed on disk while its session had it open.
    DumpChanged = "dump_changed",
    /// A symbol file, index or image changed on disk while its symbols were in use.
    SymbolFileChanged = "symbol_file_changed",
    /// A path that names a FIFO, a socket or a device where a file is read.
    NotARegularFile = "not_a_regular_file",
    /// A file that exists and must not be overwritten.
    FileExists = "file_exists",
    /// A path that is not a folder.
    NotADirectory = "not_a_directory",
    /// A path outside the folders a front end may touch.
    PathNotAllowed = "path_not_allowed",
    // Front ends.
    /// A session id that is not open.
    UnknownSession = "unknown_session",
    /// Another call holds the session.
    SessionBusy = "session_busy",
    /// A client already has as many MCP tasks working as the server allows.
    TooManyTasks = "too_many_tasks",
    /// Tool arguments that do not match the schema.
    InvalidArguments = "invalid_arguments",
    /// A tool argument out of range (the windbg-mcp profile's key).
    InvalidArg = "invalid_arg",
    /// An output id that is not cached.
    UnknownOutput = "unknown_output",
    /// An output that left the cache.
    OutputExpired = "output_expired",
    /// A folder with more dumps than a listing takes.
    TooManyDumps = "too_many_dumps",
    /// No target open (a profile's implicit session).
    NotAttached = "not_attached",
    /// A tool this host cannot serve.
    NotAvailable = "not_available",
    /// A session of the other kind (user / kernel) for a profile's tool.
    WrongSessionKind = "wrong_session_kind",
    /// A dump of the other kind (user / kernel) for a profile's tool.
    WrongDumpKind = "wrong_dump_kind",
    // Symbol files.
    /// A symbol path that does not parse.
    InvalidSymbolPath = "invalid_symbol_path",
    /// A PDB that the reader refuses.
    BadPdb = "bad_pdb",
    /// A Breakpad `.sym` that does not parse.
    BadBreakpadSymbols = "bad_breakpad_symbols",
    /// An image file (EXE, DLL) that does not parse.
    BadImage = "bad_image",
    /// A symbol file of another build (GUID/age or debug id differ).
    Mismatch = "mismatch",
    /// A symbol file that changed on disk while in use.
    FileChanged = "file_changed",
    /// A file given as symbols that is none.
    NotASymbolFile = "not_a_symbol_file",
    /// A third-party reader panicked on a damaged file; the panic was contained.
    ReaderPanicked = "reader_panicked",
    // Binary formats.
    /// Data that ends before a structure it must hold.
    Truncated = "truncated",
    /// A file that does not start with the format's signature.
    BadMagic = "bad_magic",
    /// A relative address outside the image.
    RvaOutOfRange = "rva_out_of_range",
    /// A structure whose fields contradict each other.
    Malformed = "malformed",
    /// More data is needed to go on (a reader that was given too little).
    NeedsData = "needs_data",
    /// A symbol-store key that is not one.
    InvalidKey = "invalid_key",
    /// The client or the user cancelled the work (MCP `notifications/cancelled`, Ctrl-C).
    Cancelled = "cancelled",
    /// A bug: something that should not fail did.
    InternalError = "internal_error",
}

impl std::fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl serde::Serialize for ErrorCode {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.name())
    }
}

impl PartialEq<&str> for ErrorCode {
    fn eq(&self, other: &&str) -> bool {
        self.name() == *other
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_unknown_keys_are_none() {
        for code in [
            ErrorCode::SyntaxError,
            ErrorCode::Timeout,
            ErrorCode::TimedOut,
            ErrorCode::BadPdb,
            ErrorCode::Truncated,
        ] {
            assert_eq!(ErrorCode::from_name(code.name()), Some(code));
        }
        assert_eq!(ErrorCode::from_name("brand_new"), None);
        assert_eq!(ErrorCode::UnknownCommand, "unknown_command");
    }
}
