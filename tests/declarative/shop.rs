//! Module 9 written by the learner (PIPELINES §8): `reckon pipeline example shop`, the seed's
//! gold as a windowed streaming table over `read_kafka`, run beside the course's Rust pipeline on
//! the same topic, runs at the same points. Its `hourly_sales` equals the course's row for row, on the course scenario and on
//! seeded random sends (duplicates, late events, any batching), with duplicates dropped within the
//! watermark and without.

use reckon::engine::rng::Rng;

use super::*;

/// A table's rows as (hour, orders, revenue in cents), in hour order.
fn hours(lab: &TestLab) -> Vec<(String, i64, i64)> {
    let mut rows: Vec<(String, i64, i64)> = lab
        .table("hourly_sales")
        .iter()
        .map(|r| {
            let revenue = match &r["revenue"] {
                Value::String(s) => s.parse::<f64>().unwrap(),
                other => other.as_f64().unwrap(),
            };
            (
                r["hour"].as_str().unwrap().to_string(),
                r["orders"].as_i64().unwrap(),
                (revenue * 100.0).round() as i64,
            )
        })
        .collect();
    rows.sort();
    rows
}

struct Pair {
    course: TestLab,
    shop: TestLab,
    project: String,
    dedup: bool,
}

impl Pair {
    fn new(name: &str, dedup: bool) -> Self {
        Self::written(name, dedup, false)
    }

    /// The pair, with the shop written in the course's Python when `python`.
    fn written(name: &str, dedup: bool, python: bool) -> Self {
        let course = TestLab::new(&format!("{name}c"));
        let shop = TestLab::new(&format!("{name}s"));
        // The example as `reckon pipeline example shop` writes it, subscribed to the course
        // lab's topic; without the property when duplicates count.
        let dir = shop.data().join("shop");
        let mut args = vec!["pipeline", "example", "shop", dir.to_str().unwrap()];
        if python {
            args.push("--python");
        }
        course.ok(&args);
        let sql = match python {
            true => dir.join("transformations/shop.py"),
            false => dir.join("transformations/shop.sql"),
        };
        let text = std::fs::read_to_string(&sql).unwrap();
        let subscribed = match python {
            true => format!(".option(\"subscribe\", \"{}\")", course.topic),
            false => format!("subscribe => '{}'", course.topic),
        };
        assert!(text.contains(&subscribed), "{text}");
        if !dedup {
            let kept: Vec<&str> = text
                .lines()
                .filter(|l| !l.contains("reckon.dropDuplicatesWithinWatermark"))
                .filter(|l| !l.contains(".dropDuplicatesWithinWatermark("))
                .collect();
            std::fs::write(&sql, kept.join("\n")).unwrap();
        }
        Self {
            project: dir.display().to_string(),
            course,
            shop,
            dedup,
        }
    }

    /// Both pipelines run, then their hourly tables compared.
    fn run_and_compare(&self, when: &str) {
        match self.dedup {
            true => self.course.ok(&["run"]),
            false => self.course.ok(&["run", "--no-dedup"]),
        };
        self.shop.ok(&["pipeline", "run", &self.project]);
        assert_eq!(hours(&self.shop), hours(&self.course), "{when}");
    }
}

/// Module 9 in the course's Python (`withWatermark`, `dropDuplicatesWithinWatermark`,
/// `groupBy(F.window(...))`), read and never run: the course's hours, dedup on and off.
#[test]
fn module_9_in_the_courses_python_gives_the_courses_hours() {
    for dedup in [true, false] {
        let pair = Pair::written(&format!("shoppy{}", u8::from(dedup)), dedup, true);
        for batch in ["1", "2", "3", "3", "4", "5"] {
            pair.course.send(batch);
            pair.run_and_compare(&format!("python, dedup {dedup}, after batch {batch}"));
        }
        assert_eq!(hours(&pair.shop).len(), 3, "the scenario closes 3 hours");
        assert_eq!(
            late_orders(&pair.shop),
            vec![(1006, "2026-10-01T09:00:00Z".into())]
        );
    }
}

#[test]
fn the_shop_projects_hourly_sales_equal_the_courses_on_the_course_scenario() {
    for dedup in [true, false] {
        let pair = Pair::new(&format!("shopcourse{}", u8::from(dedup)), dedup);
        for batch in ["1", "2", "3", "3", "4", "5"] {
            pair.course.send(batch);
            pair.run_and_compare(&format!("dedup {dedup}, after batch {batch}"));
        }
        assert!(!hours(&pair.shop).is_empty(), "the scenario closes hours");
        assert_eq!(
            late_orders(&pair.shop),
            vec![(1006, "2026-10-01T09:00:00Z".into())]
        );
        same_hour_verdicts(&pair);
    }
}

