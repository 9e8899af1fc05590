//! Property (issue "The course's Python runs as written"): random chains of the DataFrame
//! methods Reckon follows, each written once in Python and once in SQL by a model of Spark's
//! meaning that knows every column in its place, give the same tables, column for column, in
//! any batching of the files they read. The SQL is written out column by column; the Python
//! goes through the translator (`withColumn` in place, `withColumnRenamed`, `drop`, `select`,
//! `where` / `filter`, `dropDuplicates`, `groupBy(...).agg(...)` / `.count()`).

use reckon::engine::rng::Rng;

use super::*;

const SCHEMA: &str = "id BIGINT, k STRING, v BIGINT, w DOUBLE";

#[derive(Clone, Copy, PartialEq)]
enum Kind {
    Number,
    Text,
}

/// One chain as it grows: its Python, its SQL, its columns in order, its duplicate keys.
struct Chain {
    python: String,
    sql: String,
    columns: Vec<(String, Kind)>,
    dedup: bool,
    stream: bool,
    names: u32,
}

impl Chain {
    fn new(stream: bool) -> Chain {
        let (py, sql) = match stream {
            true => ("spark.readStream", "STREAM read_files"),
            false => ("spark.read", "read_files"),
        };
        Chain {
            python: format!("{py}.format(\"json\").schema(SCHEMA).load(\"landing/items\")"),
            sql: format!(
                "SELECT * FROM {sql}('landing/items', format => 'json', schema => '{SCHEMA}')"
            ),
            columns: vec![
                ("id".into(), Kind::Number),
                ("k".into(), Kind::Text),
                ("v".into(), Kind::Number),
                ("w".into(), Kind::Number),
                // `read_files` keeps what does not fit the schema here (as Databricks does).
                ("_rescued_data".into(), Kind::Text),
            ],
            dedup: false,
            stream,
            names: 0,
        }
    }

    fn list(&self) -> String {
        let names: Vec<&str> = self.columns.iter().map(|(c, _)| c.as_str()).collect();
        names.join(", ")
    }

    fn of(&self, kind: Kind) -> Vec<String> {
        let mut out: Vec<String> = self
            .columns
            .iter()
            .filter(|(_, k)| *k == kind)
            .map(|(c, _)| c.clone())
            .collect();
        // After dropDuplicates the key stays as it is.
        if self.dedup {
            out.retain(|c| c != "id");
        }
        out
    }

    fn wrap(&mut self, select: String, tail: &str) {
        self.sql = format!("SELECT {select} FROM ({}) AS q{tail}", self.sql);
    }

    fn fresh(&mut self, prefix: &str) -> String {
        self.names += 1;
        format!("{prefix}{}", self.names)
    }

