"""The seed's pipeline on PySpark, the peer Reckon is measured against (issue 5).

Kafka -> bronze_orders (every event) -> orders (newest state, MERGE in foreachBatch) and
hourly_sales (watermark 1 hour, dropDuplicatesWithinWatermark, count and sum per event-time hour),
each stream with trigger(availableNow=True) and limits that make each run one micro-batch, as
Reckon's. Spark's Kafka and Delta connectors come from Maven Central (spark.jars.packages).

    python3 bench/spark/pipeline.py --dir DIR --topic T [--brokers B] run      # the 3 streams
    python3 bench/spark/pipeline.py --dir DIR check                            # check_streams.py
    python3 bench/spark/pipeline.py --dir DIR table hourly_sales               # rows as JSON lines
    python3 bench/spark/pipeline.py --dir DIR --topic T serve                  # one warm session

Every command prints how long each step took, as `timing <step> <seconds>` on stderr. `serve`
keeps one session and answers commands read from stdin, one `PEER <json>` line each:
`run` (the 3 streams then the check, timed), `hourly_sales` (its rows), `quit`.
"""

import argparse
import json
import sys
import time

# pyspark 4.0.1; its Kafka connector at 4.0.0 (the same 4.0 line), the newest of that line whose
# dependencies Maven Central serves here.
KAFKA_CONNECTOR_VERSION = "4.0.0"
DELTA_VERSION = "4.0.0"
PACKAGES = [
    f"org.apache.spark:spark-sql-kafka-0-10_2.13:{KAFKA_CONNECTOR_VERSION}",
    f"io.delta:delta-spark_2.13:{DELTA_VERSION}",
]
# One micro-batch per run, whatever a send holds.
ONE_BATCH = str(2**31 - 1)


def session(name):
    from pyspark.sql import SparkSession

    return (
        SparkSession.builder.appName(name)
        .master("local[2]")
        .config("spark.jars.packages", ",".join(PACKAGES))
        .config("spark.sql.extensions", "io.delta.sql.DeltaSparkSessionExtension")
        .config("spark.sql.catalog.spark_catalog", "org.apache.spark.sql.delta.catalog.DeltaCatalog")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.databricks.delta.snapshotPartitions", "2")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .getOrCreate()
    )


def event_schema():
    from pyspark.sql.types import DecimalType, LongType, StringType, StructField, StructType

    # amount is read as text and cast: SPEC §1 allows a JSON number or a string holding a decimal.
    return StructType(
        [
            StructField("order_id", LongType()),
            StructField("customer_id", StringType()),
            StructField("status", StringType()),
            StructField("amount", StringType()),
            StructField("event_time", StringType()),
        ]
    )


def bronze(spark, args):
    """read_orders.py: Kafka -> bronze_orders, every well-formed event with its partition and offset."""
    from pyspark.sql import functions as F

    raw = (
        spark.readStream.format("kafka")
        .option("kafka.bootstrap.servers", args.brokers)
        .option("subscribe", args.topic)
        .option("startingOffsets", "earliest")
        .option("maxOffsetsPerTrigger", ONE_BATCH)
        .load()
    )
    parsed = raw.select(
        F.from_json(F.col("value").cast("string"), event_schema()).alias("e"),
        "partition",
        "offset",
        F.col("timestamp").alias("kafka_timestamp"),
    )
    events = parsed.select(
        "e.order_id",
        "e.customer_id",
        "e.status",
        F.col("e.amount").cast("decimal(18,2)").alias("amount"),
        F.to_timestamp("e.event_time").alias("event_time"),
        "partition",
        "offset",
        "kafka_timestamp",
        F.current_timestamp().alias("ingested_at"),
    ).where("order_id IS NOT NULL AND event_time IS NOT NULL AND amount IS NOT NULL")
    return finish(
        events.writeStream.format("delta")
        .option("checkpointLocation", f"{args.dir}/checkpoints/bronze_orders")
        .trigger(availableNow=True)
        .start(f"{args.dir}/tables/bronze_orders")
    )


