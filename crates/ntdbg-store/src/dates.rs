//! The moments `--since`, `--until` and `--new-since` name.

use crate::StoreError;
use time::format_description::well_known::Rfc3339;
use time::macros::format_description;
use time::{Date, OffsetDateTime};

/// A moment, in Unix seconds (UTC).
pub type Moment = i64;

/// Now, in Unix seconds.
pub fn now() -> Moment {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64)
}

/// `2026-11-30` (midnight UTC), `2026-11-30T12:00:00Z` (RFC 3339), or `7d` / `12h` (that long
/// before `now`).
pub fn parse_time(text: &str, now: Moment) -> Result<Moment, StoreError> {
    let text = text.trim();
    let ago = |unit: char, seconds: i64| {
        text.strip_suffix(unit)
            .and_then(|n| n.parse::<i64>().ok())
            .map(|n| now - n.saturating_mul(seconds))
    };
    if let Some(t) = ago('d', 86_400).or_else(|| ago('h', 3_600)) {
        return Ok(t);
    }
    if let Ok(d) = Date::parse(text, format_description!("[year]-[month]-[day]")) {
        return Ok(d.midnight().assume_utc().unix_timestamp());
    }
    OffsetDateTime::parse(text, &Rfc3339)
        .map(|t| t.unix_timestamp())
        .map_err(|_| {
            StoreError::new(format!(
                "{text:?} is not a time: give 2026-11-30, 2026-11-30T12:00:00Z, 7d or 12h"
            ))
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_times_and_spans() {
        assert_eq!(parse_time("1970-01-02", 0).unwrap(), 86_400);
        assert_eq!(parse_time("1970-01-01T01:00:00Z", 0).unwrap(), 3_600);
        assert_eq!(parse_time("7d", 700_000).unwrap(), 700_000 - 7 * 86_400);
        assert_eq!(parse_time("2h", 10_000).unwrap(), 10_000 - 7_200);
        assert!(parse_time("last week", 0).is_err());
    }
}
