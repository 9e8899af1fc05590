//! Event times (SPEC §1): RFC 3339 in, microseconds since the epoch in UTC kept, RFC 3339 with
//! `Z` out.

use chrono::{DateTime, Datelike, NaiveDate, SecondsFormat, Utc};

/// The event times Reckon accepts, in UTC: the years every part can hold, with an hour's room
/// either side for the watermark. The check's batch queries go through DataFusion's nanosecond
/// timestamps, which end in April 2262 (year 0000 and 9999 each broke a lab's check).
const FIRST_YEAR: i32 = 1970;
const LAST_YEAR: i32 = 2261;

/// Parses an RFC 3339 timestamp into microseconds since the epoch, UTC; refuses a time outside
/// the years 1970 to 2261 once its offset is applied.
pub fn parse_time(text: &str) -> Result<i64, String> {
    match simple_time(text) {
        Some(micros) => Ok(micros),
        None => exact_time(text),
    }
}

/// The form Reckon writes and nearly every event is sent in, `YYYY-MM-DDTHH:MM:SSZ`, read by
/// position. `None` for anything else (an offset, a fraction, lower case, a leap second, a day
/// the month lacks, a year outside the range), which [`exact_time`] reads or refuses in words.
/// Both give the same time for every text this reads (a unit test holds them to it).
fn simple_time(text: &str) -> Option<i64> {
    let b = text.as_bytes();
    let shaped = b.len() == 20
        && [
            (4, b'-'),
            (7, b'-'),
            (10, b'T'),
            (13, b':'),
            (16, b':'),
            (19, b'Z'),
        ]
        .iter()
        .all(|&(i, c)| b[i] == c);
    if !shaped {
        return None;
    }
    let number = |from: usize, to: usize| {
        b[from..to].iter().try_fold(0u32, |n, &d| {
            d.is_ascii_digit().then(|| n * 10 + u32::from(d - b'0'))
        })
    };
    let year = i32::try_from(number(0, 4)?).ok()?;
    let (month, day) = (number(5, 7)?, number(8, 10)?);
    let (hour, minute, second) = (number(11, 13)?, number(14, 16)?, number(17, 19)?);
    if !(FIRST_YEAR..=LAST_YEAR).contains(&year) {
        return None;
    }
    let time = NaiveDate::from_ymd_opt(year, month, day)?.and_hms_opt(hour, minute, second)?;
    Some(time.and_utc().timestamp_micros())
}

/// Any RFC 3339 time, through chrono's parser; the words of every refusal.
fn exact_time(text: &str) -> Result<i64, String> {
    let utc = DateTime::parse_from_rfc3339(text)
        .map_err(|e| format!("{text:?} is not an RFC 3339 timestamp ({e})"))?
        .with_timezone(&Utc);
    if !(FIRST_YEAR..=LAST_YEAR).contains(&utc.year()) {
        return Err(format!(
            "{text:?} is {} in UTC, outside the years {FIRST_YEAR} to {LAST_YEAR}",
            utc.to_rfc3339_opts(SecondsFormat::Secs, true)
        ));
    }
    Ok(utc.timestamp_micros())
}

/// Microseconds as RFC 3339 UTC with `Z` and no fractional seconds (SPEC §2).
pub fn format_micros(micros: i64) -> String {
    DateTime::<Utc>::from_timestamp_micros(micros)
        .map(|t| t.to_rfc3339_opts(SecondsFormat::Secs, true))
        .unwrap_or_else(|| micros.to_string())
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    proptest! {
        #![proptest_config(ProptestConfig { cases: 20_000, failure_persistence: None, ..ProptestConfig::default() })]

        /// The reading by position agrees with chrono's parser wherever it reads at all.
        #[test]
        fn simple_times_read_as_the_exact_parser_reads_them(
            text in "(19[6-9][0-9]|2[0-3][0-9]{2}|226[0-3]|[0-9]{4})-[0-9]{2}-[0-3][0-9]T[0-2][0-9]:[0-6][0-9]:[0-6][0-9](Z|z|\\+01:00|\\.5Z)"
        ) {
            if let Some(micros) = simple_time(&text) {
                prop_assert_eq!(exact_time(&text), Ok(micros), "{}", text);
            }
            prop_assert_eq!(parse_time(&text), exact_time(&text), "{}", text);
        }
    }

    #[test]
    fn the_common_form_takes_the_simple_reading() {
        assert_eq!(
            simple_time("2026-10-01T09:05:00Z"),
            Some(1_790_845_500_000_000)
        );
        for text in [
            "2026-02-29T00:00:00Z",
            "2026-10-01T09:05:60Z",
            "2026-10-01T09:05:00+00:00",
            "2262-01-01T00:00:00Z",
            "2026-10-01t09:05:00Z",
        ] {
            assert_eq!(simple_time(text), None, "{text}");
        }
    }
}
