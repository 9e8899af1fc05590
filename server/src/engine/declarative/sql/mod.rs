//! A flow's query: parsed by DataFusion's SQL parser, with what it reads found and renamed. Each
//! `STREAM(t)`, `STREAM t`, `STREAM read_files(...)` and `read_files(...)` becomes a table of the
//! flow's session (`__read_0`, ...), registered with only the new rows or files when streamed; a
//! plain name reads the dataset as it is now. Spark's names for a few functions work too.

use std::ops::ControlFlow;

use datafusion::sql::sqlparser::ast::{
    Expr, Function, FunctionArg, FunctionArgExpr, FunctionArguments, Ident, ObjectName, Query,
    SetExpr, TableAlias, TableFactor, Value, VisitMut, VisitorMut,
};
use datafusion::sql::sqlparser::dialect::GenericDialect;
use datafusion::sql::sqlparser::parser::Parser;

pub mod functions;
mod kafka;
mod spark;
mod stream;
mod structs;
pub mod watermark;
mod wildcards;
pub mod window;

pub use wildcards::plan;

pub use kafka::Starting;

use super::parse::{ParseError, Place, QueryText};

/// The file formats `read_files` reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum Format {
    Json,
    Csv,
    Parquet,
}

/// Where a query reads from.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum Source {
    /// A dataset of the project, by name.
    Table(String),
    /// `read_files(path, format => ..., schema => ...)`; the path is relative to the data folder.
    Files {
        path: String,
        format: Format,
        schema: Option<String>,
    },
    /// `read_kafka(subscribe => topic, ...)`: the topic as the learner names it.
    Kafka {
        topic: String,
        starting: Starting,
        servers: Option<String>,
    },
}

/// One read of a query: its source, whether only what is new is read, and the name the query
/// now uses for it (a plain read keeps the dataset's own name).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Read {
    pub source: Source,
    pub stream: bool,
    pub name: String,
}

/// A query ready for DataFusion, and what it reads.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct FlowQuery {
    pub sql: String,
    pub reads: Vec<Read>,
    pub at: Place,
    /// Its `WATERMARK` clause, cut out of `sql`.
    #[serde(default)]
    pub watermark: Option<watermark::Watermark>,
    /// Grouped by a window: the query taken apart (`window.rs`).
    #[serde(default)]
    pub window: Option<window::WindowPlan>,
    /// Whether it aggregates (`GROUP BY` or an aggregate in its select list).
    #[serde(default)]
    pub aggregates: bool,
}

/// Parses a query and finds what it reads, renaming each stream or file read `{prefix}_N`.
pub fn flow_query(text: &QueryText, prefix: &str) -> Result<FlowQuery, ParseError> {
    let error = |e: String| ParseError {
        place: within(&text.at, &e),
        // The place is said once, as the file's line and column, not also as the parser's
        // "Line: 1, Column: 49" within the query.
        message: format!("in the query: {}", without_position(&e)),
    };
    let (sql, watermark) = watermark::extract(&text.sql).map_err(&error)?;
    let sql = stream::with_parentheses(&sql);
    let mut query = Parser::new(&GenericDialect {})
        .try_with_sql(&sql)
        .and_then(|mut p| p.parse_query())
        .map_err(|e| error(e.to_string()))?;
    // `WITH x AS (...) INSERT/UPDATE/DELETE/MERGE ...` parses as a query, but writes: refused
    // at save, not found out at the run.
    if let SetExpr::Insert(_) | SetExpr::Update(_) | SetExpr::Delete(_) | SetExpr::Merge(_) =
        query.body.as_ref()
    {
        return Err(error(
            "a flow's query reads; INSERT, UPDATE, DELETE or MERGE has no place in it".into(),
        ));
    }
    structs::expand_stars(&mut query);
    let mut finder = Finder {
        prefix: prefix.to_string(),
        ..Finder::default()
    };
    if let ControlFlow::Break(message) = query.visit(&mut finder) {
        return Err(error(message));
    }
    let window = match &watermark {
        Some(w) => window::plan(&query, w).map_err(&error)?,
        None if window::groups_by_window(&query) => {
            return Err(error(
                "a window needs a watermark on its column: WATERMARK col DELAY OF INTERVAL n unit \
                 after the source (PIPELINES §8)"
                    .into(),
            ));
        }
        None => None,
    };
    Ok(FlowQuery {
        sql: query.to_string(),
        reads: finder.reads,
        at: text.at.clone(),
        aggregates: window::aggregates(&query),
        watermark,
        window,
    })
}

/// A parser error's message without its trailing " at Line: L, Column: C".
fn without_position(message: &str) -> &str {
    match message.rfind(" at Line: ") {
        Some(i) if message[i..].contains("Column: ") => &message[..i],
        _ => message,
    }
}

