//! Tumbling windows in append mode: the one place rows meet the watermark, for the course's gold
//! (an hour's orders and revenue, keyed by order and status) and for every project's windowed
//! flow (any group keys, duplicate keys and aggregates, as cells: `window.rs`). The rules are
//! `watermark.rs`'s.
//!
//! A run reads its rows in source order with the watermark its start had (`before`); only at its
//! end does the watermark move ([`Windows::advance`]), forget the duplicate keys it passed and
//! close the windows it passed, oldest first.

use std::collections::BTreeMap;
use std::collections::hash_map::Entry;
use std::hash::Hash;

use foldhash::{HashMap, HashMapExt};

use super::watermark;

/// What became of a row.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fate {
    Counted,
    /// Not in any window: no event time, or a condition on the event time was false.
    Filtered,
    /// At or behind the watermark (with duplicates dropped), or in a window it closed.
    Late,
    /// Its duplicate key was seen within the watermark.
    Duplicate,
}

/// Open windows, keyed by their start and group `G`, each adding up an `A`; and, when duplicates
/// are dropped within the watermark, the keys `D` seen with their first event time (hashed by
/// foldhash, seeded at random: fast on every row, and keys cannot be chosen to collide).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Windows<G, D: Hash + Eq, A> {
    pub width: i64,
    pub delay: i64,
    /// `dropDuplicatesWithinWatermark`: a key seen within the watermark is dropped again.
    pub dedup: bool,
    /// Microseconds; `None` until the first run that read a row.
    pub watermark: Option<i64>,
    pub open: BTreeMap<(i64, G), A>,
    pub keys: HashMap<D, i64>,
}

impl<G: Ord, D: Hash + Eq, A> Windows<G, D, A> {
    pub fn new(width: i64, delay: i64, dedup: bool) -> Self {
        Self {
            width,
            delay,
            dedup,
            watermark: None,
            open: BTreeMap::new(),
            keys: HashMap::new(),
        }
    }

    /// One row at `time`, read while the watermark was `before`: unless it is late or a
    /// duplicate of key `dedup()`, its window of group `group` (started by `start()`) takes it
    /// through `add`.
    pub fn place(
        &mut self,
        (time, before): (i64, Option<i64>),
        group: G,
        dedup: impl FnOnce() -> D,
        start: impl FnOnce() -> A,
        add: impl FnOnce(&mut A),
    ) -> Fate {
        let window = watermark::window_start(time, self.width);
        if self.dedup {
            if watermark::late_for_dedup(time, before) {
                return Fate::Late;
            }
            match self.keys.entry(dedup()) {
                Entry::Occupied(_) => return Fate::Duplicate,
                Entry::Vacant(new) => {
                    new.insert(time);
                }
            }
        } else if watermark::late_for_window(window + self.width, before) {
            return Fate::Late;
        }
        add(self.open.entry((window, group)).or_insert_with(start));
        Fate::Counted
    }

    /// Ends a run that read rows up to `latest` (`None`: none that move the watermark): the
    /// watermark moves, expired keys go, and the windows it closed come out oldest first.
    pub fn advance(&mut self, latest: Option<i64>) -> Vec<((i64, G), A)> {
        self.watermark = watermark::advanced(self.watermark, latest, self.delay);
        let Some(w) = self.watermark else {
            return vec![];
        };
        let delay = self.delay;
        self.keys
            .retain(|_, first| !watermark::key_expired(*first, w, delay));
        let mut closed = vec![];
        while let Some(oldest) = self.open.first_entry() {
            if !watermark::window_closed(oldest.key().0 + self.width, w) {
                break;
            }
            closed.push(oldest.remove_entry());
        }
        closed
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const HOUR: i64 = 3_600_000_000;

    #[test]
    fn without_dedup_a_row_is_late_only_once_its_window_is_closed() {
        let mut windows: Windows<(), (), i64> = Windows::new(HOUR, HOUR, false);
        let place = |w: &mut Windows<(), (), i64>, t: i64, before| {
            w.place((t, before), (), || (), || 0, |n| *n += 1)
        };
        assert_eq!(place(&mut windows, 10 * HOUR + 5, None), Fate::Counted);
        assert_eq!(place(&mut windows, 10 * HOUR + 5, None), Fate::Counted);
        // The watermark is 11:00: the 10:00 window ends there, so it is final.
        assert_eq!(windows.advance(Some(12 * HOUR)), vec![((10 * HOUR, ()), 2)]);
        let before = windows.watermark;
        assert_eq!(before, Some(11 * HOUR));
        assert_eq!(place(&mut windows, 10 * HOUR + 59, before), Fate::Late);
        assert_eq!(place(&mut windows, 11 * HOUR, before), Fate::Counted);
        assert_eq!(windows.advance(None), vec![]);
        assert_eq!(windows.advance(Some(13 * HOUR)), vec![((11 * HOUR, ()), 1)]);
    }
}
