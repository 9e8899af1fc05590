//! The DataFrame a decorated function builds, as it grows call by call, and the query it ends
//! as. A source stays flat while only `where`, `withWatermark` and the duplicate keys are added
//! to it, so a window over it is one `SELECT ... FROM STREAM source WATERMARK ... WHERE ...
//! GROUP BY window(...)`, the form PIPELINES §8 gives windows (the watermark counts only the
//! rows that pass the conditions on other columns, as Spark's does).

/// The DataFrame a function returns.
pub struct Frame {
    body: Body,
    pub stream: bool,
    /// `dropDuplicates` keys: Spark's streaming `dropDuplicates`.
    pub dedup: Option<Vec<String>>,
    /// `dropDuplicatesWithinWatermark` keys.
    pub within: Option<Vec<String>>,
}

enum Body {
    /// A source as read: its `FROM` text, its watermark clause, the conditions on it.
    Source {
        from: String,
        watermark: Option<String>,
        wheres: Vec<String>,
    },
    /// A windowed aggregate over a source: its `FROM ... WHERE ...` tail, the window, its name,
    /// the other group keys, the aggregates (`expr`, `name`) and the columns selected from them.
    Windowed {
        tail: String,
        window: String,
        alias: String,
        keys: Vec<String>,
        aggregates: Vec<(String, Option<String>)>,
        select: Option<Vec<String>>,
    },
    Query(String),
}

impl Frame {
    /// A source: `STREAM(t)`, `t`, `STREAM read_files(...)`.
    pub fn source(from: String, stream: bool) -> Frame {
        Frame {
            body: Body::Source {
                from,
                watermark: None,
                wheres: vec![],
            },
            stream,
            dedup: None,
            within: None,
        }
    }

    pub fn query(&self) -> String {
        match &self.body {
            Body::Source { .. } => format!("SELECT * {}", self.tail()),
            Body::Windowed {
                tail,
                window,
                alias,
                keys,
                aggregates,
                select,
            } => {
                let named = |(expr, name): &(String, Option<String>)| match name {
                    Some(name) => format!("{expr} AS {name}"),
                    None => expr.clone(),
                };
                let items: Vec<String> = match select {
                    Some(items) => items
                        .iter()
                        .map(|item| resolved(item, (window, alias), aggregates))
                        .collect(),
                    None => [
                        format!("{window}.start AS {alias}_start"),
                        format!("{window}.end AS {alias}_end"),
                    ]
                    .into_iter()
                    .chain(keys.iter().cloned())
                    .chain(aggregates.iter().map(named))
                    .collect(),
                };
                let mut groups = vec![window.clone()];
                groups.extend(keys.iter().cloned());
                format!(
                    "SELECT {} {tail} GROUP BY {}",
                    items.join(", "),
                    groups.join(", ")
                )
            }
            Body::Query(query) => query.clone(),
        }
    }

    /// `FROM source [WATERMARK ...] [WHERE ...]` of a flat source.
    fn tail(&self) -> String {
        let Body::Source {
            from,
            watermark,
            wheres,
        } = &self.body
        else {
            return format!("FROM ({}) AS q", self.query());
        };
        let mut tail = format!("FROM {from}");
        if let Some(w) = watermark {
            tail.push_str(&format!(" WATERMARK {w}"));
        }
        if !wheres.is_empty() {
            tail.push_str(&format!(" WHERE ({})", wheres.join(") AND (")));
        }
        tail
    }

    /// `SELECT ... FROM (this)`; after a windowed aggregate, the columns it gives.
    pub fn wrap(self, select: String, items: Option<Vec<String>>) -> Frame {
        match (self.body, items) {
            (
                Body::Windowed {
                    tail,
                    window,
                    alias,
                    keys,
                    aggregates,
                    select: None,
                },
                Some(items),
            ) => Frame {
                body: Body::Windowed {
                    tail,
                    window,
                    alias,
                    keys,
                    aggregates,
                    select: Some(items),
                },
                ..self
            },
            (body, _) => {
                let inner = Frame { body, ..self };
                Frame {
                    body: Body::Query(format!("{select} FROM ({}) AS q", inner.query())),
                    ..inner
                }
            }
        }
    }

    /// This frame and `other` as one query, `sql(this query, other's)`: a join or a union. It is
    /// a stream when either side is (a stream joined with a table read whole, as Spark's
    /// stream-static join).
    pub fn combined(self, other: &Frame, sql: impl FnOnce(String, String) -> String) -> Frame {
        let query = sql(self.query(), other.query());
        Frame {
            body: Body::Query(query),
            stream: self.stream || other.stream,
            ..self
        }
    }

