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

/// Writes `spark-pipeline.yml` and `transformations/support.py` into `dir`.
pub fn write_project(dir: &Path) -> Result<(), ExampleError> {
    super::write_code(dir, "support.py", PYTHON)
}
