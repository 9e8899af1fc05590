//! Week 14's support lab (seed 002): the seed's pipeline written in SQL, and its daily ticket
//! files, the same on every machine. Day 1 is 2026-10-01; a day has a few hundred tickets, a few
//! of them sent again the next day; the bad-rows file holds what the lab asks "where did they go?".
//! Account changes (`accounts.rs`) land beside the tickets for the AUTO CDC challenge.

pub mod accounts;
pub mod python;
pub mod shop;

use std::path::Path;
use std::sync::Arc;

use arrow::array::{ArrayRef, Int64Array, RecordBatch, StringArray};
use arrow::datatypes::{DataType, Field, Schema};
use chrono::{Duration, NaiveDate};
use deltalake::parquet::arrow::ArrowWriter;
use serde_json::json;

use super::files::write_whole;
use super::sql::Format;
use crate::engine::rng::Rng;

/// Days the example lands, at most.
pub const DAYS: u32 = 35;
const STATUSES: [&str; 5] = ["open", "pending", "resolved", "escalated", "closed"];

#[derive(Debug, thiserror::Error)]
#[error("{path}: {detail}")]
pub struct ExampleError {
    pub path: String,
    pub detail: String,
}

fn failed(path: &Path, detail: impl ToString) -> ExampleError {
    ExampleError {
        path: path.display().to_string(),
        detail: detail.to_string(),
    }
}

/// Days `A-B` (or one day `A`) within 1-[`DAYS`], as typed; the error says what is accepted.
pub fn days(text: &str) -> Result<(u32, u32), String> {
    let (a, b) = text.split_once('-').unwrap_or((text, text));
    let parse = |t: &str| {
        t.trim()
            .parse::<u32>()
            .ok()
            .filter(|d| (1..=DAYS).contains(d))
    };
    match (parse(a), parse(b)) {
        (Some(a), Some(b)) if a <= b => Ok((a, b)),
        _ => Err(format!("A-B within 1-{DAYS}, not {text:?}")),
    }
}

/// The project: `spark-pipeline.yml` and `transformations/support.sql`, reading `format`.
pub fn write_project(dir: &Path, format: Format) -> Result<(), ExampleError> {
    write_sql(dir, &sql(format, true))
}

/// The project's SQL: the guided lab's tickets, and with `accounts` the challenge's accounts.
pub fn sql(format: Format, accounts: bool) -> String {
    let format = match format {
        Format::Json => "json",
        Format::Csv => "csv",
        Format::Parquet => "parquet",
    };
    let sql = format!(
        "-- Week 14's support pipeline (seed 002), in SQL: bronze loads only new files, silver\n\
         -- drops duplicates and bad rows, gold counts tickets per day, account and status.\n\n\
         CREATE OR REFRESH STREAMING TABLE bronze_tickets\n\
         COMMENT 'Raw tickets as landed, each with the file and line it came from'\n\
         AS SELECT *, _metadata.file_path AS source_file, _metadata.line_number AS source_line\n\
         FROM STREAM read_files('landing/tickets', format => '{format}');\n\n\
         CREATE OR REFRESH STREAMING TABLE silver_tickets (\n  \
           CONSTRAINT valid_status EXPECT (status IN ('open', 'pending', 'resolved', 'escalated', 'closed')) ON VIOLATION DROP ROW,\n  \
           CONSTRAINT non_negative_response EXPECT (first_response_s >= 0)\n\
         )\n\
         COMMENT 'Cleaned, deduplicated tickets'\n\
         TBLPROPERTIES ('reckon.dropDuplicates' = 'ticket_id')\n\
         AS SELECT *, to_date(created_at) AS ticket_date FROM STREAM(bronze_tickets);\n\n\
         CREATE OR REFRESH MATERIALIZED VIEW gold_daily_account_status\n\
         COMMENT 'Daily status counts by account'\n\
         AS SELECT ticket_date, account_id, status, count(*) AS count\n   \
            FROM silver_tickets GROUP BY ticket_date, account_id, status;\n"
    );
    if !accounts {
        return sql;
    }
    sql + "\n\
         -- The challenge: accounts as a second source, their plan history kept by AUTO CDC\n\
         -- (SCD type 2), and the escalation rate by the plan each account had at the ticket.\n\n\
         CREATE OR REFRESH STREAMING TABLE accounts_bronze\n\
         COMMENT 'Account changes as landed'\n\
         AS SELECT *, _metadata.file_path AS source_file, _metadata.line_number AS source_line\n   \
            FROM STREAM read_files('landing/accounts', format => 'json',\n    \
            schema => 'account_id STRING, plan STRING, seats BIGINT, updated_at TIMESTAMP, op STRING');\n\n\
         CREATE OR REFRESH STREAMING TABLE accounts\n\
         COMMENT 'The plan history of each account (SCD type 2)';\n\n\
         CREATE FLOW accounts_cdc AS AUTO CDC INTO accounts\n\
         FROM STREAM(accounts_bronze)\n\
         KEYS (account_id)\n\
         APPLY AS DELETE WHEN op = 'DELETE'\n\
         SEQUENCE BY updated_at\n\
         COLUMNS * EXCEPT (op, _rescued_data, source_file, source_line)\n\
         STORED AS SCD TYPE 2\n\
         TRACK HISTORY ON plan;\n\n\
         CREATE OR REFRESH MATERIALIZED VIEW gold_escalation_rate_by_plan\n\
         COMMENT 'Per plan at the time of the ticket: tickets and the share escalated'\n\
         AS SELECT coalesce(a.plan, 'none') AS plan, count(*) AS tickets,\n          \
            count_if(t.status = 'escalated') AS escalated,\n          \
            round(avg(CASE WHEN t.status = 'escalated' THEN 1.0 ELSE 0.0 END), 4) AS escalation_rate\n   \
            FROM silver_tickets t\n   \
            LEFT JOIN accounts a\n     \
              ON t.account_id = a.account_id\n    \
             AND a.__START_AT <= to_timestamp(t.created_at)\n    \
             AND (a.__END_AT IS NULL OR to_timestamp(t.created_at) < a.__END_AT)\n   \
            GROUP BY coalesce(a.plan, 'none');\n"
}

