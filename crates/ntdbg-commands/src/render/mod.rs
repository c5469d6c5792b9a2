//! WinDbg text shapes shared by several command families. The primitives (addresses with the
//! backtick, pointer-width hex, `??`, `module!function+0x1a`) are [`ntdbg_engine::text`]; this
//! module adds the shapes built on them that need a session, dates and durations, and `dt`'s
//! type layouts ([`dt`]).

use ntdbg_engine::Session;

pub(crate) mod code;
pub mod dt;
pub(crate) mod registers;
pub(crate) mod stack;
pub(crate) mod threads;

/// A pointer-width value as WinDbg prints addresses on the session's target:
/// `00000001`40002134` on 64-bit targets, `00401ef3` on 32-bit ones.
pub fn addr(session: &Session, value: u64) -> String {
    ntdbg_engine::text::address(value, session.arch().pointer_size())
}

/// A value as C's `%#x` prints it, which WinDbg's extensions use: `0x1f0003`, but `0` for zero.
pub fn c_hex(value: u64) -> String {
    if value == 0 {
        "0".to_string()
    } else {
        format!("{value:#x}")
    }
}

/// Time in WinDbg's form: `Mon Nov 30 02:02:06.000 2026 (UTC + 0:00)` (dump headers keep
/// whole seconds, so the milliseconds are `.000`).
pub fn windbg_time(unix_seconds: u32) -> String {
    windbg_time_ms(u64::from(unix_seconds) * 1000)
}

/// Time in WinDbg's form with real milliseconds, from milliseconds since 1970 (UTC).
pub fn windbg_time_ms(unix_millis: u64) -> String {
    let seconds = unix_millis / 1000;
    let Ok(t) = i64::try_from(seconds)
        .map_err(|_| ())
        .and_then(|s| time::OffsetDateTime::from_unix_timestamp(s).map_err(|_| ()))
    else {
        return format!("{seconds} (seconds since 1970)");
    };
    let weekday = &format!("{}", t.weekday())[..3];
    let month = &format!("{}", t.month())[..3];
    format!(
        "{weekday} {month} {:>2} {:02}:{:02}:{:02}.{:03} {} (UTC + 0:00)",
        t.day(),
        t.hour(),
        t.minute(),
        t.second(),
        unix_millis % 1000,
        t.year()
    )
}

/// A duration in WinDbg's form: `0 days 0:00:05.000`.
pub fn windbg_duration(seconds: u64) -> String {
    let days = seconds / 86_400;
    let rest = seconds % 86_400;
    format!(
        "{days} days {}:{:02}:{:02}.000",
        rest / 3600,
        (rest % 3600) / 60,
        rest % 60
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times() {
        assert_eq!(windbg_time(0), "Thu Jan  1 00:00:00.000 1970 (UTC + 0:00)");
        assert_eq!(
            windbg_time_ms(1_764_640_926_042),
            "Tue Dec  2 02:02:06.042 2025 (UTC + 0:00)"
        );
        assert_eq!(windbg_duration(90_061), "1 days 1:01:01.000");
    }
}
