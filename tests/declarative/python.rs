//! The course's Python, read and never run (issue "The course's Python runs as written"): the
//! guided lab's code as printed (`reckon pipeline example support --python`) and the challenge
//! (`create_auto_cdc_flow`) load the same tickets and accounts as the SQL example, in any
//! batching of the days, and its tables hold the same rows;
//! Python beside SQL in one project; code outside the subset refused at its file, line and
//! column, saying what is supported; a deep expression refused before any walk of it.

use super::*;

/// A table's rows on `columns`, sorted.
fn rows(lab: &TestLab, table: &str, columns: &[&str]) -> Vec<String> {
    let mut out: Vec<String> = lab
        .table(table)
        .iter()
        .map(|r| {
            columns
                .iter()
                .map(|c| r[*c].to_string())
                .collect::<Vec<_>>()
                .join("|")
        })
        .collect();
    out.sort();
    out
}

#[test]
fn the_guided_labs_python_as_printed_loads_what_the_sql_example_loads_in_any_batching() {
    let (python, sql) = (TestLab::new("python-support"), TestLab::new("python-sql"));
    let py_dir = python.data().join("support");
    python.ok(&[
        "pipeline",
        "example",
        "support",
        "--python",
        py_dir.to_str().unwrap(),
    ]);
    let text = std::fs::read_to_string(py_dir.join("transformations/support.py")).unwrap();
    assert!(
        text.contains(".load(\"/Volumes/workspace/support/landing/\"))"),
        "{text}"
    );
    let sql_dir = sql.data().join("support");
    sql.ok(&[
        "pipeline",
        "example",
        "support",
        "--format",
        "parquet",
        sql_dir.to_str().unwrap(),
    ]);
    // The Python lab in one batch a day, the SQL lab in two runs.
    for days in ["1-1", "2-2", "3-3", "4-4"] {
        python.ok(&[
            "pipeline", "land", "support", "--format", "parquet", "--days", days,
        ]);
        python.ok(&["pipeline", "run", py_dir.to_str().unwrap()]);
    }
    for days in ["1-2", "3-4"] {
        sql.ok(&[
            "pipeline", "land", "support", "--format", "parquet", "--days", days,
        ]);
        sql.ok(&["pipeline", "run", sql_dir.to_str().unwrap()]);
    }
    let ticket = [
        "ticket_id",
        "account_id",
        "created_at",
        "status",
        "first_response_s",
        "ticket_date",
    ];
    let silver = rows(&python, "silver_tickets", &ticket);
    assert!(silver.len() > 1000, "{}", silver.len());
    assert_eq!(silver, rows(&sql, "silver_tickets", &ticket));
    let gold = ["ticket_date", "account_id", "status", "count"];
    assert_eq!(
        rows(&python, "gold_daily_account_status", &gold),
        rows(&sql, "gold_daily_account_status", &gold)
    );
    // The challenge: accounts' history by create_auto_cdc_flow, the escalation view in SQL.
    let account = [
        "account_id",
        "plan",
        "seats",
        "updated_at",
        "__START_AT",
        "__END_AT",
    ];
    let accounts = rows(&python, "accounts", &account);
    assert!(!accounts.is_empty());
    assert_eq!(accounts, rows(&sql, "accounts", &account));
    let rate = ["plan", "tickets", "escalated", "escalation_rate"];
    assert_eq!(
        rows(&python, "gold_escalation_rate_by_plan", &rate),
        rows(&sql, "gold_escalation_rate_by_plan", &rate)
    );
    // The second run read only the new day's file.
    let second = events(&python, "2");
    let bronze = event(&second, "bronze_tickets");
    assert_eq!(bronze["files"].as_array().unwrap().len(), 1, "{bronze}");
    let out = python.reckon(&["pipeline", "check", py_dir.to_str().unwrap()]);
    assert!(out.status.success(), "{}", stdout(&out));

    // The bad rows, landed as Parquet in both labs: the same rules counted, the same rows
    // quarantined under the same rules.
    for (lab, dir, run) in [(&python, &py_dir, "5"), (&sql, &sql_dir, "3")] {
        lab.ok(&[
            "pipeline",
            "land",
            "support",
            "--format",
            "parquet",
            "--bad-rows",
        ]);
        lab.ok(&["pipeline", "run", dir.to_str().unwrap()]);
        assert!(!events(lab, run).is_empty(), "run {run} of {}", lab.topic);
    }
    let rules = |lab: &TestLab, run: &str| {
        let all = events(lab, run);
        let silver = event(&all, "silver_tickets");
        let counted: Vec<String> = silver["expectations"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| format!("{} {} {}", r["name"], r["passed"], r["failed"]))
            .collect();
        (counted, silver["dropped_rows"].clone())
    };
    let (py_rules, sql_rules) = (rules(&python, "5"), rules(&sql, "3"));
    assert!(py_rules.1.as_u64() > Some(0), "{py_rules:?}");
    assert_eq!(py_rules, sql_rules);
    let quarantined = |lab: &TestLab| {
        let mut out: Vec<String> = lab
            .table("_quarantine")
            .iter()
            .map(|q| {
                let row: serde_json::Value =
                    serde_json::from_str(q["row"].as_str().unwrap()).unwrap();
                format!("{} {} {}", q["table"], q["rules"], row["ticket_id"])
            })
            .collect();
        out.sort();
        out
    };
    let py_quarantine = quarantined(&python);
    assert!(!py_quarantine.is_empty());
    assert_eq!(py_quarantine, quarantined(&sql));
}

