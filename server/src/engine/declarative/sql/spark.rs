//! Spark's spellings in a query, rewritten for DataFusion: `count_if`, `date_format` with Spark's
//! patterns, the file metadata a
//! `read_files` row carries (`_metadata.file_path`), and `__START_AT`/`__END_AT` in any case.

use datafusion::sql::sqlparser::ast::{
    DataType, Expr, Function, FunctionArg, FunctionArgExpr, FunctionArgumentList,
    FunctionArguments, Ident, ObjectName, Value,
};
use datafusion::sql::sqlparser::dialect::GenericDialect;
use datafusion::sql::sqlparser::parser::Parser;

/// Rewrites one expression of a query, after its children.
pub(super) fn rewrite(expr: &mut Expr) {
    spark_names(expr);
    string_cast(expr);
    file_metadata(expr);
    let column = match expr {
        Expr::Identifier(ident) => Some(ident),
        Expr::CompoundIdentifier(idents) => idents.last_mut(),
        _ => None,
    };
    if let Some(ident) = column {
        scd_column(ident);
    }
}

/// `CAST(x AS STRING)` and `x::string` as Spark casts: bytes that are not UTF-8 become U+FFFD
/// (`functions.rs`), where DataFusion's cast would fail the query.
fn string_cast(expr: &mut Expr) {
    let Expr::Cast {
        expr: inner,
        data_type: DataType::String(_) | DataType::Varchar(_) | DataType::Text,
        format: None,
        ..
    } = expr
    else {
        return;
    };
    let inner = std::mem::replace(inner.as_mut(), Expr::value(Value::Null));
    *expr = Expr::Function(Function {
        name: ObjectName::from(vec![Ident::new(super::functions::SPARK_STRING)]),
        uses_odbc_syntax: false,
        parameters: FunctionArguments::None,
        args: FunctionArguments::List(FunctionArgumentList {
            duplicate_treatment: None,
            args: vec![FunctionArg::Unnamed(FunctionArgExpr::Expr(inner))],
            clauses: vec![],
        }),
        filter: None,
        null_treatment: None,
        over: None,
        within_group: vec![],
    });
}

/// `_metadata.file_path` and `_metadata.file_name` (Spark's file metadata, the path relative to
/// the data folder) and Reckon's `_metadata.line_number`: the columns a file read carries.
fn file_metadata(expr: &mut Expr) {
    let Expr::CompoundIdentifier(idents) = expr else {
        return;
    };
    let [table, field] = idents.as_slice() else {
        return;
    };
    if !table.value.eq_ignore_ascii_case("_metadata") {
        return;
    }
    let column = |name: &str| Expr::Identifier(Ident::with_quote('"', name));
    *expr = match field.value.to_ascii_lowercase().as_str() {
        "file_path" => column("__file"),
        "line_number" => column("__line"),
        "file_name" => match Parser::new(&GenericDialect {})
            .try_with_sql(r#"regexp_replace("__file", '^.*/', '')"#)
            .and_then(|mut p| p.parse_expr())
        {
            Ok(e) => e,
            Err(_) => return,
        },
        _ => return,
    };
}

/// `__START_AT` and `__END_AT` in any case, as Spark reads them: DataFusion would fold an
/// unquoted name to lower case and miss the column.
fn scd_column(ident: &mut Ident) {
    for name in ["__START_AT", "__END_AT"] {
        if ident.quote_style.is_none() && ident.value.eq_ignore_ascii_case(name) {
            *ident = Ident::with_quote('"', name);
        }
    }
}

/// Spark's function names that DataFusion spells otherwise: `count_if(c)` is `count(CASE WHEN
/// c THEN 1 END)`.
fn spark_names(expr: &mut Expr) {
    let Expr::Function(f) = expr else { return };
    let FunctionArguments::List(list) = &f.args else {
        return;
    };
    let name = f.name.to_string().to_ascii_lowercase();
    let text = match (name.as_str(), list.args.as_slice()) {
        ("count_if", [FunctionArg::Unnamed(FunctionArgExpr::Expr(condition))]) => {
            format!("count(CASE WHEN {condition} THEN 1 END)")
        }
        (
            "date_format",
            [
                FunctionArg::Unnamed(FunctionArgExpr::Expr(value)),
                FunctionArg::Unnamed(FunctionArgExpr::Expr(pattern)),
            ],
        ) => {
            let pattern = pattern.to_string();
            let Some(pattern) = pattern
                .strip_prefix('\'')
                .and_then(|p| p.strip_suffix('\''))
            else {
                return;
            };
            format!("to_char({value}, '{}')", chrono_pattern(pattern))
        }
        _ => return,
    };
    if let Ok(rewritten) = Parser::new(&GenericDialect {})
        .try_with_sql(&text)
        .and_then(|mut p| p.parse_expr())
    {
        *expr = rewritten;
    }
}

/// A Spark datetime pattern (`yyyy-MM-dd HH:mm`) as chrono's (`%Y-%m-%d %H:%M`), which
/// DataFusion's `to_char` takes.
pub(super) fn chrono_pattern(spark: &str) -> String {
    let chars: Vec<char> = spark.chars().collect();
    let mut out = String::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let run = chars[i..].iter().take_while(|&&x| x == c).count();
        let piece = match (c, run) {
            ('y', 2) => "%y",
            ('y', _) => "%Y",
            ('M', 1 | 2) => "%m",
            ('M', 3) => "%b",
            ('M', _) => "%B",
            ('d', _) => "%d",
            ('H', _) => "%H",
            ('h', _) => "%I",
            ('m', _) => "%M",
            ('s', _) => "%S",
            ('S', _) => "%3f",
            ('a', _) => "%p",
            ('E', 1..=3) => "%a",
            ('E', _) => "%A",
            ('%', _) => "%%",
            ('\'', _) => "",
            _ => {
                out.extend(std::iter::repeat_n(c, run));
                i += run;
                continue;
            }
        };
        out.push_str(piece);
        i += run;
    }
    out
}
