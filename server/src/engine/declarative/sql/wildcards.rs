//! Spark's `withColumnRenamed` and `withColumn` keep every other column in its place; the
//! Python translator writes them as `SELECT * RENAME (a AS b)` and `SELECT * REPLACE (e AS c)`.
//! DataFusion plans neither as Spark means them (RENAME is not implemented; REPLACE passes over
//! a column the input lacks, where `withColumn` adds it), so before planning, such a `*` is
//! written out as the input's columns, in order: the input planned first, over the same
//! session. Every other query goes to DataFusion as it is.

use std::future::Future;
use std::pin::Pin;

use datafusion::dataframe::DataFrame;
use datafusion::error::{DataFusionError, Result};
use datafusion::prelude::SessionContext;
use datafusion::sql::sqlparser::ast::{
    Expr, Ident, Query, RenameSelectItem, SelectItem, SetExpr, Statement, TableFactor,
    WildcardAdditionalOptions,
};
use datafusion::sql::sqlparser::dialect::GenericDialect;
use datafusion::sql::sqlparser::parser::Parser;

type Planned<'a> = Pin<Box<dyn Future<Output = Result<()>> + Send + 'a>>;

/// `ctx.sql(sql)`, with each `* RENAME (...)` and `* REPLACE (...)` written out first.
pub async fn plan(ctx: &SessionContext, sql: &str) -> Result<DataFrame> {
    let upper = sql.to_ascii_uppercase();
    if !upper.contains("RENAME") && !upper.contains("REPLACE") {
        return ctx.sql(sql).await;
    }
    let mut statement = Parser::new(&GenericDialect {})
        .try_with_sql(sql)
        .and_then(|mut p| p.parse_statement())
        .map_err(|e| DataFusionError::SQL(Box::new(e), None))?;
    let Statement::Query(query) = &mut statement else {
        return ctx.sql(sql).await;
    };
    if !written_out(ctx, query, None).await? {
        return ctx.sql(sql).await;
    }
    ctx.sql(&statement.to_string()).await
}

/// Writes out the wildcards of `query` and of the queries it reads, innermost first; whether
/// there were any.
fn written_out<'a>(
    ctx: &'a SessionContext,
    query: &'a mut Query,
    with: Option<String>,
) -> Pin<Box<dyn Future<Output = Result<bool>> + Send + 'a>> {
    Box::pin(async move {
        let mut any = false;
        if let Some(ctes) = &mut query.with {
            for cte in &mut ctes.cte_tables {
                any |= written_out(ctx, &mut cte.query, with.clone()).await?;
            }
        }
        // The query's CTEs are in scope of what it reads: the input is planned with them.
        let with = query.with.as_ref().map(|w| w.to_string()).or(with);
        set(ctx, &mut query.body, &mut any, with).await?;
        Ok(any)
    })
}

fn set<'a>(
    ctx: &'a SessionContext,
    body: &'a mut SetExpr,
    any: &'a mut bool,
    with: Option<String>,
) -> Planned<'a> {
    Box::pin(async move {
        match body {
            SetExpr::Query(q) => *any |= written_out(ctx, q, with).await?,
            SetExpr::SetOperation { left, right, .. } => {
                set(ctx, left, any, with.clone()).await?;
                set(ctx, right, any, with).await?;
            }
            SetExpr::Select(select) => {
                for from in &mut select.from {
                    for factor in std::iter::once(&mut from.relation)
                        .chain(from.joins.iter_mut().map(|j| &mut j.relation))
                    {
                        if let TableFactor::Derived { subquery, .. } = factor {
                            *any |= written_out(ctx, subquery, with.clone()).await?;
                        }
                    }
                }
                // Only the shape the Python translator writes, `SELECT * ... FROM (query) AS q`,
                // is written out; any other (a table, a join, several relations) goes to
                // DataFusion as it is, which plans `* REPLACE` of the columns it has.
                let [from] = select.from.as_slice() else {
                    return Ok(());
                };
                let derived = matches!(from.relation, TableFactor::Derived { .. });
                if !derived
                    || !from.joins.is_empty()
                    || !select.projection.iter().any(spark_wildcard)
                {
                    return Ok(());
                }
                let with = with.map(|w| format!("{w} ")).unwrap_or_default();
                let input = ctx.sql(&format!("{with}SELECT * FROM {from}")).await?;
                let columns: Vec<String> = input
                    .schema()
                    .fields()
                    .iter()
                    .map(|f| f.name().clone())
                    .collect();
                let mut projection = vec![];
                for item in std::mem::take(&mut select.projection) {
                    match item {
                        SelectItem::Wildcard(options) if spark_options(&options) => {
                            projection.extend(expanded(&columns, options)?);
                        }
                        item => projection.push(item),
                    }
                }
                select.projection = projection;
                *any = true;
            }
            _ => {}
        }
        Ok(())
    })
}

fn spark_wildcard(item: &SelectItem) -> bool {
    matches!(item, SelectItem::Wildcard(o) if spark_options(o))
}

fn spark_options(options: &WildcardAdditionalOptions) -> bool {
    options.opt_rename.is_some() || options.opt_replace.is_some()
}

