//! The graph's refusals and its order, on statements parsed from text.

use super::*;
use crate::engine::declarative::parse;

fn graph(sql: &str) -> Result<Graph, ProjectError> {
    build("t".into(), parse::statements("t.sql", sql)?)
}

#[test]
fn flows_run_after_what_they_read_and_otherwise_in_statement_order() {
    let g = graph(
        "CREATE MATERIALIZED VIEW gold AS SELECT count(*) FROM silver;
         CREATE STREAMING TABLE silver AS SELECT * FROM STREAM v;
         CREATE TEMPORARY VIEW v AS SELECT * FROM bronze;
         CREATE STREAMING TABLE bronze AS SELECT * FROM STREAM read_files('landing/x', format => 'json');
         CREATE FLOW more AS INSERT INTO bronze BY NAME SELECT * FROM STREAM read_files('landing/y', format => 'csv');",
    )
    .unwrap();
    let names: Vec<&str> = g.flows.iter().map(|f| f.name.as_str()).collect();
    assert_eq!(names, ["bronze", "more", "silver", "gold"]);
    let silver = &g.flows[2];
    assert_eq!(silver.upstream, BTreeSet::from(["bronze".to_string()]));
    assert_eq!(silver.views[0].0, "v");
}

#[test]
fn a_streaming_table_that_streams_nothing_is_refused() {
    let error = graph(
        "CREATE STREAMING TABLE s AS SELECT * FROM read_files('landing/x', format => 'json');",
    )
    .unwrap_err()
    .to_string();
    assert!(error.contains("reads nothing with STREAM"), "{error}");
}

#[test]
fn a_cycle_and_an_unknown_name_are_refused_by_name() {
    let error = graph(
        "CREATE STREAMING TABLE a AS SELECT * FROM STREAM b;
         CREATE STREAMING TABLE b AS SELECT * FROM STREAM a;",
    )
    .unwrap_err()
    .to_string();
    assert!(error.contains("a cycle: a reads b"), "{error}");
    let error = graph("CREATE MATERIALIZED VIEW g AS SELECT * FROM nowhere;")
        .unwrap_err()
        .to_string();
    assert_eq!(
        error,
        "t.sql:1:31: flow g reads nowhere, which no statement creates"
    );
}

#[test]
fn a_view_that_reads_itself_is_refused_not_followed_forever() {
    let error = graph(
        "CREATE TEMPORARY VIEW open_tickets AS SELECT * FROM open_tickets WHERE status = 'open';
         CREATE STREAMING TABLE picked AS SELECT * FROM STREAM open_tickets;",
    )
    .unwrap_err()
    .to_string();
    assert!(
        error.contains("a cycle of views: open_tickets reads open_tickets"),
        "{error}"
    );
    let error = graph(
        "CREATE TEMPORARY VIEW a AS SELECT * FROM b;
         CREATE TEMPORARY VIEW b AS SELECT * FROM a;
         CREATE MATERIALIZED VIEW g AS SELECT count(*) FROM a;",
    )
    .unwrap_err()
    .to_string();
    assert!(
        error.contains("a cycle of views: a reads b reads a"),
        "{error}"
    );
}

#[test]
fn a_view_read_twice_is_no_cycle() {
    let g = graph(
        "CREATE STREAMING TABLE raw AS SELECT * FROM STREAM read_files('landing/x', format => 'json');
         CREATE TEMPORARY VIEW v AS SELECT * FROM raw;
         CREATE TEMPORARY VIEW w AS SELECT * FROM v;
         CREATE MATERIALIZED VIEW g AS SELECT * FROM v JOIN w USING (id);",
    )
    .unwrap();
    let names: Vec<&str> = g.flows[1].views.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names, ["v", "w"]);
}

#[test]
fn a_flow_that_reads_its_own_target_is_a_cycle() {
    let error = graph("CREATE STREAMING TABLE s AS SELECT * FROM STREAM s;")
        .unwrap_err()
        .to_string();
    assert!(
        error.contains("a cycle: flow s writes s and reads it too"),
        "{error}"
    );
}

