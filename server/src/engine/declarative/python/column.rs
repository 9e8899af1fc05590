//! Column expressions of the DataFrame API as SQL: `F.col("a")`, `"a"` where a column is meant,
//! `F.lit(1)`, `F.expr("a + 1")`, `F.to_date("created_at")`, `F.count("*")`, operators,
//! `.alias(...)`, `.cast(...)`; and the constants a file defines.

use std::collections::BTreeMap;

use tree_sitter::Node;

use super::Source;
use crate::engine::declarative::parse::ParseError;

/// The modules a pipeline file names its decorators and readers by.
pub const MODULES: [&str; 2] = ["dp", "dlt"];

/// The `F.` functions that are SQL functions of the same name and meaning.
const FUNCTIONS: [&str; 30] = [
    "to_date",
    "to_timestamp",
    "date_trunc",
    "year",
    "month",
    "dayofmonth",
    "hour",
    "upper",
    "lower",
    "trim",
    "length",
    "coalesce",
    "concat",
    "abs",
    "round",
    "floor",
    "ceil",
    "count",
    "count_if",
    "sum",
    "min",
    "max",
    "avg",
    "mean",
    "current_timestamp",
    "current_date",
    "from_json",
    "window",
    "when",
    "datediff",
];

/// Marks a module-level constant that holds a number (`VAT = 1.2`), as the file's constants
/// are kept as text: beside a column it is that number, not the text '1.2'.
pub const NUMBER: char = '\u{1}';

/// A literal's or a named constant's value: a string's text, a number as written.
pub fn constant(
    source: Source,
    node: Node,
    constants: &BTreeMap<String, String>,
) -> Result<String, ParseError> {
    match node.kind() {
        "string" => string(source, node, constants),
        "concatenated_string" => {
            let mut out = String::new();
            let mut cursor = node.walk();
            for part in node.named_children(&mut cursor) {
                out.push_str(&string(source, part, constants)?);
            }
            Ok(out)
        }
        "integer" | "float" => Ok(source.text(node).to_string()),
        "identifier" => constants
            .get(source.text(node))
            .map(|v| v.trim_start_matches(NUMBER).to_string())
            .ok_or_else(|| {
                source.error(
                    node,
                    format!(
                        "{} is not a constant this file defines (NAME = \"text\" above it)",
                        source.text(node)
                    ),
                )
            }),
        _ => Err(source.error(node, "a text or a number is expected here".into())),
    }
}

/// A string literal's text (no f-strings, no byte strings).
/// A string literal's text; in an f-string, `{NAME}` is the constant NAME's text (nothing else
/// is followed: a conversion or a format, an expression, a name that is not a constant).
fn string(
    source: Source,
    node: Node,
    constants: &BTreeMap<String, String>,
) -> Result<String, ParseError> {
    let raw = source.text(node);
    let prefix: String = raw
        .chars()
        .take_while(|c| c.is_ascii_alphabetic())
        .collect();
    if prefix.to_ascii_lowercase().contains('b') {
        return Err(source.error(node, "byte strings are not followed: write the text".into()));
    }
    let mut out = String::new();
    let mut cursor = node.walk();
    for part in node.named_children(&mut cursor) {
        match part.kind() {
            "string_content" => out.push_str(source.text(part)),
            "escape_sequence" => out.push_str(match source.text(part) {
                "\\n" => "\n",
                "\\t" => "\t",
                "\\\\" => "\\",
                "\\'" => "'",
                "\\\"" => "\"",
                other => other,
            }),
            "string_start" | "string_end" => {}
            "escape_interpolation" => out.push_str(&source.text(part)[..1]),
            "interpolation" => {
                let named = part.child_by_field_name("expression");
                // `{`, the name, `}`: no `=`, conversion or format.
                let plain = part.named_child_count() == 1 && part.child_count() == 3;
                match named.filter(|e| plain && e.kind() == "identifier") {
                    Some(name) => out.push_str(&constant(source, name, constants)?),
                    None => {
                        return Err(source.error(
                            part,
                            "in an f-string, only {NAME} of a constant this file defines is followed".into(),
                        ));
                    }
                }
            }
            other => {
                return Err(source.error(part, format!("a {other} in a string is not followed")));
            }
        }
    }
    Ok(out)
}

/// `text` as a SQL string literal.
pub fn quoted(text: &str) -> String {
    format!("'{}'", text.replace('\'', "''"))
}

