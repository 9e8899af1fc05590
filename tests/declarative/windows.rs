//! Windows with group keys and every aggregate, over landed files (PIPELINES §8): after random
//! splits of the same events into runs, every window written equals a recount in plain Rust of
//! the events on time for it, and is written once; every late event is in `_late` once, with
//! its window, the watermark then and the version of the table it came from.

use std::collections::BTreeMap;

use reckon::engine::rng::Rng;

use super::*;

const SQL: &str = "CREATE OR REFRESH STREAMING TABLE sales AS
SELECT * FROM STREAM read_files('landing/sales', format => 'json',
  schema => 'at TIMESTAMP, region STRING, qty BIGINT, price DECIMAL(8,2), ok BOOLEAN');

CREATE OR REFRESH STREAMING TABLE by_region AS
SELECT window(at, '30 minutes').start AS start, window(at, '30 minutes').end AS stop, region,
       count(*) AS n, count(price) AS priced, count_if(ok) AS oks, sum(qty) AS qty,
       sum(price) AS revenue, min(price) AS low, max(region) AS top, avg(qty) AS mean_qty
FROM STREAM sales WATERMARK at DELAY OF INTERVAL 20 MINUTES
WHERE qty > 0
GROUP BY window(at, '30 minutes'), region;
";

/// One sale: minutes after 09:00, region, qty, price in cents (none: NULL), ok.
type Sale = (i64, &'static str, i64, Option<i64>, bool);

fn line(s: &Sale) -> String {
    let price = s.3.map_or("null".to_string(), |c| {
        format!("\"{}.{:02}\"", c / 100, c % 100)
    });
    format!(
        r#"{{"at": "2026-10-01T{:02}:{:02}:00Z", "region": "{}", "qty": {}, "price": {price}, "ok": {}}}"#,
        9 + s.0 / 60,
        s.0 % 60,
        s.1,
        s.2,
        s.4
    )
}

#[test]
fn windows_with_keys_and_every_aggregate_equal_a_recount_in_any_batching() {
    let mut rng = Rng(0x77_1d0f);
    let sales: Vec<Sale> = (0..120)
        .map(|_| {
            let minutes = rng.below(240) as i64;
            let region = ["north", "south", "east"][rng.below(3) as usize];
            let qty = rng.below(6) as i64 - 1;
            let price = (!rng.percent(10)).then(|| 100 + rng.below(5000) as i64);
            (minutes, region, qty, price, rng.percent(50))
        })
        .collect();
    let lab = TestLab::new("windows");
    let dir = sql_project(&lab, "w", SQL);
    let landing = lab.data().join("landing/sales");
    std::fs::create_dir_all(&landing).unwrap();
    // Random splits into files, each file a run; the model replays the same runs.
    let mut model = Model::default();
    let (mut at, mut file) = (0, 0);
    while at < sales.len() {
        let take = (1 + rng.below(30) as usize).min(sales.len() - at);
        let run = &sales[at..at + take];
        let text: Vec<String> = run.iter().map(line).collect();
        std::fs::write(landing.join(format!("{file:03}.json")), text.join("\n")).unwrap();
        lab.ok(&["pipeline", "run", dir.to_str().unwrap()]);
        model.run(run);
        at += take;
        file += 1;
    }
    let mut written: Vec<(
        String,
        String,
        i64,
        i64,
        i64,
        i64,
        String,
        String,
        String,
        f64,
    )> = lab
        .table("by_region")
        .iter()
        .map(|r| {
            let text = |v: &Value| {
                v.as_str()
                    .map(String::from)
                    .unwrap_or_else(|| v.to_string())
            };
            (
                text(&r["start"]),
                text(&r["region"]),
                r["n"].as_i64().unwrap(),
                r["priced"].as_i64().unwrap(),
                r["oks"].as_i64().unwrap(),
                r["qty"].as_i64().unwrap(),
                text(&r["revenue"]),
                text(&r["low"]),
                text(&r["top"]),
                r["mean_qty"].as_f64().unwrap(),
            )
        })
        .collect();
    written.sort_by(|a, b| (&a.0, &a.1).cmp(&(&b.0, &b.1)));
    let expected = model.closed();
    assert!(!expected.is_empty(), "the runs close windows");
    assert_eq!(written.len(), expected.len(), "{written:?}\n{expected:?}");
    for (got, want) in written.iter().zip(&expected) {
        assert_eq!(
            (&got.0, &got.1, got.2, got.3, got.4, got.5),
            (&want.0, &want.1, want.2, want.3, want.4, want.5)
        );
        assert_eq!(
            (&got.6, &got.7, &got.8),
            (&want.6, &want.7, &want.8),
            "{got:?}"
        );
        assert!((got.9 - want.9).abs() < 1e-9, "{got:?} {want:?}");
    }
    let time = |m: i64| format!("2026-10-01T{:02}:{:02}:00Z", 9 + m / 60, m % 60);
    let mut ledger: Vec<(String, String, String, String)> = lab
        .table("_late")
        .iter()
        .map(|r| {
            assert_eq!(r["table"], "by_region", "{r}");
            assert_eq!(r["source_table"], "sales", "{r}");
            assert!(r["source_version"].as_i64().is_some(), "{r}");
            let row: Value = serde_json::from_str(r["row"].as_str().unwrap()).unwrap();
            (
                r["event_time"].as_str().unwrap().to_string(),
                row["region"].as_str().unwrap().to_string(),
                r["window_start"].as_str().unwrap().to_string(),
                r["watermark"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    ledger.sort();
    let mut late: Vec<_> = model
        .late
        .iter()
        .map(|(s, w)| {
            (
                time(s.0),
                s.1.to_string(),
                time(s.0.div_euclid(30) * 30),
                time(*w),
            )
        })
        .collect();
    late.sort();
    assert!(!late.is_empty(), "the runs have late rows");
    assert_eq!(ledger, late);
    // The check agrees (PIPELINES §9): no window is a PROBLEM, every late one names its rows.
    let out = lab.reckon(&["pipeline", "check", dir.to_str().unwrap()]);
    let said = stdout(&out);
    assert!(out.status.success(), "{said}");
    let lines: Vec<&str> = said.lines().filter(|l| l.contains("by_region ")).collect();
    assert!(lines.len() >= expected.len(), "{said}");
    assert!(lines.iter().any(|l| l.starts_with("late ")), "{said}");
    for line in lines {
        let verdict = line.split_whitespace().next().unwrap();
        assert!(
            ["ok", "late", "waiting", "note"].contains(&verdict),
            "{line}"
        );
    }
}

/// The same rules in plain Rust: the watermark trails the latest `at` of rows with qty > 0 by 20
/// minutes; a row whose half hour ended at or before the watermark at the run's start is late.
#[derive(Default)]
struct Model {
    watermark: Option<i64>,
    open: BTreeMap<(i64, &'static str), Vec<Sale>>,
    closed: Vec<(i64, &'static str, Vec<Sale>)>,
    /// Each late sale with the watermark when it was read.
    late: Vec<(Sale, i64)>,
}

impl Model {
    fn run(&mut self, sales: &[Sale]) {
        let before = self.watermark;
        let mut latest = None;
        for s in sales.iter().filter(|s| s.2 > 0) {
            latest = Some(latest.map_or(s.0, |l: i64| l.max(s.0)));
            let start = s.0.div_euclid(30) * 30;
            if let Some(w) = before.filter(|w| start + 30 <= *w) {
                self.late.push((*s, w));
                continue;
            }
            self.open.entry((start, s.1)).or_default().push(*s);
        }
        if let Some(latest) = latest {
            self.watermark = Some(self.watermark.map_or(latest - 20, |w| w.max(latest - 20)));
        }
        if let Some(w) = self.watermark {
            let keys: Vec<_> = self
                .open
                .keys()
                .filter(|(s, _)| s + 30 <= w)
                .copied()
                .collect();
            for key in keys {
                let rows = self.open.remove(&key).unwrap();
                self.closed.push((key.0, key.1, rows));
            }
        }
    }

    #[allow(clippy::type_complexity)]
    fn closed(
        &self,
    ) -> Vec<(
        String,
        String,
        i64,
        i64,
        i64,
        i64,
        String,
        String,
        String,
        f64,
    )> {
        let money = |c: i64| format!("{}.{:02}", c / 100, c % 100);
        let mut out: Vec<_> = self
            .closed
            .iter()
            .map(|(start, region, rows)| {
                let prices: Vec<i64> = rows.iter().filter_map(|r| r.3).collect();
                let qty: i64 = rows.iter().map(|r| r.2).sum();
                (
                    format!("2026-10-01T{:02}:{:02}:00Z", 9 + start / 60, start % 60),
                    region.to_string(),
                    rows.len() as i64,
                    prices.len() as i64,
                    rows.iter().filter(|r| r.4).count() as i64,
                    qty,
                    match prices.is_empty() {
                        true => "null".to_string(),
                        false => money(prices.iter().sum()),
                    },
                    prices
                        .iter()
                        .min()
                        .map_or("null".to_string(), |c| money(*c)),
                    region.to_string(),
                    qty as f64 / rows.len() as f64,
                )
            })
            .collect();
        out.sort_by(|a, b| (&a.0, &a.1).cmp(&(&b.0, &b.1)));
        out
    }
}

/// A condition that gives other rows at each read (`random()`): the late rows, read again for
/// `_late`, are not the rows at their places in the first read, so the flow reads once more,
/// whole. Each row kept in `_late` is one the windows found late, with its own time, once.
#[test]
fn late_rows_of_a_query_that_reads_other_rows_each_time_are_their_own() {
    let lab = TestLab::new("windows-random");
    let sql = "CREATE OR REFRESH STREAMING TABLE ticks AS
SELECT * FROM STREAM read_files('landing/ticks', format => 'json', schema => 'at TIMESTAMP, n BIGINT');

CREATE OR REFRESH STREAMING TABLE counts AS
SELECT window(at, '10 minutes').start AS start, count(*) AS c
FROM STREAM ticks WATERMARK at DELAY OF INTERVAL 5 MINUTES
WHERE random() < 0.5
GROUP BY window(at, '10 minutes');
";
    let dir = sql_project(&lab, "r", sql);
    let landing = lab.data().join("landing/ticks");
    std::fs::create_dir_all(&landing).unwrap();
    // n is the minute after 10:00.
    let ticks = |minutes: std::ops::Range<i64>| -> String {
        minutes
            .map(|m| {
                format!(
                    "{{\"at\": \"2026-10-01T{:02}:{:02}:00Z\", \"n\": {m}}}\n",
                    10 + m / 60,
                    m % 60
                )
            })
            .collect()
    };
    // 12:00 to 12:59 put the watermark near 12:55; then 10:00 to 11:59 are all late.
    std::fs::write(landing.join("1.json"), ticks(120..180)).unwrap();
    lab.ok(&["pipeline", "run", dir.to_str().unwrap()]);
    std::fs::write(landing.join("2.json"), ticks(0..120)).unwrap();
    lab.ok(&["pipeline", "run", dir.to_str().unwrap()]);
    let ledger = lab.table("_late");
    assert!(
        ledger.len() > 20,
        "about half of 120 late: {}",
        ledger.len()
    );
    for r in &ledger {
        let row: Value = serde_json::from_str(r["row"].as_str().unwrap()).unwrap();
        let m = row["n"].as_i64().unwrap();
        let time = format!("2026-10-01T{:02}:{:02}:00", 10 + m / 60, m % 60);
        assert!(r["event_time"].as_str().unwrap().starts_with(&time), "{r}");
    }
    // Each late row once.
    let mut seen: Vec<i64> = ledger
        .iter()
        .map(|r| {
            let row: Value = serde_json::from_str(r["row"].as_str().unwrap()).unwrap();
            row["n"].as_i64().unwrap()
        })
        .collect();
    seen.sort();
    seen.dedup();
    assert_eq!(seen.len(), ledger.len());
    assert!(seen.iter().all(|n| *n < 120), "{seen:?}");
}