    /// One random step, in both languages.
    fn step(&mut self, rng: &mut Rng) {
        let numbers = self.of(Kind::Number);
        match rng.below(8) {
            // A filter (not after dropDuplicates: it would change which row is first).
            0 if !self.dedup && !numbers.is_empty() => {
                let c = &numbers[rng.below(numbers.len() as u64) as usize];
                let n = rng.below(20) as i64 - 5;
                match rng.below(2) {
                    0 => self.python += &format!("\n        .where(\"{c} > {n}\")"),
                    _ => self.python += &format!("\n        .filter(F.col(\"{c}\") > {n})"),
                }
                let c = c.clone();
                self.wrap("*".into(), &format!(" WHERE {c} > {n}"));
            }
            1 if !self.dedup && self.of(Kind::Text).contains(&"k".to_string()) => {
                let v = ["a", "b", "c"][rng.below(3) as usize];
                self.python += &format!("\n        .where(F.col(\"k\") != \"{v}\")");
                self.wrap("*".into(), &format!(" WHERE k <> '{v}'"));
            }
            // A new column, or one replaced in its place.
            2 | 3 if !numbers.is_empty() => {
                let from = numbers[rng.below(numbers.len() as u64) as usize].clone();
                let replace = rng.percent(50);
                let name = match replace {
                    true => numbers[rng.below(numbers.len() as u64) as usize].clone(),
                    false => self.fresh("c"),
                };
                let m = rng.below(4) + 1;
                self.python +=
                    &format!("\n        .withColumn(\"{name}\", F.col(\"{from}\") * {m} + 1)");
                let expr = format!("{from} * {m} + 1 AS {name}");
                let mut items: Vec<String> = self.columns.iter().map(|(c, _)| c.clone()).collect();
                match self.columns.iter().position(|(c, _)| *c == name) {
                    Some(at) => items[at] = expr,
                    None => {
                        items.push(expr);
                        self.columns.push((name, Kind::Number));
                    }
                }
                self.wrap(items.join(", "), "");
            }
            // A column renamed in its place, or a name the frame lacks (nothing changes).
            4 => {
                let renamable: Vec<String> = self
                    .columns
                    .iter()
                    .map(|(c, _)| c.clone())
                    .filter(|c| !(self.dedup && c == "id"))
                    .collect();
                if renamable.is_empty() || rng.percent(15) {
                    self.python += "\n        .withColumnRenamed(\"nothing\", \"x\")";
                    return;
                }
                let old = renamable[rng.below(renamable.len() as u64) as usize].clone();
                let new = self.fresh("r");
                self.python += &format!("\n        .withColumnRenamed(\"{old}\", \"{new}\")");
                let items: Vec<String> = self
                    .columns
                    .iter()
                    .map(|(c, _)| match *c == old {
                        true => format!("{c} AS {new}"),
                        false => c.clone(),
                    })
                    .collect();
                self.wrap(items.join(", "), "");
                for (c, _) in &mut self.columns {
                    if *c == old {
                        *c = new.clone();
                    }
                }
            }
            // A column dropped (one stays, and the key after dropDuplicates).
            5 if self.columns.len() > 2 => {
                let droppable: Vec<String> = self
                    .columns
                    .iter()
                    .map(|(c, _)| c.clone())
                    .filter(|c| !(self.dedup && c == "id"))
                    .collect();
                let gone = droppable[rng.below(droppable.len() as u64) as usize].clone();
                self.python += &format!("\n        .drop(\"{gone}\")");
                self.columns.retain(|(c, _)| *c != gone);
                let list = self.list();
                self.wrap(list, "");
            }
            // Some columns, in a new order (the key kept after dropDuplicates).
            6 => {
                let mut picked = self.columns.clone();
                for i in (1..picked.len()).rev() {
                    picked.swap(i, rng.below(i as u64 + 1) as usize);
                }
                let keep = 1 + rng.below(picked.len() as u64) as usize;
                picked.truncate(keep);
                if self.dedup && !picked.iter().any(|(c, _)| c == "id") {
                    picked.push(("id".into(), Kind::Number));
                }
                let names: Vec<String> = picked.iter().map(|(c, _)| format!("\"{c}\"")).collect();
                self.python += &format!("\n        .select({})", names.join(", "));
                self.columns = picked;
                let list = self.list();
                self.wrap(list, "");
            }
            // Spark's streaming dropDuplicates: the first row of each key kept.
            7 if self.stream && !self.dedup && self.columns.iter().any(|(c, _)| c == "id") => {
                self.python += "\n        .dropDuplicates([\"id\"])";
                self.dedup = true;
            }
            _ => {}
        }
    }

    /// A batch chain may end grouped.
    fn grouped(&mut self, rng: &mut Rng) {
        let (texts, numbers) = (self.of(Kind::Text), self.of(Kind::Number));
        let Some(key) = texts.first().cloned() else {
            return;
        };
        if numbers.is_empty() || rng.percent(30) {
            self.python += &format!("\n        .groupBy(\"{key}\").count()");
            self.wrap(
                format!("{key}, count(*) AS count"),
                &format!(" GROUP BY {key}"),
            );
        } else {
            let n = &numbers[rng.below(numbers.len() as u64) as usize];
            self.python += &format!(
                "\n        .groupBy(\"{key}\").agg(F.sum(\"{n}\").alias(\"total\"), F.max(\"{n}\").alias(\"top\"))"
            );
            let n = n.clone();
            self.wrap(
                format!("{key}, sum({n}) AS total, max({n}) AS top"),
                &format!(" GROUP BY {key}"),
            );
        }
        self.columns.clear();
    }
}

