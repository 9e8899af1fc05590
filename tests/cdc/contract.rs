//! Each case of the contract, the same changes in one, two or five runs, a crash before the commit.

use super::*;

#[test]
fn each_case_of_the_contract_gives_its_exact_rows() {
    let (lab, project) = lab_with_project("cdc-cases");
    land(&lab, "1.json", RUN_1);
    lab.ok(&["pipeline", "run", &project]);
    land(&lab, "2.json", RUN_2);
    let out = lab.ok(&["pipeline", "run", &project]);
    assert!(out.contains("accounts_cdc"), "{out}");
    let scd2 = rows(&lab, "accounts");
    assert_eq!(key(&scd2, "a"), ["free 1 1 [1, 2)", "pro 1 2 [2, -)"]);
    assert_eq!(key(&scd2, "b"), ["free 1 3 [3, 5)", "pro 1 5 [5, -)"]);
    assert_eq!(
        key(&scd2, "c"),
        ["free 1 1 [1, 3)", "team 2 3 [3, 5)", "pro 1 5 [5, -)"]
    );
    assert_eq!(key(&scd2, "d"), ["free 1 1 [1, 4)", "pro 1 6 [6, -)"]);
    assert_eq!(key(&scd2, "e"), ["free 1 1 [1, 3)", "pro 1 3 [3, 4)"]);
    assert_eq!(key(&scd2, "f"), ["free 1 1 [1, 2)"]);
    assert_eq!(key(&scd2, "g"), ["free 1 2 [1, -)"]);
    assert_eq!(key(&scd2, "h"), ["free 5 2 [1, -)"]);
    assert_eq!(key(&scd2, "i"), ["free 3 1 [1, 2)", "- 4 2 [2, -)"]);
    assert!(
        !scd2.contains_key("j") && !scd2.contains_key("-"),
        "{scd2:?}"
    );

    let scd1 = rows(&lab, "latest");
    let expected: BTreeMap<String, Vec<String>> = [
        ("a", "pro 1 2"),
        ("b", "pro 1 5"),
        ("c", "pro 1 5"),
        ("d", "pro 1 6"),
        ("g", "free 1 2"),
        ("h", "free 5 2"),
        ("i", "- 4 2"),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), vec![v.to_string()]))
    .collect();
    assert_eq!(scd1, expected);
    let kept = rows(&lab, "kept");
    assert_eq!(key(&kept, "i"), ["free 4 2"]);

    let quarantine = lab.table("_quarantine");
    let reasons: Vec<(String, String)> = quarantine
        .iter()
        .filter(|r| r["table"] == "accounts")
        .map(|r| {
            (
                r["reason"].as_str().unwrap().to_string(),
                format!("{}:{}", r["source_table"], r["source_version"]),
            )
        })
        .collect();
    assert_eq!(reasons.len(), 2, "{quarantine:?}");
    assert!(
        reasons.iter().any(|(r, _)| r == "key id is NULL"),
        "{reasons:?}"
    );
    assert!(
        reasons.iter().any(|(r, _)| r == "SEQUENCE BY seq is NULL"),
        "{reasons:?}"
    );

    let check = words(&lab.ok(&["pipeline", "check", &project]));
    for table in ["accounts", "latest", "kept"] {
        assert!(
            check.contains(&format!("ok {table} has the history of all 9 keys")),
            "{check}"
        );
    }
    let history: Value =
        serde_json::from_str(&lab.ok(&["pipeline", "history", "accounts", "c", "--json"])).unwrap();
    let versions = history["versions"].as_array().unwrap();
    assert_eq!(versions.len(), 3, "{history}");
    let team = &versions[1];
    assert_eq!(
        (team["start"].as_str(), team["end"].as_str()),
        (Some("3"), Some("5"))
    );
    let late = &team["events"][0];
    assert_eq!(late["sequence"], "3");
    assert_eq!(late["late_after"], "5", "{history}");
    assert_eq!(late["source"], "changes version 2", "{history}");
    assert!(versions[0]["events"][0]["late_after"].is_null());

    let events: Vec<Value> = lab
        .ok(&["pipeline", "events", "--run", "2", "--json"])
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let cdc = events.iter().find(|e| e["flow"] == "accounts_cdc").unwrap();
    assert!(cdc["upserted"].as_u64().unwrap() >= 3, "{cdc}");
    assert_eq!(
        cdc["output_rows"].as_u64(),
        Some(cdc["upserted"].as_u64().unwrap() + cdc["deleted"].as_u64().unwrap())
    );
}

#[test]
fn the_same_changes_in_one_two_or_five_runs_give_the_same_tables() {
    let all: Vec<Change> = RUN_1.iter().chain(RUN_2).copied().collect();
    let mut results = vec![];
    for runs in [1usize, 2, 5] {
        let (lab, project) = lab_with_project(&format!("cdc-split-{runs}"));
        let per_run = all.len().div_ceil(runs);
        for (n, chunk) in all.chunks(per_run).enumerate() {
            land(&lab, &format!("{n:02}.json"), chunk);
            lab.ok(&["pipeline", "run", &project]);
        }
        results.push((
            runs,
            rows(&lab, "accounts"),
            rows(&lab, "latest"),
            rows(&lab, "kept"),
        ));
    }
    for (runs, scd2, scd1, kept) in &results[1..] {
        assert_eq!(scd2, &results[0].1, "SCD 2 in {runs} runs");
        assert_eq!(scd1, &results[0].2, "SCD 1 in {runs} runs");
        assert_eq!(kept, &results[0].3, "IGNORE NULL UPDATES in {runs} runs");
    }
}

#[test]
fn a_crash_before_the_commit_then_a_rerun_gives_the_uninterrupted_tables() {
    let (clean, project) = lab_with_project("cdc-clean");
    land(&clean, "1.json", RUN_1);
    clean.ok(&["pipeline", "run", &project]);
    land(&clean, "2.json", RUN_2);
    clean.ok(&["pipeline", "run", &project]);

    let (lab, project) = lab_with_project("cdc-crash");
    land(&lab, "1.json", RUN_1);
    lab.ok(&["pipeline", "run", &project]);
    land(&lab, "2.json", RUN_2);
    for point in ["accounts_cdc:after-write", "latest_cdc:after-commit"] {
        let crashed = lab.reckon(&["--crash-at", point, "pipeline", "run", &project]);
        assert!(!crashed.status.success(), "{point} did not fire");
    }
    lab.ok(&["pipeline", "run", &project]);
    for table in ["accounts", "latest", "kept"] {
        assert_eq!(rows(&lab, table), rows(&clean, table), "{table}");
    }
}