/// Writes a project named `support` whose one SQL file holds `sql`.
pub fn write_sql(dir: &Path, sql: &str) -> Result<(), ExampleError> {
    write_code(dir, "support.sql", sql)
}

/// Writes `spark-pipeline.yml` (every file under `transformations/`) and `transformations/FILE`.
pub fn write_code(dir: &Path, file: &str, text: &str) -> Result<(), ExampleError> {
    let yml = "name: support\nlibraries:\n  - glob:\n      include: transformations/**\n";
    let code = dir.join("transformations");
    std::fs::create_dir_all(&code).map_err(|e| failed(&code, e))?;
    std::fs::write(dir.join("spark-pipeline.yml"), yml).map_err(|e| failed(dir, e))?;
    std::fs::write(code.join(file), text).map_err(|e| failed(&code, e))?;
    Ok(())
}

/// One ticket of the example.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ticket {
    pub ticket_id: i64,
    pub account_id: String,
    pub created_at: String,
    pub status: String,
    pub first_response_s: i64,
}

/// The date of day `day` (1-based).
pub fn date(day: u32) -> NaiveDate {
    NaiveDate::from_ymd_opt(2026, 10, 1).expect("a date") + Duration::days(i64::from(day) - 1)
}

/// Tickets a day on average unless told otherwise.
pub const TICKETS_PER_DAY: u32 = 300;

/// Every day's tickets, days 1 to [`DAYS`], about `per_day` a day: the same on every call.
/// Ticket ids stay below the bad rows' 9,000,001 up to about 250,000 a day.
pub fn tickets(per_day: u32) -> Vec<Vec<Ticket>> {
    let base = u64::from(per_day.max(3)) * 2 / 3;
    let mut rng = Rng(0x5eed_0014);
    let mut next_id = 100_000;
    let mut days: Vec<Vec<Ticket>> = vec![];
    for day in 1..=DAYS {
        let count = base + rng.below(base);
        let mut today = vec![];
        // A few of yesterday's tickets are sent again, unchanged.
        if let Some(yesterday) = days.last() {
            for _ in 0..(count / 50) {
                today.push(yesterday[rng.below(yesterday.len() as u64) as usize].clone());
            }
        }
        for _ in 0..count {
            let seconds = rng.below(86_400) as i64;
            let at = date(day).and_hms_opt(0, 0, 0).expect("midnight") + Duration::seconds(seconds);
            today.push(Ticket {
                ticket_id: next_id,
                account_id: format!("acc-{:03}", 1 + rng.below(40)),
                created_at: at.format("%Y-%m-%dT%H:%M:%SZ").to_string(),
                status: STATUSES[rng.below(5) as usize].into(),
                first_response_s: 30 + rng.below(7_200) as i64,
            });
            next_id += 1;
        }
        days.push(today);
    }
    days
}

fn ticket_json(t: &Ticket) -> String {
    json!({
        "ticket_id": t.ticket_id, "account_id": t.account_id, "created_at": t.created_at,
        "status": t.status, "first_response_s": t.first_response_s,
    })
    .to_string()
}

/// The lines of the bad-rows file, on ticket ids never landed before.
pub fn bad_rows() -> Vec<String> {
    vec![
        r#"{"ticket_id": 9000001, "account_id": "acc-001", "created_at": "2026-11-04T10:00:00Z", "status": "open", "first_response_s": -30}"#.into(),
        r#"{"ticket_id": 9000002, "account_id": "acc-002", "created_at": "2026-11-04T10:05:00Z", "status": "lost", "first_response_s": 60}"#.into(),
        r#"{"ticket_id": 9000003, "account_id": "acc-003", "created_at": "2026-11-04T10:10:00Z", "status": "closed", "first_response_s": -5}"#.into(),
        r#"{"ticket_id": 9000004, "account_id": "acc-004", "created_at": "2026-11-04T10:15:00Z", "status": "resolved", "first_response_s": "fast"}"#.into(),
        "ticket 9000005 was closed by phone".into(),
    ]
}

