//! Week 14's guided lab in the course's own Python (seed 002, section 2, step 2), as printed:
//! `reckon pipeline example support --python DIR`. It reads Parquet from the volume's root
//! (`/Volumes/workspace/support/landing/`, the lab's `landing/`), where `reckon pipeline land
//! support --format parquet` puts the tickets (under `tickets/`; the accounts' JSON files beside
//! them are not Parquet, so a Parquet reader leaves them).

use std::path::Path;

use super::ExampleError;

/// The guided lab's pipeline, as the course prints it.
pub const PYTHON: &str = r#"from pyspark import pipelines as dp     # older workspaces: import dlt as dp
from pyspark.sql import functions as F

@dp.table(comment="Raw tickets as landed")
def bronze_tickets():
    return (spark.readStream.format("cloudFiles")
            .option("cloudFiles.format", "parquet")
            .load("/Volumes/workspace/support/landing/"))

@dp.table(comment="Cleaned, deduplicated tickets")
@dp.expect_or_drop("valid_status", "status IN ('open','pending','resolved','escalated','closed')")
@dp.expect("non_negative_response", "first_response_s >= 0")
def silver_tickets():
    return (spark.readStream.table("bronze_tickets")
            .dropDuplicates(["ticket_id"])
            .withColumn("ticket_date", F.to_date("created_at")))

@dp.materialized_view(comment="Daily status counts by account")
def gold_daily_account_status():
    return (spark.read.table("silver_tickets")
            .groupBy("ticket_date", "account_id", "status").count())
"#;

/// The challenge in the same Python: accounts as a second source, their plan history kept by
/// `create_auto_cdc_flow` (SCD type 2).
pub const CHALLENGE: &str = r#"
# The challenge: accounts as a second source, their plan history kept by AUTO CDC (SCD type 2).
@dp.table(comment="Account changes as landed")
def accounts_bronze():
    return (spark.readStream.format("cloudFiles")
            .option("cloudFiles.format", "json")
            .schema("account_id STRING, plan STRING, seats BIGINT, updated_at TIMESTAMP, op STRING")
            .load("/Volumes/workspace/support/landing/accounts/"))

dp.create_streaming_table("accounts", comment="The plan history of each account (SCD type 2)")

dp.create_auto_cdc_flow(
    target="accounts",
    source="accounts_bronze",
    keys=["account_id"],
    sequence_by=F.col("updated_at"),
    apply_as_deletes=F.expr("op = 'DELETE'"),
    except_column_list=["op", "_rescued_data"],
    stored_as_scd_type=2,
    track_history_column_list=["plan"],
)
"#;

/// The challenge's gold view joins tickets to the plan each account had at the time: a join,
/// which Reckon reads in SQL (Spark mixes the two in one project too).
pub const ESCALATION_SQL: &str =
    "-- The challenge's gold view, in SQL beside the Python: per plan at the time of the ticket.
CREATE OR REFRESH MATERIALIZED VIEW gold_escalation_rate_by_plan
COMMENT 'Per plan at the time of the ticket: tickets and the share escalated'
AS SELECT coalesce(a.plan, 'none') AS plan, count(*) AS tickets,
          count_if(t.status = 'escalated') AS escalated,
          round(avg(CASE WHEN t.status = 'escalated' THEN 1.0 ELSE 0.0 END), 4) AS escalation_rate
   FROM silver_tickets t
   LEFT JOIN accounts a
     ON t.account_id = a.account_id
    AND a.__START_AT <= to_timestamp(t.created_at)
    AND (a.__END_AT IS NULL OR to_timestamp(t.created_at) < a.__END_AT)
   GROUP BY coalesce(a.plan, 'none');
";

/// Writes `spark-pipeline.yml`, `transformations/support.py` (the guided lab as printed, then
/// the challenge) and `transformations/escalation.sql` into `dir`.
pub fn write_project(dir: &Path) -> Result<(), ExampleError> {
    super::write_code(dir, "support.py", &format!("{PYTHON}{CHALLENGE}"))?;
    super::write_code(dir, "escalation.sql", ESCALATION_SQL)
}

/// Module 9 in the same Python (seed 000): bronze keeps each message's text as `raw` and its
/// fields from `from_json`; `hourly_sales` is `hourly_sales.py`'s query: a 1-hour watermark,
/// duplicates dropped within it, placed orders counted by the hour. Reads `topic` (the
/// learner's name for it; a lab maps it to its own).
pub fn shop(topic: &str) -> String {
    format!(
        r#"from pyspark import pipelines as dp
from pyspark.sql import functions as F

ORDER = "order_id BIGINT, customer_id STRING, status STRING, amount DECIMAL(10,2), event_time TIMESTAMP"

@dp.table(comment="Every message of the topic, its text kept as raw and its fields read from it")
def bronze_orders():
    return (spark.readStream.format("kafka")
            .option("subscribe", "{topic}")
            .option("startingOffsets", "earliest")
            .load()
            .select(F.col("value").cast("string").alias("raw"),
                    F.from_json(F.col("value").cast("string"), ORDER).alias("e"),
                    "partition", "offset", F.col("timestamp").alias("kafka_timestamp"))
            .select("e.*", "raw", "partition", "offset", "kafka_timestamp"))

@dp.table(comment="Placed orders and revenue per hour, each hour written once")
def hourly_sales():
    return (spark.readStream.table("bronze_orders")
            .withWatermark("event_time", "1 hour")
            # The shop's system can send an event twice. Count it once, remembering each event as long as the watermark allows.
            .dropDuplicatesWithinWatermark(["order_id", "status"])
            .where("status = 'placed'")
            .groupBy(F.window("event_time", "1 hour"))
            .agg(F.count("*").alias("orders"), F.sum("amount").alias("revenue"))
            .select(F.col("window.start").alias("hour"), "orders", "revenue"))
"#
    )
}

/// Writes module 9 in Python into `dir`, reading `topic`.
pub fn write_shop(dir: &Path, topic: &str) -> Result<(), ExampleError> {
    super::write_code(dir, "shop.py", &shop(topic))
}
