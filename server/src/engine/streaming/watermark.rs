//! The watermark's rules (SPEC §3, PIPELINES §8), one place for the course's gold and a
//! project's windowed flow. Times are microseconds since the epoch.
//!
//! W is the watermark at the start of a run (unset before any row: nothing is late then). After
//! a run W = max(W, latest event time read - delay); it never moves back. A window [s, s + width)
//! is written once, in the first run after which W >= its end. With duplicates dropped within the
//! watermark, a row at or before W is late, and a key is remembered until W >= its first event
//! time + delay; without, a row is late when its window's end <= W.

/// The watermark after a run that read events up to `latest` (`None`: none that count).
pub fn advanced(before: Option<i64>, latest: Option<i64>, delay: i64) -> Option<i64> {
    match latest {
        Some(latest) => Some(before.map_or(latest - delay, |w| w.max(latest - delay))),
        None => before,
    }
}

/// `dropDuplicatesWithinWatermark` drops what is at or behind the watermark.
pub fn late_for_dedup(event_time: i64, before: Option<i64>) -> bool {
    before.is_some_and(|w| event_time <= w)
}

/// A window aggregation drops a row whose window the watermark has closed.
pub fn late_for_window(window_end: i64, before: Option<i64>) -> bool {
    before.is_some_and(|w| window_end <= w)
}

/// Whether a duplicate key first seen at `first` is forgotten at watermark `w`.
pub fn key_expired(first: i64, w: i64, delay: i64) -> bool {
    w >= first + delay
}

/// Whether a window ending at `end` is final (written) at watermark `w`.
pub fn window_closed(end: i64, w: i64) -> bool {
    end <= w
}

/// The start of the tumbling window of `width` holding `t`.
pub fn window_start(t: i64, width: i64) -> i64 {
    t.div_euclid(width) * width
}

#[cfg(test)]
mod tests {
    use super::*;

    const HOUR: i64 = 3_600_000_000;

    #[test]
    fn the_watermark_never_moves_back_and_closes_a_window_at_its_end() {
        assert_eq!(advanced(None, None, HOUR), None);
        assert_eq!(advanced(None, Some(3 * HOUR), HOUR), Some(2 * HOUR));
        assert_eq!(advanced(Some(2 * HOUR), Some(HOUR), HOUR), Some(2 * HOUR));
        assert!(late_for_dedup(2 * HOUR, Some(2 * HOUR)));
        assert!(!late_for_dedup(2 * HOUR + 1, Some(2 * HOUR)));
        assert!(!late_for_dedup(0, None));
        assert!(late_for_window(2 * HOUR, Some(2 * HOUR)));
        assert!(!late_for_window(2 * HOUR + 1, Some(2 * HOUR)));
        assert!(key_expired(HOUR, 2 * HOUR, HOUR));
        assert!(!key_expired(HOUR + 1, 2 * HOUR, HOUR));
        assert!(window_closed(2 * HOUR, 2 * HOUR));
        assert_eq!(window_start(HOUR + 5, HOUR), HOUR);
        assert_eq!(window_start(-5, HOUR), -HOUR);
    }
}