/// A column's name as SQL: a plain name as it is, any other in backquotes.
pub fn name(source: Source, node: Node, text: &str) -> Result<String, ParseError> {
    let word = |w: &str| {
        w.chars()
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
            && w.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
    };
    // `e.order_id`, `window.start`, `e.*`: a struct's field, or all of them.
    let path = text.contains('.') && {
        let parts: Vec<&str> = text.split('.').collect();
        let (last, first) = parts.split_last().expect("one part at least");
        first.iter().all(|p| word(p)) && (word(last) || *last == "*")
    };
    match (word(text) || path, text == "*") {
        (_, true) => Ok("*".into()),
        (true, _) => Ok(text.to_string()),
        _ if !text.contains('`') => Ok(format!("`{text}`")),
        _ => Err(source.error(node, format!("the column name {text:?} cannot be written"))),
    }
}

/// A column expression as SQL. A bare string names a column (as the `F.` functions read it).
pub fn column(
    source: Source,
    node: Node,
    constants: &BTreeMap<String, String>,
) -> Result<String, ParseError> {
    match node.kind() {
        "string" | "concatenated_string" | "identifier" => {
            let text = constant(source, node, constants)?;
            name(source, node, &text)
        }
        "integer" | "float" => Ok(source.text(node).to_string()),
        "true" => Ok("TRUE".into()),
        "false" => Ok("FALSE".into()),
        "none" => Ok("NULL".into()),
        "parenthesized_expression" => match node.named_child(0) {
            Some(inner) => Ok(format!("({})", column(source, inner, constants)?)),
            None => Err(source.error(node, "an empty expression".into())),
        },
        "comparison_operator" | "binary_operator" | "boolean_operator" => {
            operator(source, node, constants)
        }
        "unary_operator" | "not_operator" => {
            let operand = node
                .child_by_field_name("argument")
                .or_else(|| node.named_child(0))
                .ok_or_else(|| source.error(node, "an operator without an operand".into()))?;
            let inner = column(source, operand, constants)?;
            match source.text(node).trim_start().chars().next() {
                Some('~') | Some('n') => Ok(format!("NOT ({inner})")),
                Some('-') => Ok(format!("-({inner})")),
                _ => Err(source.error(node, "use ~ for NOT, or - for a negative".into())),
            }
        }
        "call" => call(source, node, constants),
        _ => Err(source.error(
            node,
            format!(
                "{:?} is not a column expression Reckon follows: F.col, F.lit, F.expr, the F. \
                 functions, operators, .alias and .cast are",
                source.text(node)
            ),
        )),
    }
}

fn operator(
    source: Source,
    node: Node,
    constants: &BTreeMap<String, String>,
) -> Result<String, ParseError> {
    let mut cursor = node.walk();
    let children: Vec<Node> = node.children(&mut cursor).collect();
    let [left, op, right] = children.as_slice() else {
        return Err(source.error(node, "a chained comparison is not followed: use &".into()));
    };
    let sql = match source.text(*op) {
        "==" => "=",
        "!=" => "<>",
        "&" | "and" => "AND",
        "|" | "or" => "OR",
        op @ ("<" | ">" | "<=" | ">=" | "+" | "-" | "*" | "/" | "%") => op,
        other => return Err(source.error(*op, format!("the operator {other} is not followed"))),
    };
    // Beside a column, a Python value is a value, as in Spark: `F.col("k") == "b"` compares
    // with the text 'b', not with a column b.
    let operand = |node: Node| match node.kind() {
        "string" | "concatenated_string" | "identifier" => literal(source, node, constants),
        _ => column(source, node, constants),
    };
    Ok(format!("{} {sql} {}", operand(*left)?, operand(*right)?))
}

/// The arguments of a call, positional only.
pub fn arguments<'t>(source: Source, call: Node<'t>) -> Result<Vec<Node<'t>>, ParseError> {
    let Some(list) = call.child_by_field_name("arguments") else {
        return Ok(vec![]);
    };
    let mut cursor = list.walk();
    let args: Vec<Node> = list
        .named_children(&mut cursor)
        .filter(|n| n.kind() != "comment")
        .collect();
    if let Some(splat) = args
        .iter()
        .find(|a| matches!(a.kind(), "list_splat" | "dictionary_splat"))
    {
        return Err(source.error(*splat, "*args and **kwargs are not followed".into()));
    }
    Ok(args)
}

