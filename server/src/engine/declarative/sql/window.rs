//! A windowed flow's query (PIPELINES §8): `SELECT window(t, '1 hour').start AS hour, count(*)
//! ... FROM STREAM s WATERMARK t DELAY OF INTERVAL 1 HOUR WHERE ... GROUP BY window(t, '1 hour')`.
//! DataFusion has no streaming windows, so the query is taken apart here: DataFusion runs the
//! part below the aggregation over the rows new this run (the source, the `WHERE` conjuncts that
//! do not refer to the event time, the keys and the aggregates' inputs), and
//! `engine/streaming/window.rs` keeps the windows between runs, as Spark's append mode does.

use datafusion::sql::sqlparser::ast::{
    DuplicateTreatment, Expr, FunctionArg, FunctionArgExpr, FunctionArguments, GroupByExpr, Query,
    SelectItem, SetExpr, Value,
};
use serde::{Deserialize, Serialize};

use super::watermark::{Watermark, duration_text};
use crate::engine::streaming::window::Aggregate;

/// What a windowed flow's output column is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Output {
    Start,
    End,
    Key(usize),
    Aggregate(usize),
}

/// A windowed flow's query, taken apart.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WindowPlan {
    pub watermark: Watermark,
    pub width: i64,
    /// The `FROM` clause, its sources renamed as the flow registers them.
    pub from: String,
    /// `WHERE` conjuncts that do not refer to the event time: applied before the watermark.
    pub plain: Vec<String>,
    /// Conjuncts that do: applied after it (Spark pushes the others below the watermark).
    pub timed: Vec<String>,
    pub keys: Vec<String>,
    pub aggregates: Vec<(Aggregate, Option<String>)>,
    pub outputs: Vec<(String, Output)>,
}

/// Hidden column names of the input query.
pub const TIME: &str = "__t";
pub const KEPT: &str = "__kept";

impl WindowPlan {
    /// How many columns [`Self::input_sql`] puts before the source's own.
    pub fn hidden(&self, dedup: &[String]) -> usize {
        2 + self.keys.len() + dedup.len() + self.aggregates.len()
    }

    /// The query DataFusion runs over the new rows: the event time, whether the timed
    /// conjuncts hold, the group keys, the duplicate keys and the aggregates' inputs, then, with
    /// `own`, the source's own columns (a late row is kept with them), in the source's order.
    pub fn input_sql(&self, dedup: &[String], own: bool) -> String {
        let mut columns = vec![
            format!("{} AS \"{TIME}\"", self.watermark.column),
            match self.timed.is_empty() {
                true => format!("TRUE AS \"{KEPT}\""),
                false => format!(
                    "COALESCE(({}), FALSE) AS \"{KEPT}\"",
                    self.timed.join(") AND (")
                ),
            },
        ];
        columns.extend(
            self.keys
                .iter()
                .enumerate()
                .map(|(i, k)| format!("{k} AS \"__k{i}\"")),
        );
        columns.extend(
            dedup
                .iter()
                .enumerate()
                .map(|(i, d)| format!("{d} AS \"__d{i}\"")),
        );
        for (i, (_, input)) in self.aggregates.iter().enumerate() {
            let input = input.as_deref().unwrap_or("NULL");
            columns.push(format!("{input} AS \"__a{i}\""));
        }
        if own {
            columns.push("*".into());
        }
        let mut sql = format!("SELECT {} FROM {}", columns.join(", "), self.from);
        if !self.plain.is_empty() {
            sql.push_str(&format!(" WHERE ({})", self.plain.join(") AND (")));
        }
        sql
    }
}

/// Whether the query aggregates (a `GROUP BY`, or an aggregate function in its select list).
pub fn aggregates(query: &Query) -> bool {
    let SetExpr::Select(select) = query.body.as_ref() else {
        return false;
    };
    let grouped = matches!(&select.group_by, GroupByExpr::Expressions(e, _) if !e.is_empty())
        || matches!(select.group_by, GroupByExpr::All(_));
    grouped
        || select.projection.iter().any(|item| match item {
            SelectItem::UnnamedExpr(e) | SelectItem::ExprWithAlias { expr: e, .. } => {
                aggregate_of(e).is_some()
            }
            _ => false,
        })
}