/// A project with `code` as `transformations/t.py` (and `sql`, when given, as `t.sql`).
fn python_project(lab: &TestLab, code: &str, sql: Option<&str>) -> String {
    let dir = lab.data().join("p");
    std::fs::create_dir_all(dir.join("transformations")).unwrap();
    std::fs::write(
        dir.join("spark-pipeline.yml"),
        "name: p\nlibraries:\n  - glob:\n      include: transformations/**\n",
    )
    .unwrap();
    std::fs::write(dir.join("transformations/t.py"), code).unwrap();
    if let Some(sql) = sql {
        std::fs::write(dir.join("transformations/t.sql"), sql).unwrap();
    }
    dir.display().to_string()
}

#[test]
fn python_beside_sql_with_constants_filters_and_aggregates() {
    let lab = TestLab::new("python-mixed");
    let code = r#"
from pyspark import pipelines as dp
from pyspark.sql import functions as F

LANDING = "landing/sales"
MIN_QTY = 0

@dp.table(name="sales_clean")
@dp.expect_all_or_drop({"has_region": "region IS NOT NULL"})
def clean():
    return (spark.readStream.format("json").schema("region STRING, qty BIGINT").load(LANDING)
            .where(F.col("qty") > MIN_QTY)
            .select("region", (F.col("qty") * 2).alias("double_qty")))

@dp.materialized_view
def by_region():
    return (spark.read.table("sales_clean")
            .groupBy("region")
            .agg(F.sum("double_qty").alias("total"), F.count("*").alias("n")))
"#;
    let sql = "CREATE MATERIALIZED VIEW biggest AS SELECT max(total) AS most FROM by_region;";
    let project = python_project(&lab, code, Some(sql));
    let landing = lab.data().join("landing/sales");
    std::fs::create_dir_all(&landing).unwrap();
    std::fs::write(
        landing.join("1.json"),
        "{\"region\": \"north\", \"qty\": 2}\n{\"region\": \"north\", \"qty\": 0}\n{\"region\": null, \"qty\": 5}\n{\"region\": \"south\", \"qty\": 1}\n",
    )
    .unwrap();
    lab.ok(&["pipeline", "run", &project]);
    assert_eq!(
        rows(&lab, "by_region", &["region", "total", "n"]),
        vec!["\"north\"|4|1", "\"south\"|2|1"]
    );
    assert_eq!(rows(&lab, "biggest", &["most"]), vec!["4"]);
    let quarantined = lab.table("_quarantine");
    assert_eq!(quarantined.len(), 1, "{quarantined:?}");
    assert_eq!(quarantined[0]["rules"], "has_region");
}