    pub fn wrap_where(mut self, condition: &str) -> Frame {
        if let Body::Source { wheres, .. } = &mut self.body {
            wheres.push(condition.to_string());
            return self;
        }
        let query = format!("SELECT * FROM ({}) AS q WHERE {condition}", self.query());
        Frame {
            body: Body::Query(query),
            ..self
        }
    }

    /// `withWatermark(column, delay)`: only on a source as read (`None` otherwise).
    pub fn watermarked(mut self, column: &str, delay: &str) -> Result<Frame, Frame> {
        match &mut self.body {
            Body::Source { watermark, .. } => {
                *watermark = Some(format!("{column} DELAY OF INTERVAL {delay}"));
                Ok(self)
            }
            _ => Err(self),
        }
    }

    /// Whether `method`, naming columns `touched`, may follow `dropDuplicates(keys)`. Reckon
    /// drops duplicates on the rows the query gives (as the table's property does), so only a
    /// step that gives the same rows either way is followed after it: a column added, renamed
    /// or dropped, or a select, that leaves the keys as they are. A filter, a grouping, a join
    /// or a union after it would change which row of a key is the first.
    pub fn after_dedup(
        &self,
        keys: &[String],
        method: &str,
        touched: &[String],
    ) -> Result<(), String> {
        let keys_kept = match method {
            "withColumn" | "withColumnRenamed" | "drop" => {
                !touched.iter().any(|t| keys.contains(t))
            }
            "select" => keys.iter().all(|k| touched.contains(k)),
            "withWatermark" => true,
            _ => false,
        };
        if keys_kept {
            return Ok(());
        }
        Err(format!(
            "{method} after dropDuplicates([{}]) is not followed: after it come only withColumn, \
             withColumnRenamed, drop and select that keep the key columns as they are; call \
             {method} before dropDuplicates",
            keys.join(", ")
        ))
    }

    pub fn has_watermark(&self) -> bool {
        matches!(
            &self.body,
            Body::Source {
                watermark: Some(_),
                ..
            }
        ) || matches!(&self.body, Body::Windowed { .. })
    }

    /// `groupBy(keys).agg(aggregates)`: a window among the keys (`window(...)` or
    /// `window(...) AS name`) over a flat source makes a windowed aggregate.
    pub fn grouped(self, keys: &[String], aggregates: Vec<(String, Option<String>)>) -> Frame {
        let window = keys.iter().position(|k| k.starts_with("window("));
        if let (Some(at), Body::Source { .. }) = (window, &self.body) {
            let (window, alias) = match keys[at].rsplit_once(" AS ") {
                Some((w, a)) => (w.to_string(), a.to_string()),
                None => (keys[at].clone(), "window".to_string()),
            };
            let others: Vec<String> = keys
                .iter()
                .enumerate()
                .filter(|(i, _)| *i != at)
                .map(|(_, k)| k.clone())
                .collect();
            return Frame {
                body: Body::Windowed {
                    tail: self.tail(),
                    window,
                    alias,
                    keys: others,
                    aggregates,
                    select: None,
                },
                ..self
            };
        }
        let mut select = keys.to_vec();
        select.extend(aggregates.iter().map(|(e, n)| match n {
            Some(n) => format!("{e} AS {n}"),
            None => e.clone(),
        }));
        let groups: Vec<&str> = keys
            .iter()
            .map(|k| k.rsplit_once(" AS ").map_or(k.as_str(), |(e, _)| e))
            .collect();
        let query = format!(
            "SELECT {} FROM ({}) AS q GROUP BY {}",
            select.join(", "),
            self.query(),
            groups.join(", ")
        );
        Frame {
            body: Body::Query(query),
            ..self
        }
    }
}

/// A column selected from a windowed aggregate, in its terms: `window.start AS hour` is the
/// window's start, `orders` the aggregate it names.
fn resolved(
    item: &str,
    (window, alias): (&str, &str),
    aggregates: &[(String, Option<String>)],
) -> String {
    let (expr, name) = match item.rsplit_once(" AS ") {
        Some((e, n)) => (e.trim(), Some(n.trim())),
        None => (item.trim(), None),
    };
    for part in ["start", "end"] {
        if expr == format!("{alias}.{part}") {
            let name = name.unwrap_or(part);
            return format!("{window}.{part} AS {name}");
        }
    }
    match aggregates.iter().find(|(_, n)| n.as_deref() == Some(expr)) {
        Some((e, n)) => format!("{e} AS {}", name.or(n.as_deref()).unwrap_or(expr)),
        None => item.to_string(),
    }
}