/// `*` with its RENAME and REPLACE as the input's columns in order, each renamed or replaced
/// where named; a REPLACE of a column the input lacks adds it at the end (`withColumn`).
fn expanded(columns: &[String], options: WildcardAdditionalOptions) -> Result<Vec<SelectItem>> {
    if options.opt_except.is_some() || options.opt_exclude.is_some() || options.opt_ilike.is_some()
    {
        return Err(DataFusionError::NotImplemented(
            "* RENAME or * REPLACE with EXCEPT, EXCLUDE or ILIKE".into(),
        ));
    }
    let renames = match options.opt_rename {
        Some(RenameSelectItem::Single(one)) => vec![one],
        Some(RenameSelectItem::Multiple(many)) => many,
        None => vec![],
    };
    let mut replaces: Vec<_> = options
        .opt_replace
        .map(|r| r.items.into_iter().map(|b| *b).collect())
        .unwrap_or_default();
    let mut items = vec![];
    for column in columns {
        let ident = Ident::with_quote('"', column);
        if let Some(at) = replaces.iter().position(|r| names(&r.column_name, column)) {
            let replace = replaces.remove(at);
            items.push(SelectItem::ExprWithAlias {
                expr: replace.expr,
                alias: ident,
            });
        } else if let Some(rename) = renames.iter().find(|r| names(&r.ident, column)) {
            items.push(SelectItem::ExprWithAlias {
                expr: Expr::Identifier(ident),
                alias: rename.alias.clone(),
            });
        } else {
            items.push(SelectItem::UnnamedExpr(Expr::Identifier(ident)));
        }
    }
    // Spark's withColumnRenamed passes over a name the frame lacks; withColumn adds it.
    items.extend(replaces.into_iter().map(|r| SelectItem::ExprWithAlias {
        expr: r.expr,
        alias: r.column_name,
    }));
    Ok(items)
}

/// Whether `ident` names `column`, as DataFusion resolves names: an unquoted name in lower case.
fn names(ident: &Ident, column: &str) -> bool {
    match ident.quote_style {
        Some(_) => ident.value == column,
        None => ident.value.to_lowercase() == column,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn columns(sql: &str) -> Vec<(String, String)> {
        let ctx = SessionContext::new();
        ctx.sql("CREATE TABLE t AS VALUES (1, 'a', 2.5)")
            .await
            .unwrap()
            .collect()
            .await
            .unwrap();
        let df = plan(&ctx, sql).await.unwrap();
        let names: Vec<String> = df
            .schema()
            .fields()
            .iter()
            .map(|f| f.name().clone())
            .collect();
        let batches = df.collect().await.unwrap();
        let row = arrow::util::pretty::pretty_format_batches(&batches)
            .unwrap()
            .to_string();
        let values: Vec<String> = row
            .lines()
            .nth(3)
            .unwrap()
            .split('|')
            .map(|v| v.trim().to_string())
            .filter(|v| !v.is_empty())
            .collect();
        names.into_iter().zip(values).collect()
    }

    #[tokio::test]
    async fn rename_keeps_each_column_in_its_place() {
        let got = columns("SELECT * RENAME (column2 AS letter) FROM (SELECT * FROM t) AS q").await;
        let names: Vec<&str> = got.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names, ["column1", "letter", "column3"]);
        assert_eq!(got[1].1, "a");
    }

    #[tokio::test]
    async fn rename_of_a_missing_column_changes_nothing() {
        let got = columns("SELECT * RENAME (nothing AS x) FROM (SELECT * FROM t) AS q").await;
        let names: Vec<&str> = got.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names, ["column1", "column2", "column3"]);
    }

    #[tokio::test]
    async fn replace_replaces_in_place_or_adds_at_the_end() {
        let got = columns(
            "SELECT * REPLACE (column1 + 1 AS column1, 'new' AS added) FROM (SELECT * FROM t) AS q",
        )
        .await;
        let names: Vec<&str> = got.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names, ["column1", "column2", "column3", "added"]);
        assert_eq!(got[0].1, "2");
        assert_eq!(got[3].1, "new");
    }

    #[tokio::test]
    async fn a_cte_is_in_scope_and_a_plain_tables_replace_is_datafusions() {
        let got = columns(
            "WITH c AS (SELECT * FROM t) SELECT * RENAME (column2 AS x) FROM (SELECT * FROM c) AS q",
        )
        .await;
        let names: Vec<&str> = got.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names, ["column1", "x", "column3"]);
        let got = columns("SELECT * REPLACE (column1 + 1 AS column1) FROM t").await;
        assert_eq!(got[0], ("column1".to_string(), "2".to_string()));
    }

    #[tokio::test]
    async fn nested_renames_are_written_out_innermost_first() {
        let got = columns(
            "SELECT * RENAME (b AS c) FROM (SELECT * RENAME (column2 AS b) FROM (SELECT * FROM t) AS q) AS q",
        )
        .await;
        let names: Vec<&str> = got.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names, ["column1", "c", "column3"]);
    }
}