/// The place in the file of a parser error's "Line: L, Column: C" inside a query starting at `at`.
fn within(at: &Place, message: &str) -> Place {
    let number = |key: &str| -> Option<usize> {
        let rest = &message[message.find(key)? + key.len()..];
        rest.split(|c: char| !c.is_ascii_digit())
            .next()?
            .parse()
            .ok()
    };
    match (number("Line: "), number("Column: ")) {
        (Some(1), Some(column)) => Place {
            column: at.column + column - 1,
            ..at.clone()
        },
        (Some(line), Some(column)) => Place {
            line: at.line + line - 1,
            column,
            ..at.clone()
        },
        _ => at.clone(),
    }
}

#[derive(Default)]
struct Finder {
    prefix: String,
    reads: Vec<Read>,
    /// Names the query defines itself (`WITH x AS ...`): not datasets.
    ctes: Vec<String>,
}

impl Finder {
    fn renamed(&mut self, source: Source, stream: bool) -> String {
        let name = format!("{}_{}", self.prefix, self.reads.len());
        self.reads.push(Read {
            source,
            stream,
            name: name.clone(),
        });
        name
    }
}

impl VisitorMut for Finder {
    type Break = String;

    fn pre_visit_query(&mut self, query: &mut Query) -> ControlFlow<String> {
        if let Some(with) = &query.with {
            self.ctes.extend(
                with.cte_tables
                    .iter()
                    .map(|c| c.alias.name.value.to_lowercase()),
            );
        }
        ControlFlow::Continue(())
    }

    fn pre_visit_table_factor(&mut self, factor: &mut TableFactor) -> ControlFlow<String> {
        let TableFactor::Table {
            name, args, alias, ..
        } = factor
        else {
            return ControlFlow::Continue(());
        };
        let called = name.to_string().to_lowercase();
        let (source, stream, shown) = match (called.as_str(), args.take()) {
            (_, None) => {
                if !self.ctes.contains(&called) {
                    self.reads.push(Read {
                        source: Source::Table(called.clone()),
                        stream: false,
                        name: called,
                    });
                }
                return ControlFlow::Continue(());
            }
            ("stream", Some(args)) => match args.args.as_slice() {
                [FunctionArg::Unnamed(FunctionArgExpr::Expr(expr))] => match expr {
                    Expr::Identifier(t) => {
                        (Source::Table(t.value.to_lowercase()), true, t.value.clone())
                    }
                    Expr::CompoundIdentifier(parts) => {
                        let t = parts
                            .iter()
                            .map(|p| p.value.as_str())
                            .collect::<Vec<_>>()
                            .join(".");
                        (Source::Table(t.to_lowercase()), true, t)
                    }
                    Expr::Function(f) if f.name.to_string().eq_ignore_ascii_case("read_files") => {
                        match files(f) {
                            Ok(source) => (source, true, "read_files".to_string()),
                            Err(e) => return ControlFlow::Break(e),
                        }
                    }
                    Expr::Function(f) if f.name.to_string().eq_ignore_ascii_case("read_kafka") => {
                        match kafka::source(f) {
                            Ok(source) => (source, true, "read_kafka".to_string()),
                            Err(e) => return ControlFlow::Break(e),
                        }
                    }
                    other => {
                        return ControlFlow::Break(format!(
                            "STREAM reads a table, a view, read_files(...) or read_kafka(...), not {other}"
                        ));
                    }
                },
                _ => {
                    return ControlFlow::Break(
                        "STREAM takes one table, view, read_files(...) or read_kafka(...)".into(),
                    );
                }
            },
            (called @ ("read_files" | "read_kafka"), Some(args)) => {
                let call = Function {
                    name: name.clone(),
                    uses_odbc_syntax: false,
                    parameters: FunctionArguments::None,
                    args: FunctionArguments::List(
                        datafusion::sql::sqlparser::ast::FunctionArgumentList {
                            duplicate_treatment: None,
                            args: args.args,
                            clauses: vec![],
                        },
                    ),
                    filter: None,
                    null_treatment: None,
                    over: None,
                    within_group: vec![],
                };
                let source = match called {
                    "read_kafka" => kafka::source(&call),
                    _ => files(&call),
                };
                match source {
                    Ok(source) => (source, false, called.to_string()),
                    Err(e) => return ControlFlow::Break(e),
                }
            }
            (other, Some(_)) => {
                return ControlFlow::Break(format!(
                    "{other}(...) is not a table function Reckon knows: use STREAM(...), read_files(...) or read_kafka(...)"
                ));
            }
        };
        let renamed = self.renamed(source, stream);
        *name = ObjectName::from(vec![Ident::new(renamed)]);
        if alias.is_none() {
            *alias = Some(TableAlias {
                explicit: true,
                name: Ident::new(shown),
                columns: vec![],
                at: None,
            });
        }
        ControlFlow::Continue(())
    }

    fn post_visit_expr(&mut self, expr: &mut Expr) -> ControlFlow<String> {
        spark::rewrite(expr);
        ControlFlow::Continue(())
    }
}