def silver(spark, args):
    """latest_orders.py: bronze_orders -> orders, the newest event per order by MERGE."""
    from delta.tables import DeltaTable
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    target = f"{args.dir}/tables/orders"
    if not DeltaTable.isDeltaTable(spark, target):
        spark.createDataFrame(
            [], "order_id long, customer_id string, status string, amount decimal(18,2), event_time timestamp"
        ).write.format("delta").save(target)

    def merge(batch, _batch_id):
        newest = (
            batch.withColumn(
                "rank",
                F.row_number().over(
                    Window.partitionBy("order_id").orderBy(F.desc("event_time"), "partition", "offset")
                ),
            )
            .where("rank = 1")
            .select("order_id", "customer_id", "status", "amount", "event_time")
        )
        (
            DeltaTable.forPath(spark, target)
            .alias("t")
            .merge(newest.alias("s"), "t.order_id = s.order_id")
            .whenMatchedUpdateAll(condition="s.event_time > t.event_time")
            .whenNotMatchedInsertAll()
            .execute()
        )

    return finish(
        spark.readStream.format("delta")
        .option("maxFilesPerTrigger", ONE_BATCH)
        .load(f"{args.dir}/tables/bronze_orders")
        .writeStream.foreachBatch(merge)
        .option("checkpointLocation", f"{args.dir}/checkpoints/orders")
        .trigger(availableNow=True)
        .start()
    )


def gold(spark, args):
    """hourly_sales.py: bronze_orders -> hourly_sales, SPEC §3's query in append mode."""
    from pyspark.sql import functions as F

    placed = (
        spark.readStream.format("delta")
        .option("maxFilesPerTrigger", ONE_BATCH)
        .load(f"{args.dir}/tables/bronze_orders")
        .where("status = 'placed'")
        .withWatermark("event_time", "1 hour")
    )
    if not args.no_dedup:
        placed = placed.dropDuplicatesWithinWatermark(["order_id", "status"])
    hourly = (
        placed.groupBy(F.window("event_time", "1 hour"))
        .agg(F.count("*").alias("orders"), F.sum("amount").alias("revenue"))
        .select(F.col("window.start").alias("hour"), "orders", "revenue")
    )
    return finish(
        hourly.writeStream.format("delta")
        .outputMode("append")
        .option("checkpointLocation", f"{args.dir}/checkpoints/hourly_sales")
        .trigger(availableNow=True)
        .start(f"{args.dir}/tables/hourly_sales")
    )


def finish(query):
    """Waits for an availableNow query to stop; returns the rows it read."""
    query.awaitTermination()
    return sum(p["numInputRows"] for p in query.recentProgress)


STREAMS = {"bronze": bronze, "silver": silver, "gold": gold}


def orders(n):
    return f"{n} order" if n == 1 else f"{n} orders"


def check(spark, args):
    """check_streams.py from the seed, on the tables' paths. Returns (lines, problems, events)."""
    from pyspark.sql import functions as F

    table = lambda name: spark.read.format("delta").load(f"{args.dir}/tables/{name}")
    bronze = table("bronze_orders")
    lines, problems = [], 0
    events = bronze.count()
    if events == bronze.select("partition", "offset").distinct().count():
        lines.append(f"ok      bronze_orders has {events} events, each offset once")
    else:
        lines.append("PROBLEM bronze_orders has an offset more than once: a stream read it twice")
        problems += 1
    distinct = bronze.dropDuplicates(["order_id", "status", "event_time"])
    repeats = events - distinct.count()
    if repeats:
        lines.append(f"note    {repeats} of them sent twice by the shop's system")
    newest = (
        distinct.groupBy("order_id")
        .agg(F.max_by(F.struct("customer_id", "status", "amount", "event_time"), "event_time").alias("event"))
        .select("order_id", "event.*")
    )
    silver = table("orders")
    if newest.exceptAll(silver).isEmpty() and silver.exceptAll(newest).isEmpty():
        lines.append(f"ok      orders has the newest state of all {silver.count()} orders")
    else:
        lines.append("PROBLEM orders differs from the newest events in bronze")
        problems += 1
    recount = (
        distinct.where("status = 'placed'")
        .groupBy(F.date_trunc("hour", "event_time").alias("hour"))
        .agg(F.count("*").alias("all_orders"), F.sum("amount").alias("all_revenue"))
    )
    for row in recount.join(table("hourly_sales"), "hour", "left").orderBy("hour").collect():
        hour, counted, known = row["hour"].strftime("%H:%M"), row["orders"], row["all_orders"]
        if counted is None:
            lines.append(f"waiting {hour} is not written yet: the watermark has not passed its end")
        elif counted == known:
            lines.append(f"ok      {hour} {orders(counted)}, {row['revenue']}")
        elif counted > known:
            lines.append(
                f"PROBLEM {hour} counted {orders(counted)}, {row['revenue']}, but bronze has {orders(known)}: an event counted twice"
            )
            problems += 1
        else:
            lines.append(
                f"late    {hour} counted {orders(counted)}, {row['revenue']}; bronze has {orders(known)}, {row['all_revenue']}: {known - counted} arrived after the hour was written"
            )
    return lines, problems, events


