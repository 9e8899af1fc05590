//! `e.*` on a struct, as Spark reads it: every field of `e` as a column of its name (and `e.f`
//! alone named `f`). DataFusion
//! reads `e.*` as the columns of a table `e`, so the star of a column named by a
//! `from_json(..., 'DDL') AS e` (the only structs a project's SQL makes) is written out here,
//! field by field, before planning. The query's nesting was bounded when its file was read
//! (`parse/depth.rs`), so the walk below is too.

use std::collections::BTreeMap;

use datafusion::sql::sqlparser::ast::{
    Expr, FunctionArg, FunctionArgExpr, FunctionArguments, Ident, Query, Select, SelectItem,
    SelectItemQualifiedWildcardKind, SetExpr, TableFactor, Value,
};

use crate::engine::declarative::files::schema;

/// Writes out `alias.*` wherever `alias` names a `from_json` struct of the query.
pub fn expand_stars(query: &mut Query) {
    let mut structs = BTreeMap::new();
    each_select(query, &mut |select| {
        for item in &select.projection {
            if let SelectItem::ExprWithAlias { expr, alias } = item
                && let Some(fields) = from_json_fields(expr)
            {
                structs.insert(alias.value.to_lowercase(), fields);
            }
        }
    });
    if structs.is_empty() {
        return;
    }
    each_select(query, &mut |select| {
        let tables = table_aliases(select);
        let mut projection = Vec::with_capacity(select.projection.len());
        for item in std::mem::take(&mut select.projection) {
            let star_of = match &item {
                SelectItem::QualifiedWildcard(
                    SelectItemQualifiedWildcardKind::ObjectName(name),
                    _,
                ) if name.0.len() == 1 => name.to_string().to_lowercase(),
                _ => String::new(),
            };
            // `e.status` alone is named `status`, as Spark names it.
            if let SelectItem::UnnamedExpr(Expr::CompoundIdentifier(parts)) = &item
                && let [of, field] = parts.as_slice()
                && structs.contains_key(&of.value.to_lowercase())
                && !tables.contains(&of.value.to_lowercase())
            {
                let alias = field.clone();
                let expr = Expr::CompoundIdentifier(parts.clone());
                projection.push(SelectItem::ExprWithAlias { expr, alias });
                continue;
            }
            match structs.get(&star_of) {
                // A table of that name in this FROM keeps its own meaning.
                Some(fields) if !tables.contains(&star_of) => {
                    projection.extend(fields.iter().map(|field| SelectItem::ExprWithAlias {
                        expr: Expr::CompoundIdentifier(vec![
                            Ident::new(&star_of),
                            Ident::with_quote('"', field),
                        ]),
                        alias: Ident::with_quote('"', field),
                    }));
                }
                _ => projection.push(item),
            }
        }
        select.projection = projection;
    });
}

/// The fields of `from_json(x, 'DDL')`, if `expr` is one with a schema that reads.
fn from_json_fields(expr: &Expr) -> Option<Vec<String>> {
    let Expr::Function(f) = expr else {
        return None;
    };
    if !f.name.to_string().eq_ignore_ascii_case("from_json") {
        return None;
    }
    let FunctionArguments::List(list) = &f.args else {
        return None;
    };
    let Some(FunctionArg::Unnamed(FunctionArgExpr::Expr(Expr::Value(v)))) = list.args.get(1) else {
        return None;
    };
    let (Value::SingleQuotedString(ddl) | Value::DoubleQuotedString(ddl)) = &v.value else {
        return None;
    };
    let columns = schema::from_ddl(ddl).ok()?;
    Some(columns.into_iter().map(|c| c.name).collect())
}

/// The names the tables of `select`'s FROM go by.
fn table_aliases(select: &Select) -> Vec<String> {
    let mut names = vec![];
    for from in &select.from {
        for factor in std::iter::once(&from.relation).chain(from.joins.iter().map(|j| &j.relation))
        {
            match factor {
                TableFactor::Table { name, alias, .. } => names.push(
                    alias
                        .as_ref()
                        .map_or_else(|| name.to_string(), |a| a.name.value.clone())
                        .to_lowercase(),
                ),
                TableFactor::Derived { alias: Some(a), .. } => {
                    names.push(a.name.value.to_lowercase())
                }
                _ => {}
            }
        }
    }
    names
}

/// Calls `f` on every SELECT of the query: its body's, its CTEs' and its subqueries in FROM.
fn each_select(query: &mut Query, f: &mut impl FnMut(&mut Select)) {
    if let Some(with) = &mut query.with {
        for cte in &mut with.cte_tables {
            each_select(&mut cte.query, f);
        }
    }
    each_in_body(&mut query.body, f);
}

fn each_in_body(body: &mut SetExpr, f: &mut impl FnMut(&mut Select)) {
    match body {
        SetExpr::Select(select) => {
            for from in &mut select.from {
                let joined = from.joins.iter_mut().map(|j| &mut j.relation);
                for factor in std::iter::once(&mut from.relation).chain(joined) {
                    if let TableFactor::Derived { subquery, .. } = factor {
                        each_select(subquery, f);
                    }
                }
            }
            f(select);
        }
        SetExpr::Query(query) => each_select(query, f),
        SetExpr::SetOperation { left, right, .. } => {
            each_in_body(left, f);
            each_in_body(right, f);
        }
        _ => {}
    }
}