/// `read_files('path', format => 'json', schema => '...')` as a source.
fn files(call: &Function) -> Result<Source, String> {
    let FunctionArguments::List(list) = &call.args else {
        return Err("read_files needs a path: read_files('landing/x', format => 'json')".into());
    };
    let text = |arg: &FunctionArgExpr| match arg {
        FunctionArgExpr::Expr(Expr::Value(v)) => match &v.value {
            Value::SingleQuotedString(s) | Value::DoubleQuotedString(s) => Some(s.clone()),
            _ => None,
        },
        _ => None,
    };
    let (mut path, mut format, mut schema) = (None, None, None);
    for arg in &list.args {
        match arg {
            FunctionArg::Unnamed(a) if path.is_none() => path = text(a),
            FunctionArg::Named { name, arg, .. } => {
                let value =
                    text(arg).ok_or_else(|| format!("read_files: {name} takes a quoted text"))?;
                match name.value.to_lowercase().as_str() {
                    "format" => format = Some(value),
                    "schema" => schema = Some(value),
                    other => {
                        return Err(format!(
                            "read_files has no option {other}; it takes format and schema"
                        ));
                    }
                }
            }
            other => return Err(format!("read_files: unexpected argument {other}")),
        }
    }
    let path = path.ok_or("read_files needs a path as its first argument, in quotes")?;
    // A schema that cannot be read is refused with the project, before any flow runs.
    if let Some(ddl) = &schema {
        super::files::schema::from_ddl(ddl).map_err(|e| format!("read_files: {e}"))?;
    }
    let format = match format.as_deref().map(str::to_lowercase).as_deref() {
        Some("json") => Format::Json,
        Some("csv") => Format::Csv,
        Some("parquet") => Format::Parquet,
        Some(other) => {
            return Err(format!(
                "read_files reads json, csv or parquet, not {other}"
            ));
        }
        None => return Err("read_files needs format => 'json', 'csv' or 'parquet'".into()),
    };
    Ok(Source::Files {
        path,
        format,
        schema,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn query(sql: &str) -> FlowQuery {
        let text = QueryText {
            sql: sql.into(),
            at: Place {
                file: "t.sql".into(),
                line: 1,
                column: 1,
            },
        };
        flow_query(&text, "__read").unwrap()
    }

    /// Spark's spellings give Spark's answers once DataFusion runs them.
    #[tokio::test]
    async fn date_format_and_count_if_read_as_spark_writes_them() {
        let q = query(
            "SELECT date_format(CAST('2026-10-03 14:05:09' AS TIMESTAMP), 'yyyy-MM-dd HH:mm:ss') AS at, \
                    date_format(CAST('2026-10-03' AS DATE), 'dd/MM/yy') AS day, \
                    count_if(x > 1) AS n FROM (VALUES (1), (2), (3)) AS t(x)",
        );
        let ctx = datafusion::prelude::SessionContext::new();
        let rows = ctx.sql(&q.sql).await.unwrap().collect().await.unwrap();
        let text = arrow::util::pretty::pretty_format_batches(&rows)
            .unwrap()
            .to_string();
        assert!(
            text.contains("| 2026-10-03 14:05:09 | 03/10/26 | 2 |"),
            "{text}"
        );
        assert_eq!(spark::chrono_pattern("EEE, d MMM yyyy"), "%a, %d %b %Y");
    }

    #[test]
    fn streams_and_files_are_found_and_renamed() {
        let q = query("SELECT *, to_date(created_at) AS d FROM STREAM bronze_tickets");
        assert_eq!(q.reads[0].source, Source::Table("bronze_tickets".into()));
        assert!(q.reads[0].stream);
        assert!(
            q.sql.contains("FROM __read_0 AS bronze_tickets"),
            "{}",
            q.sql
        );

        let q = query("SELECT * FROM STREAM(read_files('landing/tickets', format => 'json'))");
        assert_eq!(
            q.reads[0].source,
            Source::Files {
                path: "landing/tickets".into(),
                format: Format::Json,
                schema: None
            }
        );
        let q = query(
            "WITH s AS (SELECT * FROM silver) SELECT d, count_if(x > 1) FROM s JOIN accounts a ON true GROUP BY d",
        );
        let names: Vec<&Source> = q.reads.iter().map(|r| &r.source).collect();
        assert_eq!(
            names,
            [
                &Source::Table("silver".into()),
                &Source::Table("accounts".into())
            ]
        );
        assert!(
            q.sql.contains("count(CASE WHEN x > 1 THEN 1 END)"),
            "{}",
            q.sql
        );
    }

    #[test]
    fn a_query_that_does_not_parse_says_where_its_statement_is() {
        let text = QueryText {
            sql: "SELECT a\n  FROM t WHERE ) AND".into(),
            at: Place {
                file: "t.sql".into(),
                line: 4,
                column: 6,
            },
        };
        let error = flow_query(&text, "__read").unwrap_err().to_string();
        assert!(error.starts_with("t.sql:5:"), "{error}");
    }
}