/// Whether the query groups by `window(...)`.
pub fn groups_by_window(query: &Query) -> bool {
    let SetExpr::Select(select) = query.body.as_ref() else {
        return false;
    };
    match &select.group_by {
        GroupByExpr::Expressions(groups, _) => groups
            .iter()
            .any(|g| matches!(window_call(g), Ok(Some(_)) | Err(_))),
        GroupByExpr::All(_) => false,
    }
}

/// The windowed plan of `query`, which has `watermark`; `Ok(None)` when it does not group by a
/// window. What Spark's append mode refuses is refused, saying why.
pub fn plan(query: &Query, watermark: &Watermark) -> Result<Option<WindowPlan>, String> {
    let SetExpr::Select(select) = query.body.as_ref() else {
        return Ok(None);
    };
    let GroupByExpr::Expressions(groups, _) = &select.group_by else {
        return Err(
            "GROUP BY ALL is not supported with a watermark: name the window and keys".into(),
        );
    };
    let mut window = None;
    let mut keys = vec![];
    for group in groups {
        match window_call(group)? {
            Some(found) if window.is_none() => window = Some(found),
            Some(_) => return Err("a windowed flow groups by one window".into()),
            None => keys.push(group.to_string()),
        }
    }
    let Some((column, width)) = window else {
        if aggregates(query) {
            return Err(format!(
                "an aggregation over a stream is written once per window in append mode: group by \
                 window({}, '1 hour') as well",
                watermark.column
            ));
        }
        return Ok(None);
    };
    if !column.eq_ignore_ascii_case(&watermark.column) {
        return Err(format!(
            "the window is over {column} but the watermark over {}: they must be the same column",
            watermark.column
        ));
    }
    if query.order_by.is_some() || query.limit_clause.is_some() || select.having.is_some() {
        return Err(
            "ORDER BY, LIMIT and HAVING are not supported in a windowed streaming table \
                    (append mode writes each window once)"
                .into(),
        );
    }
    if select.distinct.is_some() {
        return Err("SELECT DISTINCT is not supported in a windowed streaming table".into());
    }
    let (mut plain, mut timed) = (vec![], vec![]);
    if let Some(selection) = &select.selection {
        for conjunct in conjuncts(selection) {
            match mentions(conjunct, &column) {
                true => timed.push(conjunct.to_string()),
                false => plain.push(conjunct.to_string()),
            }
        }
    }
    let mut aggregates = vec![];
    let mut outputs = vec![];
    for item in &select.projection {
        let (expr, alias) = match item {
            SelectItem::UnnamedExpr(e) => (e, None),
            SelectItem::ExprWithAlias { expr, alias } => (expr, Some(alias.value.clone())),
            other => return Err(format!("{other} is not a window, a key or an aggregate")),
        };
        let output = if let Some(edge) = window_edge(expr)? {
            edge
        } else if let Some(found) = aggregate_of(expr) {
            let (aggregate, input) = found?;
            aggregates.push((aggregate, input));
            Output::Aggregate(aggregates.len() - 1)
        } else if let Some(i) = keys.iter().position(|k| *k == expr.to_string()) {
            Output::Key(i)
        } else {
            return Err(format!(
                "{expr} is neither grouped nor aggregated: group by it, or aggregate it"
            ));
        };
        let name = alias.unwrap_or_else(|| match expr {
            Expr::Identifier(i) => i.value.clone(),
            other => other.to_string(),
        });
        outputs.push((name, output));
    }
    Ok(Some(WindowPlan {
        watermark: watermark.clone(),
        width,
        from: select
            .from
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join(", "),
        plain,
        timed,
        keys,
        aggregates,
        outputs,
    }))
}

/// `window(col, 'n unit')`: its column and width.
fn window_call(expr: &Expr) -> Result<Option<(String, i64)>, String> {
    let Expr::Function(f) = expr else {
        return Ok(None);
    };
    if !f.name.to_string().eq_ignore_ascii_case("window") {
        return Ok(None);
    }
    let args = match &f.args {
        FunctionArguments::List(list) => &list.args,
        _ => return Err("window(column, 'n unit')".into()),
    };
    match args.as_slice() {
        [
            FunctionArg::Unnamed(FunctionArgExpr::Expr(Expr::Identifier(column))),
            FunctionArg::Unnamed(FunctionArgExpr::Expr(Expr::Value(width))),
        ] => match &width.value {
            Value::SingleQuotedString(text) => Ok(Some((
                column.value.clone(),
                duration_text(text).map_err(|e| format!("window: {e}"))?,
            ))),
            _ => Err("window's width is a quoted duration such as '1 hour'".into()),
        },
        [_, _, ..] if args.len() > 2 => Err(
            "sliding windows (a slide, a start offset) are not supported: window(column, 'n unit')"
                .into(),
        ),
        _ => Err("window(column, 'n unit'), the column an event time".into()),
    }
}