/// PIPELINES §9: the shop's check gives every hour SPEC §4's verdict word, hour and numbers
/// (in its own words); without the dedup property 11:00 is a PROBLEM naming order 1005.
fn same_hour_verdicts(pair: &Pair) {
    let (course, course_code) = pair.course.check();
    let out = pair.shop.reckon(&["pipeline", "check", &pair.project]);
    let shop = stdout(&out);
    assert_eq!(out.status.code(), Some(course_code), "{shop}");
    // (verdict, hour, the numbers after the hour)
    let parse = |line: &str| {
        let mut words = line.split_whitespace();
        let verdict = words.next()?.to_string();
        let rest: Vec<&str> = words.map(|w| w.trim_end_matches(':')).collect();
        let at = rest
            .iter()
            .position(|w| w.len() == 5 && w.as_bytes()[2] == b':')?;
        let numbers: Vec<String> = rest[at + 1..]
            .iter()
            .map(|w| w.trim_matches(|c: char| !c.is_ascii_digit()))
            .filter(|w| !w.is_empty() && w.chars().all(|c| c.is_ascii_digit() || c == '.'))
            .map(String::from)
            .collect();
        Some((verdict, rest[at].to_string(), numbers))
    };
    let hours = |text: &str, table: bool| -> Vec<(String, String, Vec<String>)> {
        text.lines()
            .filter(|l| !table || l.contains("hourly_sales "))
            .filter_map(parse)
            .collect()
    };
    let (want, got) = (hours(&course, false), hours(&shop, true));
    assert_eq!(want.len(), got.len(), "course:\n{course}\nshop:\n{shop}");
    for (w, g) in want.iter().zip(&got) {
        assert_eq!(
            (&w.0, &w.1),
            (&g.0, &g.1),
            "course:\n{course}\nshop:\n{shop}"
        );
        assert_eq!(w.2, g.2[..w.2.len().min(g.2.len())], "{w:?} {g:?}\n{shop}");
    }
    let Some(eleven) = shop.lines().find(|l| l.contains("hourly_sales 11:00 ")) else {
        return;
    };
    if !course.contains("1005") {
        return;
    }
    match pair.dedup {
        true => assert!(eleven.starts_with("ok "), "{shop}"),
        false => assert!(
            eleven.starts_with("PROBLEM") && eleven.contains("order_id 1005"),
            "{shop}"
        ),
    }
}

/// A random order event as SPEC §1 writes it, between 09:00 and 15:00 of the course's day.
fn random_event(rng: &mut Rng, sent: &[String]) -> String {
    // One in six repeats an event already sent (a producer's retry).
    if !sent.is_empty() && rng.percent(16) {
        return sent[rng.below(sent.len() as u64) as usize].clone();
    }
    let order = 2000 + rng.below(12);
    let status = ["placed", "placed", "paid", "shipped"][rng.below(4) as usize];
    let minutes = rng.below(6 * 60);
    let cents = 100 + rng.below(9900);
    format!(
        r#"{{"order_id": {order}, "customer_id": "C{:02}", "status": "{status}", "amount": "{}.{:02}", "event_time": "2026-10-01T{:02}:{:02}:00Z"}}"#,
        order % 7,
        cents / 100,
        cents % 100,
        9 + minutes / 60,
        minutes % 60
    )
}

#[test]
fn the_shop_projects_hourly_sales_equal_the_courses_on_random_sends_in_any_batching() {
    let mut written = 0;
    for (seed, dedup) in [(11, true), (12, false), (13, true)] {
        let pair = Pair::new(&format!("shoprandom{seed}"), dedup);
        let mut rng = Rng(seed);
        let mut sent: Vec<String> = vec![];
        for round in 0..5 {
            for _ in 0..rng.below(8) {
                let event = random_event(&mut rng, &sent);
                pair.course.ok(&["produce", "--event", &event]);
                sent.push(event);
            }
            pair.run_and_compare(&format!("seed {seed}, round {round}, sent {sent:?}"));
        }
        same_hour_verdicts(&pair);
        written += hours(&pair.shop).len();
    }
    assert!(written >= 3, "the sends close hours: {written}");
}

