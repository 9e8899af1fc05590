//! Module 9 written by the learner (seed 000, PIPELINES §8): the shop's pipeline as a project.
//! Bronze reads the topic and keeps each message's text as `raw` (a malformed message loses
//! nothing), silver keeps each order's newest state by AUTO CDC (SCD type 1), and gold counts
//! placed orders by the hour with the seed's watermark and duplicates dropped within it.

use std::path::Path;

use super::{ExampleError, failed};

/// The shop project's SQL, reading `topic` (the learner's name for it; a lab maps it to its own).
pub fn sql(topic: &str) -> String {
    format!(
        "-- Module 9's shop pipeline (seed 000), in SQL: Kafka -> bronze -> silver -> gold, exactly once.\n\n\
         CREATE OR REFRESH STREAMING TABLE bronze_orders\n\
         COMMENT 'Every message of the topic, its text kept as raw and its fields read from it'\n\
         AS SELECT e.*, raw, partition, offset, timestamp AS kafka_timestamp\n\
         FROM (SELECT CAST(value AS STRING) AS raw,\n             \
                from_json(CAST(value AS STRING),\n               \
                  'order_id BIGINT, customer_id STRING, status STRING, amount DECIMAL(10,2), event_time TIMESTAMP') AS e,\n             \
                partition, offset, timestamp\n      \
               FROM STREAM read_kafka(subscribe => '{topic}', startingOffsets => 'earliest'));\n\n\
         CREATE OR REFRESH STREAMING TABLE orders\n\
         COMMENT 'Each order as its newest event says (SCD type 1)';\n\n\
         CREATE FLOW orders_cdc AS AUTO CDC INTO orders\n\
         FROM STREAM(bronze_orders)\n\
         KEYS (order_id)\n\
         SEQUENCE BY event_time\n\
         COLUMNS order_id, customer_id, status, amount, event_time\n\
         STORED AS SCD TYPE 1;\n\n\
         CREATE OR REFRESH STREAMING TABLE hourly_sales\n\
         COMMENT 'Placed orders and revenue by the hour, written once the watermark passes the hour'\n\
         TBLPROPERTIES ('reckon.dropDuplicatesWithinWatermark' = 'order_id, status')\n\
         AS SELECT window(event_time, '1 hour').start AS hour, count(*) AS orders, sum(amount) AS revenue\n\
         FROM STREAM bronze_orders WATERMARK event_time DELAY OF INTERVAL 1 HOUR\n\
         WHERE status = 'placed'\n\
         GROUP BY window(event_time, '1 hour');\n"
    )
}

/// Writes the project into `dir`: `spark-pipeline.yml` and `transformations/shop.sql`.
pub fn write_project(dir: &Path, topic: &str) -> Result<(), ExampleError> {
    let yml = "name: shop\nlibraries:\n  - glob:\n      include: transformations/**\n";
    let code = dir.join("transformations");
    std::fs::create_dir_all(&code).map_err(|e| failed(&code, e))?;
    std::fs::write(dir.join("spark-pipeline.yml"), yml).map_err(|e| failed(dir, e))?;
    std::fs::write(code.join("shop.sql"), sql(topic)).map_err(|e| failed(&code, e))?;
    Ok(())
}