#[test]
fn append_flows_joins_unions_drop_and_f_strings_in_any_batching() {
    let code = r#"
from pyspark import pipelines as dp
from pyspark.sql import functions as F

ROOT = "landing"
SALES = "id BIGINT, region STRING, qty BIGINT, note STRING"

dp.create_streaming_table("all_sales")

@dp.append_flow(target="all_sales")
def north():
    return spark.readStream.format("json").schema(SALES).load(f"{ROOT}/north")

@dp.append_flow(target="all_sales", name="south_flow")
def south():
    return spark.readStream.format("json").schema(SALES).load(f"{ROOT}/south").drop("note")

@dp.materialized_view
def regions():
    # One _rescued_data column in a join's result: Spark refuses two columns of one name too.
    return (spark.read.format("json").schema("region STRING, manager STRING")
            .load(f"{ROOT}/regions").drop("_rescued_data"))

@dp.table
def sales_with_manager():
    return dp.read_stream("all_sales").join(spark.read.table("regions"), "region", "left")

@dp.materialized_view
def everything():
    return (spark.read.table("all_sales").select("id", "region")
            .unionByName(spark.read.table("regions").select("region"), allowMissingColumns=True))
"#;
    let land = |lab: &TestLab, dir: &str, lines: &str| {
        let at = lab.data().join("landing").join(dir);
        std::fs::create_dir_all(&at).unwrap();
        let n = std::fs::read_dir(&at).unwrap().count();
        std::fs::write(at.join(format!("{n}.json")), lines).unwrap();
    };
    let north = "{\"id\": 1, \"region\": \"n\", \"qty\": 2, \"note\": \"x\"}\n{\"id\": 2, \"region\": \"s\", \"qty\": 3, \"note\": \"y\"}\n";
    let south = "{\"id\": 3, \"region\": \"s\", \"qty\": 1, \"note\": \"z\"}\n{\"id\": 4, \"region\": \"w\", \"qty\": 5, \"note\": null}\n";
    let regions =
        "{\"region\": \"n\", \"manager\": \"ann\"}\n{\"region\": \"s\", \"manager\": \"bo\"}\n";
    // One lab gets everything in one run, the other a source a run.
    let (whole, split) = (
        TestLab::new("python-joins"),
        TestLab::new("python-joins-split"),
    );
    for lab in [&whole, &split] {
        let project = python_project(lab, code, None);
        land(lab, "regions", regions);
        if std::ptr::eq(lab, &split) {
            lab.ok(&["pipeline", "run", &project]);
        }
        land(lab, "north", north);
        if std::ptr::eq(lab, &split) {
            lab.ok(&["pipeline", "run", &project]);
        }
        land(lab, "south", south);
        lab.ok(&["pipeline", "run", &project]);
        assert_eq!(
            rows(lab, "all_sales", &["id", "region", "qty", "note"]),
            vec![
                "1|\"n\"|2|\"x\"",
                "2|\"s\"|3|\"y\"",
                "3|\"s\"|1|null",
                "4|\"w\"|5|null"
            ]
        );
        assert_eq!(
            rows(lab, "sales_with_manager", &["id", "region", "manager"]),
            vec![
                "1|\"n\"|\"ann\"",
                "2|\"s\"|\"bo\"",
                "3|\"s\"|\"bo\"",
                "4|\"w\"|null"
            ]
        );
        assert_eq!(
            rows(lab, "everything", &["id", "region"]),
            vec![
                "1|\"n\"",
                "2|\"s\"",
                "3|\"s\"",
                "4|\"w\"",
                "null|\"n\"",
                "null|\"s\""
            ]
        );
    }
}

