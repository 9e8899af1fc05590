//! "Final up to when?" for a project's windowed tables (PIPELINES §8): a window is written once,
//! when the watermark passes its end, and never changes after; so a windowed table is final
//! through its last window written, and the next closes when an event at least the watermark's
//! delay past its end arrives.

use chrono::{DateTime, Utc};

use crate::engine::declarative::declared::windowed::{self, Standing};
use crate::engine::declarative::graph::Graph;
use crate::service::lab::{Lab, LabError};

/// `2026-10-01 11:00` (with seconds when the time has them).
fn when(micros: i64) -> String {
    DateTime::<Utc>::from_timestamp_micros(micros).map_or_else(
        || micros.to_string(),
        |t| match t.format("%S").to_string().as_str() {
            "00" => t.format("%Y-%m-%d %H:%M").to_string(),
            _ => t.format("%Y-%m-%d %H:%M:%S").to_string(),
        },
    )
}

/// A duration in words: `1 hour`, `90 minutes`.
fn span(micros: i64) -> String {
    let minutes = micros / 60_000_000;
    match minutes {
        m if m % 1440 == 0 => plural(m / 1440, "day"),
        m if m % 60 == 0 => plural(m / 60, "hour"),
        m => plural(m, "minute"),
    }
}

fn plural(n: i64, unit: &str) -> String {
    match n {
        1 => format!("1 {unit}"),
        n => format!("{n} {unit}s"),
    }
}

/// What the freshness page says of the windowed tables: the headline's "final through", and a
/// sentence for each table.
pub struct Said {
    pub final_through: Option<String>,
    pub sentences: Vec<String>,
}

fn sentence(s: &Standing) -> (Option<String>, String) {
    let name = s.target.replace('_', " ");
    let (width, delay) = (span(s.width), span(s.delay));
    match s.final_through() {
        Some(last) => {
            let next_end = last + 2 * s.width;
            (
                Some(when(last)),
                format!(
                    "{name} is final through the {width} window from {} (written once, never \
                     changed); the next closes when an event at or after {} arrives (its end \
                     plus the watermark's {delay}).",
                    when(last),
                    when(next_end + s.delay)
                ),
            )
        }
        None => (
            None,
            format!(
                "{name} has no window written yet: a {width} window is written once an event \
                 at least {delay} past its end arrives."
            ),
        ),
    }
}

/// The windowed tables of `graph`, said.
pub async fn said(lab: &Lab, graph: &Graph) -> Result<Said, LabError> {
    let standing = windowed::standing(&lab.flows(), graph).await?;
    let mut out = Said {
        final_through: None,
        sentences: vec![],
    };
    for s in &standing {
        let (through, text) = sentence(s);
        let mut text = text;
        if let Some(first) = text.get_mut(0..1) {
            first.make_ascii_uppercase();
        }
        out.final_through = out.final_through.or(through);
        out.sentences.push(text);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    const HOUR: i64 = 3_600_000_000;

    #[test]
    fn an_hour_is_final_once_the_watermark_passes_its_end() {
        // 2026-10-01T00:00:00Z
        let day = 1_790_812_800_000_000;
        let standing = |w: Option<i64>| Standing {
            target: "hourly_sales".into(),
            width: HOUR,
            delay: HOUR,
            watermark: w,
        };
        let (through, text) = sentence(&standing(Some(day + 12 * HOUR + 20 * 60_000_000)));
        assert_eq!(through.as_deref(), Some("2026-10-01 11:00"));
        assert!(
            text.contains("the next closes when an event at or after 2026-10-01 14:00 arrives"),
            "{text}"
        );
        let (through, _) = sentence(&standing(Some(day + 12 * HOUR)));
        assert_eq!(through.as_deref(), Some("2026-10-01 11:00"));
        let (through, text) = sentence(&standing(None));
        assert_eq!(through, None);
        assert!(text.contains("no window written yet"), "{text}");
    }
}
