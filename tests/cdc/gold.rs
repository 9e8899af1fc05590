//! The escalation rate by plan at the time of the ticket, against a recount from the raw files.

use super::*;

/// The plan of `account` at `time` looked up in the raw change lines: the change with the
/// greatest `updated_at` at or before `time` (on a tie the delete, else the line read last).
fn plan_at(changes: &[Value], account: &str, time: &str) -> Option<String> {
    let mut best: Option<&Value> = None;
    for c in changes
        .iter()
        .filter(|c| c["account_id"] == account && c["updated_at"].as_str().unwrap() <= time)
    {
        let newer = |b: &Value| c["updated_at"].as_str() > b["updated_at"].as_str();
        let tie = |b: &Value| c["updated_at"] == b["updated_at"];
        best = match best {
            None => Some(c),
            Some(b) if newer(b) => Some(c),
            Some(b) if tie(b) && b["op"] != "DELETE" => Some(c),
            Some(b) => Some(b),
        };
    }
    best.filter(|c| c["op"] != "DELETE")
        .map(|c| c["plan"].as_str().unwrap().to_string())
}

fn lines(dir: &std::path::Path) -> Vec<Value> {
    let mut files: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    files.sort();
    files
        .iter()
        .flat_map(|f| {
            std::fs::read_to_string(f)
                .unwrap()
                .lines()
                .map(|l| serde_json::from_str(l).unwrap_or(Value::Null))
                .collect::<Vec<_>>()
        })
        .collect()
}

#[test]
fn the_escalation_rate_by_plan_equals_a_recount_from_the_raw_files() {
    let lab = TestLab::new("cdc-support");
    let project = lab.data().join("project");
    let project = project.to_str().unwrap();
    lab.ok(&["pipeline", "example", "support", project]);
    lab.ok(&["pipeline", "land", "support", "--days", "1-30"]);
    lab.ok(&["pipeline", "run", project]);
    lab.ok(&[
        "pipeline",
        "land",
        "support",
        "--days",
        "31-35",
        "--bad-rows",
    ]);
    lab.ok(&["pipeline", "run", project]);

    let changes = lines(&lab.data().join("landing/accounts"));
    let mut seen = std::collections::BTreeSet::new();
    let mut expected: BTreeMap<String, (i64, i64)> = BTreeMap::new();
    for t in lines(&lab.data().join("landing/tickets")) {
        if t.is_null() || !seen.insert(t["ticket_id"].to_string()) {
            continue;
        }
        let status = t["status"].as_str().unwrap_or("");
        if !["open", "pending", "resolved", "escalated", "closed"].contains(&status) {
            continue;
        }
        let account = t["account_id"].as_str().unwrap();
        let plan = plan_at(&changes, account, t["created_at"].as_str().unwrap())
            .unwrap_or_else(|| "none".into());
        let entry = expected.entry(plan).or_default();
        entry.0 += 1;
        entry.1 += i64::from(status == "escalated");
    }
    assert!(
        expected.contains_key("none"),
        "acc-007's deleted days have no plan"
    );
    let view: BTreeMap<String, (i64, i64)> = lab
        .table("gold_escalation_rate_by_plan")
        .iter()
        .map(|r| {
            (
                r["plan"].as_str().unwrap().to_string(),
                (
                    r["tickets"].as_i64().unwrap(),
                    r["escalated"].as_i64().unwrap(),
                ),
            )
        })
        .collect();
    assert_eq!(view, expected);
    common::same_rows_in_python(&lab, "accounts");

    // acc-007: deleted on day 10, back on day 14; each event named by its file and line.
    let history: Value =
        serde_json::from_str(&lab.ok(&["pipeline", "history", "accounts", "acc-007", "--json"]))
            .unwrap();
    let events: Vec<&Value> = history["versions"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|v| v["events"].as_array().unwrap())
        .collect();
    let delete = events
        .iter()
        .find(|e| e["op"] == "DELETE")
        .expect("the delete");
    assert!(
        delete["source"]
            .as_str()
            .unwrap()
            .starts_with("landing/accounts/2026-10-10.json:"),
        "{delete}"
    );
    let comeback = history["versions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|v| v["start"].as_str() == Some("2026-10-14T09:00:00Z"))
        .expect("a version from the comeback");
    assert_eq!(
        comeback["values"][1],
        serde_json::json!(["plan", "free"]),
        "{comeback}"
    );
}
