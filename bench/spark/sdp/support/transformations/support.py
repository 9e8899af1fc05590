"""Week 14's support pipeline (Reckon's `pipeline example support`) as Spark Declarative Pipelines.

Reckon's SQL                                   here
bronze_tickets: STREAM read_files(json)        readStream json, explicit schema (OSS: no read_files)
silver_tickets: STREAM(bronze_tickets),        the landed files again (see below), dropDuplicates
  dropDuplicates ticket_id, DROP ROW rule        on ticket_id, the DROP ROW rule as a filter
gold_daily_account_status (materialized view)  materialized view over silver_tickets

silver reads the landing folder itself, not bronze_tickets: Spark Connect plans dropDuplicates by
analysing its input at definition time, before the pipeline has created bronze_tickets, and fails
with TABLE_OR_VIEW_NOT_FOUND (README.md). Both streams keep their own checkpoint, so each run reads
only the files that landed since the last one; silver's rows are the same as if read from bronze.
"""

import os

from pyspark import pipelines as dp
from pyspark.sql.functions import col, count, to_date

# The fields of `reckon pipeline land support`'s JSON lines.
SCHEMA = "ticket_id BIGINT, account_id STRING, created_at STRING, status STRING, first_response_s BIGINT"
STATUSES = ["open", "pending", "resolved", "escalated", "closed"]


def landed():
    # spark is set by spark-pipelines in each definitions file; the folder comes from run.sh.
    return spark.readStream.format("json").schema(SCHEMA).load(os.environ["RECKON_SDP_LANDING"])  # noqa: F821


@dp.table(comment="Raw tickets as landed")
def bronze_tickets():
    return landed()


@dp.table(comment="Cleaned, deduplicated tickets")
def silver_tickets():
    # As Reckon: the first row per ticket_id ever (the key is remembered even when the row is then
    # dropped by a rule), then valid_status (ON VIOLATION DROP ROW) as a filter. The other rule,
    # non_negative_response, only warns in Reckon: no row effect, so nothing here (OSS Spark has
    # no expectations to count it).
    return (
        landed()
        .dropDuplicates(["ticket_id"])
        .where(col("status").isin(STATUSES))
        .withColumn("ticket_date", to_date("created_at"))
    )


@dp.materialized_view(comment="Daily status counts by account")
def gold_daily_account_status():
    return (
        spark.read.table("silver_tickets")  # noqa: F821
        .groupBy("ticket_date", "account_id", "status")
        .agg(count("*").alias("count"))
    )