/// The project: each chain as `py_i` in Python and `sql_i` in SQL.
fn project(lab: &TestLab, chains: &[Chain]) -> String {
    let dir = lab.data().join("chains");
    std::fs::create_dir_all(dir.join("transformations")).unwrap();
    std::fs::write(
        dir.join("spark-pipeline.yml"),
        "name: chains\nlibraries:\n  - glob:\n      include: transformations/**\n",
    )
    .unwrap();
    let mut py = format!(
        "from pyspark import pipelines as dp\nfrom pyspark.sql import functions as F\n\nSCHEMA = \"{SCHEMA}\"\n"
    );
    let mut sql = String::new();
    for (i, chain) in chains.iter().enumerate() {
        let (decorator, kind) = match chain.stream {
            true => ("dp.table", "STREAMING TABLE"),
            false => ("dp.materialized_view", "MATERIALIZED VIEW"),
        };
        py += &format!(
            "\n@{decorator}(name=\"py_{i}\")\ndef chain_{i}():\n    return ({})\n",
            chain.python
        );
        let properties = match chain.dedup {
            true => " TBLPROPERTIES ('reckon.dropDuplicates' = 'id')",
            false => "",
        };
        sql += &format!(
            "CREATE OR REFRESH {kind} sql_{i}{properties} AS {};\n",
            chain.sql
        );
    }
    std::fs::write(dir.join("transformations/chains.py"), py).unwrap();
    std::fs::write(dir.join("transformations/chains.sql"), sql).unwrap();
    dir.display().to_string()
}

/// `count` rows, ids repeating, some values missing or negative.
fn land(lab: &TestLab, rng: &mut Rng, file: usize, count: usize) {
    let dir = lab.data().join("landing/items");
    std::fs::create_dir_all(&dir).unwrap();
    let mut text = String::new();
    for _ in 0..count {
        let id = rng.below(40);
        let k = match rng.below(5) {
            0 => "null".to_string(),
            n => format!("\"{}\"", ["a", "b", "c", "d"][n as usize - 1]),
        };
        let v = match rng.percent(10) {
            true => "null".to_string(),
            false => (rng.below(30) as i64 - 8).to_string(),
        };
        let w = rng.below(1000) as f64 / 8.0;
        text += &format!("{{\"id\": {id}, \"k\": {k}, \"v\": {v}, \"w\": {w}}}\n");
    }
    std::fs::write(dir.join(format!("part-{file:03}.json")), text).unwrap();
}

#[test]
fn random_chains_in_python_and_in_sql_give_the_same_tables_in_any_batching() {
    for seed in [11_u64, 2_024, 77_777] {
        let lab = TestLab::new(&format!("py-chains-{seed}"));
        let mut rng = Rng(seed);
        let chains: Vec<Chain> = (0..10)
            .map(|i| {
                let mut chain = Chain::new(i % 3 != 2);
                for _ in 0..1 + rng.below(5) {
                    chain.step(&mut rng);
                }
                if !chain.stream && rng.percent(50) {
                    chain.grouped(&mut rng);
                }
                chain
            })
            .collect();
        let dir = project(&lab, &chains);
        // Files landed in random batches, a run after each.
        let mut file = 0;
        for _ in 0..1 + rng.below(4) {
            for _ in 0..1 + rng.below(3) {
                let count = 5 + rng.below(40) as usize;
                land(&lab, &mut rng, file, count);
                file += 1;
            }
            lab.ok(&["pipeline", "run", &dir]);
        }
        let mut nonempty = 0;
        for (i, chain) in chains.iter().enumerate() {
            let py = lab.ok(&["table", &format!("py_{i}")]);
            let sql = lab.ok(&["table", &format!("sql_{i}")]);
            assert_eq!(
                py, sql,
                "seed {seed}, chain {i}:\n{}\n\n{}",
                chain.python, chain.sql
            );
            nonempty += usize::from(py.lines().count() > 4);
        }
        assert!(
            nonempty >= 5,
            "seed {seed}: only {nonempty} chains gave rows"
        );
    }
}