#[test]
fn two_flows_of_one_name_are_refused_naming_both() {
    let error = graph(
        "CREATE STREAMING TABLE raw AS SELECT * FROM STREAM read_files('landing/x', format => 'json');
         CREATE STREAMING TABLE picked;
         CREATE FLOW pick AS INSERT INTO picked BY NAME SELECT * FROM STREAM raw WHERE status = 'open';
         CREATE FLOW pick AS INSERT INTO picked BY NAME SELECT * FROM STREAM raw WHERE status = 'closed';",
    )
    .unwrap_err()
    .to_string();
    assert!(
        error.starts_with("t.sql:4:")
            && error.contains("flow pick is defined twice (first at t.sql:3:"),
        "{error}"
    );
}

#[test]
fn a_stream_through_views_of_views_streams_what_the_innermost_reads() {
    let g = graph(
        "CREATE STREAMING TABLE raw AS SELECT * FROM STREAM read_files('landing/x', format => 'json');
         CREATE TEMPORARY VIEW tickets AS SELECT * FROM raw;
         CREATE TEMPORARY VIEW open_tickets AS SELECT * FROM tickets WHERE status = 'open';
         CREATE STREAMING TABLE picked AS SELECT * FROM STREAM open_tickets;
         CREATE MATERIALIZED VIEW n AS SELECT count(*) FROM open_tickets;",
    )
    .unwrap();
    let streamed = |flow: &str| -> Vec<(String, bool)> {
        let f = g.flows.iter().find(|f| f.name == flow).unwrap();
        f.views
            .iter()
            .flat_map(|(_, q)| &q.reads)
            .map(|r| (format!("{:?}", r.source), r.stream))
            .collect()
    };
    // Innermost first: tickets reads raw, open_tickets reads tickets; all streamed for picked.
    assert!(
        streamed("picked").iter().all(|(_, s)| *s),
        "{:?}",
        streamed("picked")
    );
    // The materialized view reads the same views as they are, without STREAM.
    assert!(
        streamed("n").iter().all(|(_, s)| !*s),
        "{:?}",
        streamed("n")
    );
    // So refreshing raw alone would leave picked behind, though picked names no STREAM raw.
    let refusal = g.refresh_refused(&["raw".into()]).unwrap();
    assert!(
        refusal.contains("picked streams from raw; refresh picked too"),
        "{refusal}"
    );
    assert_eq!(g.refresh_refused(&["raw".into(), "picked".into()]), None);
    let refusal = g.refresh_refused(&["nothing".into()]).unwrap();
    assert_eq!(
        refusal,
        "--full-refresh nothing: the project has no dataset nothing"
    );
}

#[test]
fn a_stream_from_a_materialized_view_is_refused() {
    let error = graph(
        "CREATE STREAMING TABLE raw AS SELECT * FROM STREAM read_files('landing/x', format => 'json');
         CREATE MATERIALIZED VIEW daily AS SELECT count(*) AS n FROM raw;
         CREATE STREAMING TABLE copies AS SELECT * FROM STREAM daily;",
    )
    .unwrap_err()
    .to_string();
    assert!(
        error.contains("flow copies streams from daily, a materialized view"),
        "{error}"
    );
}

#[test]
fn names_are_read_without_regard_to_case() {
    let g = graph(
        "CREATE STREAMING TABLE Bronze AS SELECT * FROM STREAM read_files('landing/x', format => 'json');
         CREATE MATERIALIZED VIEW Daily AS SELECT count(*) AS n FROM BRONZE;",
    )
    .unwrap();
    let names: Vec<(&str, &str)> = g
        .flows
        .iter()
        .map(|f| (f.name.as_str(), f.target.as_str()))
        .collect();
    assert_eq!(names, [("bronze", "bronze"), ("daily", "daily")]);
    assert_eq!(g.flows[1].upstream, BTreeSet::from(["bronze".to_string()]));
}

