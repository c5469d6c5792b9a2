//! Message texts of common Win32 error codes and NTSTATUS values, as Windows' system message
//! table words them (what `FormatMessage` and WinDbg's `!error` print). A built-in table: the
//! codes that crash analysis meets most, not the whole system table.

use crate::ntstatus::exception_name;

/// The system message of Win32 error `code`, when it is one of the common ones.
pub fn win32_message(code: u32) -> Option<&'static str> {
    Some(match code {
        0 => "The operation completed successfully.",
        1 => "Incorrect function.",
        2 => "The system cannot find the file specified.",
        3 => "The system cannot find the path specified.",
        4 => "The system cannot open the file.",
        5 => "Access is denied.",
        6 => "The handle is invalid.",
        8 => "Not enough memory resources are available to process this command.",
        13 => "The data is invalid.",
        14 => "Not enough memory resources are available to complete this operation.",
        15 => "The system cannot find the drive specified.",
        18 => "There are no more files.",
        21 => "The device is not ready.",
        31 => "A device attached to the system is not functioning.",
        32 => "The process cannot access the file because it is being used by another process.",
        33 => "The process cannot access the file because another process has locked a portion of the file.",
        38 => "Reached the end of the file.",
        50 => "The request is not supported.",
        53 => "The network path was not found.",
        80 => "The file exists.",
        87 => "The parameter is incorrect.",
        109 => "The pipe has been ended.",
        111 => "The file name is too long.",
        112 => "There is not enough space on the disk.",
        120 => "This function is not supported on this system.",
        122 => "The data area passed to a system call is too small.",
        123 => "The filename, directory name, or volume label syntax is incorrect.",
        126 => "The specified module could not be found.",
        127 => "The specified procedure could not be found.",
        161 => "The specified path is invalid.",
        183 => "Cannot create a file when that file already exists.",
        187 => "The specified system semaphore name was not found.",
        193 => "%1 is not a valid Win32 application.",
        203 => "The system could not find the environment option that was entered.",
        206 => "The filename or extension is too long.",
        231 => "All pipe instances are busy.",
        232 => "The pipe is being closed.",
        233 => "No process is on the other end of the pipe.",
        234 => "More data is available.",
        258 => "The wait operation timed out.",
        259 => "No more data is available.",
        288 => "Attempt to release mutex not owned by caller.",
        298 => "Too many posts were made to a semaphore.",
        299 => "Only part of a ReadProcessMemory or WriteProcessMemory request was completed.",
        487 => "Attempt to access invalid address.",
        534 => "Arithmetic result exceeded 32 bits.",
        535 => "There is a process on other end of the pipe.",
        536 => "Waiting for a process to open the other end of the pipe.",
        995 => "The I/O operation has been aborted because of either a thread exit or an application request.",
        996 => "Overlapped I/O event is not in a signaled state.",
        997 => "Overlapped I/O operation is in progress.",
        998 => "Invalid access to memory location.",
        1008 => "An attempt was made to reference a token that does not exist.",
        1009 => "The configuration registry database is corrupt.",
        1010 => "The configuration registry key is invalid.",
        1114 => "A dynamic link library (DLL) initialization routine failed.",
        1150 => "The specified program requires a newer version of Windows.",
        1168 => "Element not found.",
        1223 => "The operation was canceled by the user.",
        1225 => "The remote computer refused the network connection.",
        1314 => "A required privilege is not held by the client.",
        1400 => "Invalid window handle.",
        1407 => "Cannot find window class.",
        1450 => "Insufficient system resources exist to complete the requested service.",
        1460 => "This operation returned because the timeout period expired.",
        1722 => "The RPC server is unavailable.",
        1816 => "Not enough quota is available to process this command.",
        10054 => "An existing connection was forcibly closed by the remote host.",
        10060 => "A connection attempt failed because the connected party did not properly respond after a period of time, or established connection failed because connected host has failed to respond.",
        10061 => "No connection could be made because the target machine actively refused it.",
        _ => return None,
    })
}

/// The message of NTSTATUS `code`: the system message for the codes listed here, else the
/// short description crash analysis uses for exception codes.
pub fn ntstatus_message(code: u32) -> Option<&'static str> {
    let text = match code {
        0x0000_0000 => "STATUS_SUCCESS",
        0x0000_0102 => "STATUS_TIMEOUT",
        0x0000_0103 => "STATUS_PENDING",
        0x8000_0005 => "{Buffer Overflow}  The data was too large to fit into the specified buffer.",
        0x8000_001A => "{No More Entries}  No more entries are available from an enumeration operation.",
        0xC000_0001 => "{Operation Failed}  The requested operation was unsuccessful.",
        0xC000_0002 => "{Not Implemented}  The requested operation is not implemented.",
        0xC000_0022 => "{Access Denied}  A process has requested access to an object, but has not been granted those access rights.",
        0xC000_0023 => "{Buffer Too Small}  The buffer is too small to contain the entry. No information has been written to the buffer.",
        0xC000_0034 => "Object Name not found.",
        0xC000_0035 => "Object Name already exists.",
        0xC000_003A => "Object Path Component was not a directory object.",
        0xC000_00BB => "The request is not supported.",
        0xC000_0120 => "The I/O request was canceled.",
        0xC000_0225 => "The object was not found.",
        _ => return exception_name(code).map(|(_, description)| description),
    };
    Some(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_codes_have_their_system_text() {
        assert_eq!(
            win32_message(2),
            Some("The system cannot find the file specified.")
        );
        assert_eq!(
            ntstatus_message(0xC000_0034),
            Some("Object Name not found.")
        );
        assert_eq!(ntstatus_message(0xC000_0005), Some("Access violation"));
        assert_eq!(win32_message(0xdead), None);
        assert_eq!(ntstatus_message(0x1234_5678), None);
    }
}
