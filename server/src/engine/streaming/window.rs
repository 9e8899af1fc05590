//! Tumbling windows in Spark's append mode (PIPELINES §8), the state a project's windowed flow
//! keeps between runs: the watermark, the open windows with their aggregates so far, and the keys
//! `dropDuplicatesWithinWatermark` remembers. Rows come in source order as (event time, group
//! keys, dedup keys, aggregate inputs) and go to `tumbling.rs`'s windows, the course's gold's.

use serde::{Deserialize, Serialize};

pub use super::tumbling::Fate;
use super::tumbling::Windows;

/// One value of a key or an aggregate: what the windowed SQL groups and sums.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum Cell {
    Null,
    Bool(bool),
    Int(i64),
    /// A decimal's unscaled digits (its scale is the column's).
    Dec(i128),
    Float(f64),
    Text(String),
    /// Microseconds, a date's days: as their column holds them.
    Time(i64),
}

impl Eq for Cell {}

impl std::hash::Hash for Cell {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        std::mem::discriminant(self).hash(state);
        match self {
            Cell::Null => {}
            Cell::Bool(b) => b.hash(state),
            Cell::Int(i) | Cell::Time(i) => i.hash(state),
            Cell::Dec(d) => d.hash(state),
            Cell::Float(f) => f.to_bits().hash(state),
            Cell::Text(t) => t.hash(state),
        }
    }
}

impl Ord for Cell {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        use Cell::*;
        match (self, other) {
            (Bool(a), Bool(b)) => a.cmp(b),
            (Int(a), Int(b)) | (Time(a), Time(b)) => a.cmp(b),
            (Dec(a), Dec(b)) => a.cmp(b),
            (Float(a), Float(b)) => a.total_cmp(b),
            (Text(a), Text(b)) => a.cmp(b),
            _ => self.rank().cmp(&other.rank()),
        }
    }
}

impl PartialOrd for Cell {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Cell {
    fn rank(&self) -> u8 {
        match self {
            Cell::Null => 0,
            Cell::Bool(_) => 1,
            Cell::Int(_) => 2,
            Cell::Dec(_) => 3,
            Cell::Float(_) => 4,
            Cell::Text(_) => 5,
            Cell::Time(_) => 6,
        }
    }
}

/// The aggregates a windowed flow may compute (Spark's append mode, no DISTINCT).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Aggregate {
    /// `count(*)`: every row.
    CountAll,
    /// `count(x)`: rows where x is not NULL.
    Count,
    /// `count_if(condition)`: rows where it is true.
    CountIf,
    Sum,
    Min,
    Max,
    Avg,
}

/// An aggregate so far, for one window.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum Acc {
    Count(i64),
    /// A sum and how many values it took (a sum of none is NULL; an average divides by it).
    Sum(Cell, i64),
    Extreme(Cell),
}

impl Aggregate {
    pub fn start(self) -> Acc {
        match self {
            Aggregate::CountAll | Aggregate::Count | Aggregate::CountIf => Acc::Count(0),
            Aggregate::Sum | Aggregate::Avg => Acc::Sum(Cell::Null, 0),
            Aggregate::Min | Aggregate::Max => Acc::Extreme(Cell::Null),
        }
    }

    /// Adds one row's input to `acc`.
    pub fn add(self, acc: &mut Acc, value: &Cell) {
        match (self, acc) {
            (Aggregate::CountAll, Acc::Count(n)) => *n += 1,
            (Aggregate::Count, Acc::Count(n)) => *n += i64::from(*value != Cell::Null),
            (Aggregate::CountIf, Acc::Count(n)) => *n += i64::from(*value == Cell::Bool(true)),
            (Aggregate::Sum | Aggregate::Avg, Acc::Sum(sum, n)) if *value != Cell::Null => {
                *sum = plus(sum, value);
                *n += 1;
            }
            (Aggregate::Min, Acc::Extreme(e)) if *value != Cell::Null => {
                if *e == Cell::Null || value < e {
                    *e = value.clone();
                }
            }
            (Aggregate::Max, Acc::Extreme(e)) if *value != Cell::Null => {
                if *e == Cell::Null || value > e {
                    *e = value.clone();
                }
            }
            _ => {}
        }
    }
}

fn plus(sum: &Cell, value: &Cell) -> Cell {
    match (sum, value) {
        (Cell::Null, v) => v.clone(),
        (Cell::Int(a), Cell::Int(b)) => Cell::Int(a.wrapping_add(*b)),
        (Cell::Dec(a), Cell::Dec(b)) => Cell::Dec(a + b),
        (Cell::Float(a), Cell::Float(b)) => Cell::Float(a + b),
        (a, _) => a.clone(),
    }
}

/// One row of a windowed flow's input, read in source order.
#[derive(Debug, Clone)]
pub struct Row {
    /// Its event time; `None` (NULL) rows are in no window.
    pub time: Option<i64>,
    /// Whether it passes the `WHERE` conjuncts that refer to the event time (the others were
    /// applied before: they also decide which rows move the watermark).
    pub kept: bool,
    pub keys: Vec<Cell>,
    pub dedup: Vec<Cell>,
    pub inputs: Vec<Cell>,
}