/// Lands days `first..=last` in `<data>/landing/tickets/` and `<data>/landing/accounts/` (and,
/// with `bad`, the bad-rows file of tickets).
/// Returns the files written.
pub fn land(
    data_dir: &Path,
    days: (u32, u32),
    bad: bool,
    format: Format,
    per_day: u32,
) -> Result<Vec<String>, ExampleError> {
    let dir = data_dir.join("landing").join("tickets");
    std::fs::create_dir_all(&dir).map_err(|e| failed(&dir, e))?;
    let all = tickets(per_day);
    let mut written = vec![];
    let extension = match format {
        Format::Parquet => "parquet",
        _ => "json",
    };
    for day in days.0..=days.1.min(DAYS) {
        let path = dir.join(format!("{}.{extension}", date(day)));
        let rows = &all[(day - 1) as usize];
        match format {
            Format::Parquet => write_parquet(&path, rows)?,
            _ => {
                let text: String = rows.iter().map(|t| ticket_json(t) + "\n").collect();
                write_whole(&path, text.as_bytes()).map_err(|e| failed(&path, e))?;
            }
        }
        written.push(path.display().to_string());
    }
    let changes = accounts::changes();
    let accounts_dir = data_dir.join("landing").join("accounts");
    for day in days.0..=days.1.min(DAYS) {
        std::fs::create_dir_all(&accounts_dir).map_err(|e| failed(&accounts_dir, e))?;
        let path = accounts_dir.join(format!("{}.json", date(day)));
        let text: String = changes[(day - 1) as usize]
            .iter()
            .map(|c| c.json() + "\n")
            .collect();
        write_whole(&path, text.as_bytes()).map_err(|e| failed(&path, e))?;
        written.push(path.display().to_string());
    }
    if bad {
        let path = dir.join(format!("bad-rows.{extension}"));
        match format {
            // Parquet holds typed records only: the rows with a negative time or an unknown
            // status; a line that is not a record, or a text where a number goes, needs JSON.
            Format::Parquet => {
                let rows: Vec<Ticket> = bad_rows().iter().filter_map(|l| ticket(l)).collect();
                write_parquet(&path, &rows)?;
            }
            _ => {
                let text: String = bad_rows().iter().map(|l| format!("{l}\n")).collect();
                write_whole(&path, text.as_bytes()).map_err(|e| failed(&path, e))?;
            }
        }
        written.push(path.display().to_string());
    }
    Ok(written)
}

/// A bad row as a ticket, when every field has its type.
fn ticket(line: &str) -> Option<Ticket> {
    let v: serde_json::Value = serde_json::from_str(line).ok()?;
    Some(Ticket {
        ticket_id: v["ticket_id"].as_i64()?,
        account_id: v["account_id"].as_str()?.into(),
        created_at: v["created_at"].as_str()?.into(),
        status: v["status"].as_str()?.into(),
        first_response_s: v["first_response_s"].as_i64()?,
    })
}

fn write_parquet(path: &Path, rows: &[Ticket]) -> Result<(), ExampleError> {
    let text = |name| Field::new(name, DataType::Utf8, false);
    let number = |name| Field::new(name, DataType::Int64, false);
    let schema = Arc::new(Schema::new(vec![
        number("ticket_id"),
        text("account_id"),
        text("created_at"),
        text("status"),
        number("first_response_s"),
    ]));
    let columns: Vec<ArrayRef> = vec![
        Arc::new(Int64Array::from_iter_values(
            rows.iter().map(|t| t.ticket_id),
        )),
        Arc::new(StringArray::from_iter_values(
            rows.iter().map(|t| t.account_id.as_str()),
        )),
        Arc::new(StringArray::from_iter_values(
            rows.iter().map(|t| t.created_at.as_str()),
        )),
        Arc::new(StringArray::from_iter_values(
            rows.iter().map(|t| t.status.as_str()),
        )),
        Arc::new(Int64Array::from_iter_values(
            rows.iter().map(|t| t.first_response_s),
        )),
    ];
    let batch = RecordBatch::try_new(schema.clone(), columns).map_err(|e| failed(path, e))?;
    let file = std::fs::File::create(path).map_err(|e| failed(path, e))?;
    let mut writer = ArrowWriter::try_new(file, schema, None).map_err(|e| failed(path, e))?;
    writer.write(&batch).map_err(|e| failed(path, e))?;
    writer.close().map_err(|e| failed(path, e))?;
    Ok(())
}