def timed(name, work):
    started = time.monotonic()
    result = work()
    seconds = time.monotonic() - started
    print(f"timing {name} {seconds:.3f}", file=sys.stderr, flush=True)
    return seconds, result


def hourly_rows(spark, args):
    rows = spark.read.format("delta").load(f"{args.dir}/tables/hourly_sales").orderBy("hour").collect()
    return [
        {"hour": r["hour"].strftime("%Y-%m-%dT%H:%M:%SZ"), "orders": r["orders"], "revenue": f"{r['revenue']:.2f}"}
        for r in rows
    ]


def serve(spark, args):
    """One warm session: answers `run`, `hourly_sales` and `quit` from stdin."""

    def answer(value):
        print("PEER " + json.dumps(value), flush=True)

    answer({"ready": True})
    for line in sys.stdin:
        command = line.strip()
        try:
            if command == "run":
                out = {}
                for name, work in STREAMS.items():
                    out[name], rows = timed(name, lambda: work(spark, args))
                    if name == "bronze":
                        out["events"] = rows
                out["check"], (lines, problems, events) = timed("check", lambda: check(spark, args))
                out.update(checked=events, problems=problems, lines=lines)
                answer(out)
            elif command == "hourly_sales":
                answer({"rows": hourly_rows(spark, args)})
            elif command == "quit":
                return
            else:
                answer({"error": f"unknown command {command!r}"})
        except Exception as e:  # the driver reports it and stops the benchmark
            answer({"error": str(e)[:2000]})


def table(spark, args):
    """A table's rows sorted by its key, as `reckon table NAME --json` prints them."""
    key = {"bronze_orders": ["partition", "offset"], "orders": ["order_id"], "hourly_sales": ["hour"]}[args.name]
    rows = spark.read.format("delta").load(f"{args.dir}/tables/{args.name}").orderBy(*key).collect()
    for row in rows:
        out = {}
        for k, v in row.asDict().items():
            if hasattr(v, "strftime"):
                v = v.strftime("%Y-%m-%dT%H:%M:%SZ")
            elif v.__class__.__name__ == "Decimal":
                v = f"{v:.2f}"
            out[k] = v
        print(json.dumps(out, sort_keys=True))


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dir", required=True, help="tables and checkpoints go here")
    parser.add_argument("--brokers", default="127.0.0.1:9092")
    parser.add_argument("--topic", default="orders")
    parser.add_argument("--no-dedup", action="store_true")
    commands = parser.add_subparsers(dest="command", required=True)
    run = commands.add_parser("run", help="the streams in order, one micro-batch each")
    run.add_argument("streams", nargs="*", default=list(STREAMS), help="bronze, silver, gold (default: all)")
    commands.add_parser("check", help="check_streams.py: the tables against bronze; exit 1 on a problem")
    commands.add_parser("serve", help="one warm session answering commands on stdin")
    show = commands.add_parser("table", help="print a table as JSON lines")
    show.add_argument("name", choices=["bronze_orders", "orders", "hourly_sales"])
    args = parser.parse_args()
    unknown = [s for s in getattr(args, "streams", []) if s not in STREAMS]
    if unknown:
        parser.error(f"streams: {', '.join(unknown)} not one of {', '.join(STREAMS)}")

    started = time.monotonic()
    spark = session("reckon-peer")
    spark.sparkContext.setLogLevel("ERROR")
    print(f"timing session {time.monotonic() - started:.3f}", file=sys.stderr, flush=True)
    status = 0
    if args.command == "run":
        for name in args.streams:
            timed(name, lambda: STREAMS[name](spark, args))
    elif args.command == "check":
        _, (lines, problems, _) = timed("check", lambda: check(spark, args))
        print("\n".join(lines))
        status = 1 if problems else 0
    elif args.command == "serve":
        serve(spark, args)
    else:
        table(spark, args)
    spark.stop()
    sys.exit(status)


if __name__ == "__main__":
    main()