#[test]
fn views_nest_so_deep_at_most_and_names_stay_in_the_lab() {
    let mut sql = String::from(
        "CREATE STREAMING TABLE raw AS SELECT * FROM STREAM read_files('landing/x', format => 'json');
         CREATE TEMPORARY VIEW v0 AS SELECT * FROM raw;",
    );
    for i in 1..=40 {
        sql += &format!("\nCREATE TEMPORARY VIEW v{i} AS SELECT * FROM v{};", i - 1);
    }
    let deep = format!("{sql}\nCREATE MATERIALIZED VIEW g AS SELECT * FROM v40;");
    let error = graph(&deep).unwrap_err().to_string();
    assert!(error.contains("views 32 deep at most"), "{error}");
    let shallow = format!("{sql}\nCREATE MATERIALIZED VIEW g AS SELECT * FROM v20;");
    assert!(graph(&shallow).is_ok());

    for name in ["`../../bob/tables/orders`", "`/tmp/x`", "`a b`", "`x/y`"] {
        let error = graph(&format!(
            "CREATE MATERIALIZED VIEW {name} AS SELECT 1 AS one;"
        ))
        .unwrap_err()
        .to_string();
        assert!(error.contains("letters, digits and _"), "{name}: {error}");
    }
    // A query that writes, behind a WITH, is refused when the project is read.
    let error = graph("CREATE MATERIALIZED VIEW w AS WITH x AS (SELECT 1 AS one) DELETE FROM x;")
        .unwrap_err()
        .to_string();
    assert!(error.contains("has no place in it"), "{error}");
    // Reckon's own tables start with `_`: a dataset named so is refused at its place.
    let error = graph("\n\nCREATE STREAMING TABLE _quarantine AS SELECT 1 AS one;")
        .unwrap_err()
        .to_string();
    assert!(
        error.contains(":3:") && error.contains("starts with `_`"),
        "{error}"
    );
}

/// What Spark's append mode refuses in a streaming table is refused with the project, at the
/// query's line, saying why (PIPELINES §8).
#[test]
fn what_append_mode_refuses_is_refused_at_its_place() {
    let base = "CREATE STREAMING TABLE b AS SELECT * FROM STREAM read_files('landing/x', format => 'json');\n";
    for (query, says) in [
        (
            "SELECT k, count(*) AS n FROM STREAM b GROUP BY k",
            "aggregates a stream without a window",
        ),
        (
            "SELECT window(t, '1 hour').start AS h, count(*) AS n FROM STREAM b GROUP BY window(t, '1 hour')",
            "a window needs a watermark",
        ),
        (
            "SELECT window(t, '1 hour').start AS h, count(DISTINCT k) AS n FROM STREAM b \
             WATERMARK t DELAY OF INTERVAL 1 HOUR GROUP BY window(t, '1 hour')",
            "DISTINCT",
        ),
        (
            "SELECT window(t, '1 hour').start AS h, k FROM STREAM b \
             WATERMARK t DELAY OF INTERVAL 1 HOUR GROUP BY window(t, '1 hour')",
            "neither grouped nor aggregated",
        ),
        (
            "SELECT window(u, '1 hour').start AS h, count(*) AS n FROM STREAM b \
             WATERMARK t DELAY OF INTERVAL 1 HOUR GROUP BY window(u, '1 hour')",
            "must be the same column",
        ),
        (
            "SELECT window(t, '1 hour', '10 minutes').start AS h, count(*) AS n FROM STREAM b \
             WATERMARK t DELAY OF INTERVAL 1 HOUR GROUP BY window(t, '1 hour', '10 minutes')",
            "sliding windows",
        ),
        (
            "SELECT window(t, '1 fortnight').start AS h, count(*) AS n FROM STREAM b \
             WATERMARK t DELAY OF INTERVAL 1 HOUR GROUP BY window(t, '1 fortnight')",
            "fortnight",
        ),
    ] {
        let sql = format!("{base}\nCREATE STREAMING TABLE g AS\n{query};\n");
        let refused = match graph(&sql) {
            Ok(_) => panic!("{query}: accepted"),
            Err(e) => e.to_string(),
        };
        assert!(refused.contains(says), "{query}: {refused}");
        assert!(refused.starts_with("t.sql:4:"), "{query}: {refused}");
    }
    // A watermark where nothing streams, and the dedup property without a watermark.
    let view = format!(
        "{base}CREATE MATERIALIZED VIEW v AS SELECT * FROM b WATERMARK t DELAY OF INTERVAL 1 HOUR;\n"
    );
    assert!(
        graph(&view)
            .unwrap_err()
            .to_string()
            .contains("does not stream")
    );
    let dedup = format!(
        "{base}CREATE STREAMING TABLE d TBLPROPERTIES ('reckon.dropDuplicatesWithinWatermark' = 'k') \
         AS SELECT * FROM STREAM b;\n"
    );
    assert!(
        graph(&dedup)
            .unwrap_err()
            .to_string()
            .contains("needs a watermark")
    );
}