fn call(
    source: Source,
    node: Node,
    constants: &BTreeMap<String, String>,
) -> Result<String, ParseError> {
    let function = node
        .child_by_field_name("function")
        .ok_or_else(|| source.error(node, "a call without a function".into()))?;
    let args = arguments(source, node)?;
    if function.kind() != "attribute" {
        return Err(source.error(function, "call the F. functions as F.name(...)".into()));
    }
    let (object, method) = (
        function
            .child_by_field_name("object")
            .expect("an attribute has an object"),
        function
            .child_by_field_name("attribute")
            .expect("an attribute has a name"),
    );
    let method_name = source.text(method);
    let one = |what: &str| -> Result<Node, ParseError> {
        match args.as_slice() {
            [one] => Ok(*one),
            _ => Err(source.error(node, format!("{method_name} takes {what}"))),
        }
    };
    // A column's own methods.
    if source.text(object) != "F" {
        let on = column(source, object, constants)?;
        return match method_name {
            "alias" | "name" => {
                let alias = constant(source, one("one name")?, constants)?;
                Ok(format!("{on} AS {}", name(source, method, &alias)?))
            }
            "cast" | "astype" => {
                let to = constant(source, one("one type")?, constants)?;
                Ok(format!("CAST({on} AS {to})"))
            }
            "isNull" => Ok(format!("{on} IS NULL")),
            "isNotNull" => Ok(format!("{on} IS NOT NULL")),
            "isin" => {
                let values = args
                    .iter()
                    .map(|a| literal(source, *a, constants))
                    .collect::<Result<Vec<_>, _>>()?;
                Ok(format!("{on} IN ({})", values.join(", ")))
            }
            other => Err(source.error(
                method,
                format!("the column method {other} is not followed: alias, cast, isNull, isNotNull and isin are"),
            )),
        };
    }
    match method_name {
        "col" | "column" => column(source, one("one column name")?, constants),
        "lit" => literal(source, one("one value")?, constants),
        "expr" => constant(source, one("one SQL expression")?, constants),
        "count" if args.len() == 1 && source.text(args[0]).trim_matches(['"', '\'']) == "*" => {
            Ok("count(*)".into())
        }
        f if FUNCTIONS.contains(&f) => {
            // Arguments Spark reads as values, not columns: a window's durations, a schema, a
            // unit or a format.
            let literal: &[usize] = match f {
                "window" => &[1, 2, 3],
                "from_json" | "to_date" | "to_timestamp" | "round" => &[1],
                "date_trunc" => &[0],
                // `F.when(condition, value)`: the value, as Spark takes a Python value.
                "when" => &[1],
                _ => &[],
            };
            let inner = args
                .iter()
                .enumerate()
                .map(|(i, a)| match literal.contains(&i) {
                    true => self::literal(source, *a, constants),
                    false => column(source, *a, constants),
                })
                .collect::<Result<Vec<_>, _>>()?;
            Ok(format!("{f}({})", inner.join(", ")))
        }
        other => Err(source.error(
            method,
            format!(
                "F.{other} is not followed; the F. functions Reckon reads are col, lit, expr, {}",
                FUNCTIONS.join(", ")
            ),
        )),
    }
}

/// A Python literal as a SQL value.
fn literal(
    source: Source,
    node: Node,
    constants: &BTreeMap<String, String>,
) -> Result<String, ParseError> {
    match node.kind() {
        "integer" | "float" => Ok(source.text(node).to_string()),
        "true" => Ok("TRUE".into()),
        "false" => Ok("FALSE".into()),
        "none" => Ok("NULL".into()),
        // A constant that holds a number (`VAT = 1.2`) is that number.
        "identifier" => match constants.get(source.text(node)) {
            Some(v) if v.starts_with(NUMBER) => Ok(v.trim_start_matches(NUMBER).to_string()),
            _ => Ok(quoted(&constant(source, node, constants)?)),
        },
        _ => Ok(quoted(&constant(source, node, constants)?)),
    }
}

/// A call's positional arguments, and its keyword ones by name.
pub type Arguments<'t> = (Vec<Node<'t>>, Vec<(String, Node<'t>)>);

/// Positional arguments, and keyword ones by name.
pub fn split<'t>(source: Source, args: &[Node<'t>]) -> Result<Arguments<'t>, ParseError> {
    let (mut positional, mut keywords) = (vec![], vec![]);
    for arg in args {
        match arg.kind() {
            "keyword_argument" => {
                let key = arg
                    .child_by_field_name("name")
                    .map(|n| source.text(n).to_string());
                let value = arg.child_by_field_name("value");
                if let (Some(key), Some(value)) = (key, value) {
                    keywords.push((key, value));
                }
            }
            _ => positional.push(*arg),
        }
    }
    Ok((positional, keywords))
}