#[test]
fn a_shop_run_cut_at_any_point_of_its_kafka_or_windowed_flow_changes_nothing() {
    let pair = Pair::new("shopcrash", true);
    let points = [
        "bronze_orders:after-read",
        "bronze_orders:after-write",
        "bronze_orders:after-commit",
        "hourly_sales:after-read",
        "hourly_sales:after-write",
        "hourly_sales:after-commit",
    ];
    for (i, batch) in ["1", "2", "3", "3", "4", "5"].into_iter().enumerate() {
        pair.course.send(batch);
        let crash = points[i % points.len()];
        let out = pair
            .shop
            .reckon(&["--crash-at", crash, "pipeline", "run", &pair.project]);
        assert!(
            !out.status.success(),
            "no crash at {crash}: {}",
            stdout(&out)
        );
        pair.run_and_compare(&format!("cut at {crash}, after batch {batch}"));
    }
    assert_eq!(
        late_orders(&pair.shop),
        vec![(1006, "2026-10-01T09:00:00Z".into())]
    );
}

/// The orders in `_late` and their windows: SPEC §4's scenario has one, order 1006 placed at
/// 09:50, read once the watermark had passed 10:00; cuts and reruns must keep it once.
fn late_orders(lab: &TestLab) -> Vec<(i64, String)> {
    lab.table("_late")
        .iter()
        .map(|r| {
            let row: Value = serde_json::from_str(r["row"].as_str().unwrap()).unwrap();
            assert_eq!(r["source_table"], "bronze_orders", "{r}");
            assert!(r["source_offset"].as_i64().is_some(), "{r}");
            let window = r["window_start"].as_str().unwrap().to_string();
            (row["order_id"].as_i64().unwrap(), window)
        })
        .collect()
}

/// Taking the property out changes the windows' shape: refused until a full refresh rebuilds the
/// table, which then counts order 1005 twice at 11:00, as the course's gold does without dedup.
#[test]
fn a_changed_window_shape_is_refused_until_a_full_refresh_rebuilds_the_table() {
    let pair = Pair::new("shopshape", true);
    for batch in ["1", "2", "3", "3", "4", "5"] {
        pair.course.send(batch);
        pair.run_and_compare(&format!("after batch {batch}"));
    }
    let sql = std::path::Path::new(&pair.project).join("transformations/shop.sql");
    let text = std::fs::read_to_string(&sql).unwrap();
    let kept: Vec<&str> = text
        .lines()
        .filter(|l| !l.contains("reckon.dropDuplicatesWithinWatermark"))
        .collect();
    std::fs::write(&sql, kept.join("\n")).unwrap();
    let out = pair.shop.reckon(&["pipeline", "run", &pair.project]);
    let said = stdout(&out);
    assert!(!out.status.success(), "{said}");
    assert!(said.contains("--full-refresh hourly_sales"), "{said}");
    pair.shop.ok(&[
        "pipeline",
        "run",
        &pair.project,
        "--full-refresh",
        "hourly_sales",
    ]);
    let eleven = hours(&pair.shop)
        .into_iter()
        .find(|h| h.0 == "2026-10-01T11:00:00Z")
        .expect("11:00 is written");
    assert_eq!((eleven.1, eleven.2), (2, 3650), "order 1005 counted twice");
}

/// PIPELINES §9: a windowed table changed behind the pipeline's back by another writer (a
/// window's row deleted, a window's count changed) gives a PROBLEM naming the window; untouched
/// it gives none.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_window_changed_behind_the_pipelines_back_is_a_problem_naming_it() {
    let pair = Pair::new("shoptamper", true);
    for batch in ["1", "2", "3", "3", "4", "5"] {
        pair.course.send(batch);
        pair.shop.ok(&["pipeline", "run", &pair.project]);
    }
    let check = || {
        let out = pair.shop.reckon(&["pipeline", "check", &pair.project]);
        (out.status.code(), stdout(&out))
    };
    let (code, text) = check();
    assert_eq!(code, Some(0), "{text}");
    assert!(!text.contains("PROBLEM"), "{text}");
    let engine = reckon::Lab::new(reckon::Config::new(pair.shop.data()));
    let open = || async {
        let tables = engine.flows().tables;
        tables.open_named("hourly_sales").await.unwrap().unwrap()
    };
    open()
        .await
        .delete()
        .with_predicate("hour = '2026-10-01T10:00:00Z'")
        .await
        .unwrap();
    let (code, text) = check();
    assert_eq!(code, Some(1), "{text}");
    assert!(
        text.contains("PROBLEM hourly_sales 10:00 not written although the watermark passed its end: the events say orders 2, revenue 55.00"),
        "{text}"
    );
    open()
        .await
        .update()
        .with_predicate("hour = '2026-10-01T11:00:00Z'")
        .with_update("orders", "5")
        .await
        .unwrap();
    let (_, text) = check();
    assert!(
        text.contains("PROBLEM hourly_sales 11:00 counted orders 5, revenue 18.25, but the events say orders 1, revenue 18.25: an event counted twice"),
        "{text}"
    );
    assert!(text.contains("late    hourly_sales 09:00"), "{text}");
}