/// A windowed flow's state, committed with the table it writes.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct WindowState {
    pub watermark: Option<i64>,
    /// Open windows: (start, group keys) and their aggregates so far.
    open: Vec<(i64, Vec<Cell>, Vec<Acc>)>,
    /// Dedup keys and their first event time, while the watermark keeps them.
    keys: Vec<(Vec<Cell>, i64)>,
    /// The shape the state was made with: another one cannot go on from it.
    #[serde(default)]
    shape: Option<Shape>,
}

/// The shape of a windowed flow: its window, delay, aggregates and whether it drops duplicates.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Shape {
    pub width: i64,
    pub delay: i64,
    pub aggregates: Vec<Aggregate>,
    pub dedup: bool,
}

/// A window the watermark closed: its start, group keys and aggregates.
pub type Closed = (i64, Vec<Cell>, Vec<Acc>);

/// The state while a run changes it.
pub struct Running<'s> {
    shape: &'s Shape,
    before: Option<i64>,
    latest: Option<i64>,
    windows: Windows<Vec<Cell>, Vec<Cell>, Vec<Acc>>,
}

impl WindowState {
    /// The shape its first run had (`None` before any).
    pub fn started_with(&self) -> Option<&Shape> {
        self.shape.as_ref()
    }

    /// Starts a run over this state.
    pub fn run(self, shape: &Shape) -> Running<'_> {
        let mut windows = Windows::new(shape.width, shape.delay, shape.dedup);
        windows.watermark = self.watermark;
        windows.open = self.open.into_iter().map(|(s, k, a)| ((s, k), a)).collect();
        windows.keys = self.keys.into_iter().collect();
        Running {
            shape,
            before: self.watermark,
            latest: None,
            windows,
        }
    }
}

impl Running<'_> {
    /// One row, in source order.
    pub fn add(&mut self, row: Row) -> Fate {
        let Some(time) = row.time else {
            return Fate::Filtered;
        };
        // Every row that passed the conjuncts not about the event time moves the watermark.
        self.latest = Some(self.latest.map_or(time, |l| l.max(time)));
        if !row.kept {
            return Fate::Filtered;
        }
        let aggregates = &self.shape.aggregates;
        let (dedup, inputs) = (row.dedup, row.inputs);
        self.windows.place(
            (time, self.before),
            row.keys,
            || dedup,
            || aggregates.iter().map(|a| a.start()).collect(),
            |accs| {
                for ((aggregate, acc), value) in aggregates.iter().zip(accs).zip(&inputs) {
                    aggregate.add(acc, value);
                }
            },
        )
    }

    /// Ends the run: the watermark moves, expired keys go, and the windows it closed come out
    /// in (start, keys) order, with the state to commit beside them.
    pub fn finish(mut self) -> (WindowState, Vec<Closed>) {
        let closed = self.windows.advance(self.latest);
        let closed = closed.into_iter().map(|((s, k), a)| (s, k, a)).collect();
        let mut keys: Vec<(Vec<Cell>, i64)> = self.windows.keys.into_iter().collect();
        keys.sort_unstable();
        let state = WindowState {
            watermark: self.windows.watermark,
            open: self
                .windows
                .open
                .into_iter()
                .map(|((s, k), a)| (s, k, a))
                .collect(),
            keys,
            shape: Some(self.shape.clone()),
        };
        (state, closed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const HOUR: i64 = 3_600_000_000;

    fn row(time: i64, id: i64, amount: i128) -> Row {
        Row {
            time: Some(time),
            kept: true,
            keys: vec![],
            dedup: vec![Cell::Int(id)],
            inputs: vec![Cell::Null, Cell::Dec(amount)],
        }
    }

    #[test]
    fn a_window_is_written_once_when_the_watermark_passes_its_end() {
        let shape = Shape {
            width: HOUR,
            delay: HOUR,
            aggregates: vec![Aggregate::CountAll, Aggregate::Sum],
            dedup: true,
        };
        let state = WindowState::default();
        let mut run = state.run(&shape);
        assert_eq!(run.add(row(10 * HOUR + 5, 1, 100)), Fate::Counted);
        assert_eq!(run.add(row(10 * HOUR + 6, 1, 100)), Fate::Duplicate);
        assert_eq!(run.add(row(11 * HOUR + 1, 2, 50)), Fate::Counted);
        let (next, closed) = run.finish();
        assert!(closed.is_empty(), "the watermark is 10:00: nothing closed");
        let mut run = next.run(&shape);
        // At or before the watermark (10:00): late.
        assert_eq!(run.add(row(10 * HOUR, 3, 7)), Fate::Late);
        assert_eq!(run.add(row(12 * HOUR + 1, 4, 1)), Fate::Counted);
        let (next, closed) = run.finish();
        assert_eq!(next.watermark, Some(11 * HOUR + 1));
        assert_eq!(
            closed,
            vec![(
                10 * HOUR,
                vec![],
                vec![Acc::Count(1), Acc::Sum(Cell::Dec(100), 1)]
            )]
        );
        let encoded = serde_json::to_string(&next).unwrap();
        assert_eq!(serde_json::from_str::<WindowState>(&encoded).unwrap(), next);
    }
}