#[test]
fn python_outside_the_subset_is_refused_at_its_line_and_column() {
    let lab = TestLab::new("python-refused");
    let cases: [(&str, &str, &str); 12] = [
        (
            "from pyspark import pipelines as dp\n\n@dp.table\ndef t():\n    return spark.readStream.table(\"a\").dropDuplicates([\"k\"]).where(\"v > 0\")\n",
            "t.py:5:12",
            "where after dropDuplicates([k]) is not followed",
        ),
        (
            "from pyspark import pipelines as dp\n\n@dp.table\ndef t():\n    return spark.readStream.table(\"a\").unionByName(spark.read.table(\"b\"))\n",
            "t.py:5:12",
            "a union of a stream and a table read whole",
        ),
        (
            "from pyspark import pipelines as dp\n\n@dp.table\ndef t():\n    return spark.readStream.table(\"a\").join(spark.read.table(\"b\"), \"k\", \"right\")\n",
            "t.py:5:12",
            "keeps the stream's side",
        ),
        (
            "from pyspark import pipelines as dp\n\n@dp.table\ndef t():\n    return spark.readStream.table(\"a\").dropDuplicates([\"k\"]).join(spark.read.table(\"b\"), \"k\")\n",
            "t.py:5:12",
            "join after dropDuplicates([k]) is not followed",
        ),
        (
            "from pyspark import pipelines as dp\n\n@dp.append_flow(target=\"t\")\n@dp.expect(\"r\", \"x > 0\")\ndef f():\n    return spark.readStream.table(\"a\")\n",
            "t.py:5:1",
            "declare it with its target",
        ),
        (
            "from pyspark import pipelines as dp\n\n@dp.table\ndef t():\n    return spark.read.table(\"a\").join(spark.read.table(\"b\"), F.col(\"x\") == F.col(\"y\"))\n",
            "t.py:5:62",
            "a condition on two frames' columns is not followed",
        ),
        (
            "from pyspark import pipelines as dp\nA = \"x\"\n\n@dp.table\ndef t():\n    return spark.read.table(f\"{A.upper()}\")\n",
            "t.py:6:31",
            "only {NAME} of a constant",
        ),
        (
            "from pyspark import pipelines as dp\n\n@dp.table\ndef t():\n    for x in range(3):\n        pass\n    return spark.read.table(\"a\")\n",
            "t.py:5:5",
            "cannot follow loops",
        ),
        (
            "from pyspark import pipelines as dp\n\n@dp.table\ndef t():\n    return spark.sql(\"SELECT 1\")\n",
            "t.py:5:12",
            "is not followed",
        ),
        (
            "from pyspark import pipelines as dp\n\n@dp.table\ndef t():\n    return spark.read.table(\"a\").pivot(\"x\")\n",
            "t.py:5:12",
            "withColumn",
        ),
        (
            "import os\nos.system(\"rm -rf /\")\n",
            "t.py:2:1",
            "is not followed",
        ),
        ("def t(:\n", "t.py:1:", "not valid Python"),
    ];
    for (code, place, says) in cases {
        let project = python_project(&lab, code, None);
        let out = lab.reckon(&["pipeline", "validate", &project]);
        let said = format!("{}{}", stdout(&out), stderr(&out));
        assert_eq!(out.status.code(), Some(2), "{code}\n{said}");
        assert!(said.contains(place), "{code}\nwanted {place}: {said}");
        assert!(said.contains(says), "{code}\nwanted {says}: {said}");
    }
    // A hostile depth is refused before any walk of the tree.
    let deep = format!(
        "from pyspark import pipelines as dp\n\n@dp.table\ndef t():\n    return spark.read.table(\"a\").where({}1{})\n",
        "(".repeat(5000),
        ")".repeat(5000)
    );
    let project = python_project(&lab, &deep, None);
    let out = lab.reckon(&["pipeline", "validate", &project]);
    let said = format!("{}{}", stdout(&out), stderr(&out));
    assert_eq!(out.status.code(), Some(2), "{said}");
    assert!(said.contains("nests deeper than"), "{said}");
}
