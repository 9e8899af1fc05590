//! The check against random changes in random runs, a target changed behind the flow, 30,000
//! deletes.

use super::*;

/// A small deterministic generator for the property test.
struct Lcg(u64);

impl Lcg {
    fn below(&mut self, n: u64) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (self.0 >> 33) % n
    }
}

/// Random change streams (few keys, sequences with ties and late arrivals, deletes, NULL plans)
/// split into random runs: after every run the check's own recomputation equals each target,
/// and the final tables equal those of the same changes in one run.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn random_changes_in_random_runs_match_the_checks_recomputation() {
    const PLANS: [Option<&str>; 4] = [Some("free"), Some("pro"), Some("team"), None];
    for case in 0..12u64 {
        let mut rng = Lcg(case + 1);
        let changes: Vec<String> = (0..(5 + rng.below(40)))
            .map(|_| {
                let plan = PLANS[rng.below(4) as usize];
                serde_json::json!({
                    "id": format!("k{}", rng.below(4)),
                    "seq": rng.below(12),
                    "plan": plan,
                    "seats": rng.below(3),
                    "op": if rng.below(5) == 0 { "DELETE" } else { "UPSERT" },
                })
                .to_string()
            })
            .collect();
        let mut tables = vec![];
        for split in [true, false] {
            let dir = tempfile::Builder::new()
                .prefix("reckon-cdc-prop-")
                .tempdir()
                .unwrap();
            let project = dir.path().join("project");
            std::fs::create_dir_all(project.join("transformations")).unwrap();
            std::fs::write(
                project.join("spark-pipeline.yml"),
                "name: p\nlibraries:\n  - glob:\n      include: transformations/**\n",
            )
            .unwrap();
            std::fs::write(project.join("transformations/cdc.sql"), PROJECT).unwrap();
            let landing = dir.path().join("landing/changes");
            std::fs::create_dir_all(&landing).unwrap();
            let lab = reckon::Lab::new(reckon::Config::new(dir.path()));
            let graph = lab.project(&project).unwrap();
            let mut rest: &[String] = &changes;
            let mut n = 0;
            while !rest.is_empty() {
                let take = if split {
                    1 + rng.below(rest.len() as u64) as usize
                } else {
                    rest.len()
                };
                let (now, later) = rest.split_at(take);
                rest = later;
                std::fs::write(landing.join(format!("{n:03}.json")), now.join("\n") + "\n")
                    .unwrap();
                n += 1;
                let run = lab.run_project(&graph, &[]).await.unwrap();
                assert!(!run.failed(), "case {case}: {:?}", run.events);
                for line in &run.findings {
                    assert_eq!(
                        line.verdict,
                        app::model::Verdict::Ok,
                        "case {case}, run {n}: {line}\nchanges: {changes:#?}"
                    );
                }
                assert_eq!(
                    run.findings.len(),
                    3,
                    "case {case}: one line per AUTO CDC target"
                );
            }
            let mut rows = vec![];
            for table in ["accounts", "latest", "kept"] {
                let out = std::process::Command::new(env!("CARGO_BIN_EXE_reckon"))
                    .arg("--data")
                    .arg(dir.path())
                    .args(["table", table, "--json"])
                    .output()
                    .unwrap();
                rows.push(String::from_utf8(out.stdout).unwrap());
            }
            tables.push(rows);
        }
        assert_eq!(
            tables[0], tables[1],
            "case {case}: split runs differ from one run"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_target_changed_behind_the_flows_back_is_a_problem_naming_the_key() {
    let (lab, project) = lab_with_project("cdc-problem");
    land(&lab, "1.json", RUN_1);
    let engine = reckon::Lab::new(reckon::Config::new(lab.data()));
    let graph = engine.project(std::path::Path::new(&project)).unwrap();
    let run = engine.run_project(&graph, &[]).await.unwrap();
    assert!(
        run.findings
            .iter()
            .all(|l| l.verdict == app::model::Verdict::Ok),
        "{:?}",
        run.findings
    );
    let latest = engine
        .flows()
        .tables
        .open_named("latest")
        .await
        .unwrap()
        .unwrap();
    latest.delete().with_predicate("id = 'd'").await.unwrap();
    let out = lab.reckon(&["pipeline", "check", &project]);
    let text = words(&String::from_utf8_lossy(&out.stdout));
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(
        text.contains("PROBLEM latest differs from its change events for 1 key(s): d"),
        "{text}"
    );
    assert!(
        text.contains("ok accounts has the history of all 9 keys"),
        "{text}"
    );
}

/// Many keys at once: 30,000 accounts, then a run that deletes every one and brings back a
/// third: the MERGE deletes what is gone without naming the keys in a predicate.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_that_deletes_thirty_thousand_keys_closes_every_version() {
    let (lab, project) = lab_with_project("cdc-many");
    let line = |id: u32, seq: u32, op: &str| {
        format!(r#"{{"id": "k{id}", "seq": {seq}, "plan": "free", "seats": 1, "op": "{op}"}}"#)
    };
    let first: Vec<String> = (0..30_000).map(|i| line(i, 1, "UPSERT")).collect();
    let dir = lab.data().join("landing/changes");
    std::fs::write(dir.join("1.json"), first.join("\n") + "\n").unwrap();
    let engine = reckon::Lab::new(reckon::Config::new(lab.data()));
    let graph = engine.project(std::path::Path::new(&project)).unwrap();
    engine.run_project(&graph, &[]).await.unwrap();
    let second: Vec<String> = (0..30_000)
        .map(|i| line(i, 2, "DELETE"))
        .chain((0..10_000).map(|i| line(i, 3, "UPSERT")))
        .collect();
    std::fs::write(dir.join("2.json"), second.join("\n") + "\n").unwrap();
    let run = engine.run_project(&graph, &[]).await.unwrap();
    assert!(!run.failed(), "{:?}", run.events);
    assert!(
        run.findings
            .iter()
            .all(|l| l.verdict == app::model::Verdict::Ok),
        "{:?}",
        run.findings
    );
    let latest = run.events.iter().find(|e| e.flow == "latest_cdc").unwrap();
    assert_eq!(latest.figures.rows_deleted, 20_000, "{latest:?}");
    let every = reckon::engine::declarative::check::Scope::Every;
    let lines = reckon::engine::declarative::check::check(&engine.flows(), &graph, every)
        .await
        .unwrap();
    assert!(
        lines.iter().all(|l| l.verdict == app::model::Verdict::Ok),
        "{lines:?}"
    );
    assert_eq!(rows(&lab, "latest").len(), 10_000);
}
