//! `read_kafka(subscribe => 'orders', startingOffsets => 'earliest', bootstrapServers => '...')`
//! as a source (PIPELINES §8), with Databricks' option names. The topic is the learner's name for
//! it; the lab maps it to its own (`orders` reads `orders.<lab>` in lab `<lab>`).

use datafusion::sql::sqlparser::ast::{
    Expr, Function, FunctionArg, FunctionArgExpr, FunctionArguments, Value,
};

use super::Source;

/// Where a stream's first read of a partition starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum Starting {
    /// At the log's start: every message the topic holds.
    Earliest,
    /// At the log's end when the flow first runs: only messages sent after.
    Latest,
}

/// The options `read_kafka` takes; any other is refused, naming it.
const OPTIONS: &str = "subscribe, startingOffsets and bootstrapServers";

/// `read_kafka(...)`'s options as a source.
pub fn source(call: &Function) -> Result<Source, String> {
    let FunctionArguments::List(list) = &call.args else {
        return Err("read_kafka needs subscribe => 'topic'".into());
    };
    let (mut topic, mut starting, mut servers) = (None, Starting::Earliest, None);
    for arg in &list.args {
        let FunctionArg::Named { name, arg, .. } = arg else {
            return Err(format!(
                "read_kafka takes named options ({OPTIONS}), such as subscribe => 'orders'; got {arg}"
            ));
        };
        let value = text(arg).ok_or_else(|| format!("read_kafka: {name} takes a quoted text"))?;
        match name.value.to_lowercase().as_str() {
            "subscribe" => topic = Some(value),
            "startingoffsets" => {
                starting = match value.to_lowercase().as_str() {
                    "earliest" => Starting::Earliest,
                    "latest" => Starting::Latest,
                    other => {
                        return Err(format!(
                            "read_kafka: startingOffsets is 'earliest' or 'latest', not '{other}' \
                             (offsets per partition are not supported)"
                        ));
                    }
                }
            }
            "bootstrapservers" => servers = Some(value),
            "subscribepattern" | "assign" => {
                return Err(format!(
                    "read_kafka: {name} is not supported; name one topic with subscribe => 'topic'"
                ));
            }
            other => {
                return Err(format!(
                    "read_kafka has no option {other}; it takes {OPTIONS}"
                ));
            }
        }
    }
    let topic = topic.ok_or("read_kafka needs subscribe => 'topic'")?;
    if topic.contains(',') {
        return Err("read_kafka reads one topic: subscribe => 'orders'".into());
    }
    crate::config::validate_topic(&topic)
        .map_err(|e| format!("read_kafka: subscribe: {}", e.why))?;
    Ok(Source::Kafka {
        topic,
        starting,
        servers,
    })
}

fn text(arg: &FunctionArgExpr) -> Option<String> {
    match arg {
        FunctionArgExpr::Expr(Expr::Value(v)) => match &v.value {
            Value::SingleQuotedString(s) | Value::DoubleQuotedString(s) => Some(s.clone()),
            _ => None,
        },
        _ => None,
    }
}