/// `window(...).start`, `window.start` and their `end`.
fn window_edge(expr: &Expr) -> Result<Option<Output>, String> {
    let edge = |name: &str| match name.to_lowercase().as_str() {
        "start" => Ok(Some(Output::Start)),
        "end" => Ok(Some(Output::End)),
        other => Err(format!("a window has start and end, not {other}")),
    };
    match expr {
        Expr::CompoundIdentifier(parts)
            if parts.len() == 2 && parts[0].value.eq_ignore_ascii_case("window") =>
        {
            edge(&parts[1].value)
        }
        Expr::CompoundFieldAccess { root, access_chain } if window_call(root)?.is_some() => {
            match access_chain.as_slice() {
                [datafusion::sql::sqlparser::ast::AccessExpr::Dot(Expr::Identifier(i))] => {
                    edge(&i.value)
                }
                _ => Err("a window has start and end: window(...).start".into()),
            }
        }
        Expr::Function(_) if window_call(expr)?.is_some() => {
            Err("select window(...).start or window(...).end: the window itself is a struct".into())
        }
        _ => Ok(None),
    }
}

/// An aggregate call: which, and its input's SQL (`None` for `count(*)`).
fn aggregate_of(expr: &Expr) -> Option<Result<(Aggregate, Option<String>), String>> {
    let Expr::Function(f) = expr else {
        return None;
    };
    let name = f.name.to_string().to_lowercase();
    let aggregate = match name.as_str() {
        "count" => Aggregate::Count,
        "count_if" => Aggregate::CountIf,
        "sum" => Aggregate::Sum,
        "min" => Aggregate::Min,
        "max" => Aggregate::Max,
        "avg" | "mean" => Aggregate::Avg,
        _ => return None,
    };
    let FunctionArguments::List(list) = &f.args else {
        return Some(Err(format!("{name} takes one argument")));
    };
    if matches!(list.duplicate_treatment, Some(DuplicateTreatment::Distinct)) {
        return Some(Err(format!(
            "{name}(DISTINCT ...) is not supported in append mode, as in Spark"
        )));
    }
    Some(match list.args.as_slice() {
        [FunctionArg::Unnamed(FunctionArgExpr::Wildcard)] if aggregate == Aggregate::Count => {
            Ok((Aggregate::CountAll, None))
        }
        [FunctionArg::Unnamed(FunctionArgExpr::Expr(e))] => Ok((aggregate, Some(e.to_string()))),
        _ => Err(format!("{name} takes one argument")),
    })
}

/// The `AND`ed parts of a condition.
fn conjuncts(expr: &Expr) -> Vec<&Expr> {
    match expr {
        Expr::BinaryOp {
            left,
            op: datafusion::sql::sqlparser::ast::BinaryOperator::And,
            right,
        } => {
            let mut parts = conjuncts(left);
            parts.extend(conjuncts(right));
            parts
        }
        Expr::Nested(inner) => conjuncts(inner),
        other => vec![other],
    }
}

/// Whether `expr` refers to `column` (by name, any qualifier).
fn mentions(expr: &Expr, column: &str) -> bool {
    use datafusion::sql::sqlparser::ast::Visit;
    struct Finds<'a>(&'a str);
    impl datafusion::sql::sqlparser::ast::Visitor for Finds<'_> {
        type Break = ();
        fn pre_visit_expr(&mut self, expr: &Expr) -> std::ops::ControlFlow<()> {
            let named = match expr {
                Expr::Identifier(i) => Some(&i.value),
                Expr::CompoundIdentifier(parts) => parts.last().map(|i| &i.value),
                _ => None,
            };
            match named.is_some_and(|n| n.eq_ignore_ascii_case(self.0)) {
                true => std::ops::ControlFlow::Break(()),
                false => std::ops::ControlFlow::Continue(()),
            }
        }
    }
    expr.visit(&mut Finds(column)).is_break()
}
