//! Pages rendered while routers are built, every page without JavaScript, a form posted without it.

use super::*;

/// Routers built while pages render (as tests and several labs do) never stall a render: Leptos's
/// route generation once left a page waiting forever for its data (leptos-rs/leptos#4773).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pages_render_while_other_routers_are_built() {
    let lab = TestLab::new("routers");
    let site = std::sync::Arc::new(site(&lab).await);
    let builder = {
        let state = site.state.clone();
        tokio::spawn(async move {
            for _ in 0..200 {
                drop(app(state.clone()));
                tokio::task::yield_now().await;
            }
        })
    };
    for round in 0..200 {
        let page = tokio::time::timeout(Duration::from_secs(30), site.get("/produce")).await;
        let Ok((status, body)) = page else {
            panic!("GET /produce (round {round}) did not finish within 30 s")
        };
        assert_eq!(status, StatusCode::OK, "{body}");
    }
    builder.await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_page_renders_without_javascript() {
    let lab = TestLab::new("pages");
    let site = site(&lab).await;
    // Before anything happened.
    for (uri, text) in [
        ("/", "No hour of sales is final yet."),
        ("/runs", "No runs yet."),
        ("/hours", "No hours yet"),
        ("/produce", "Send one event"),
        ("/topic", "does not exist yet"),
        ("/tables", "does not exist yet"),
        ("/pipeline", "not created yet"),
    ] {
        let (status, page) = site.get(uri).await;
        assert_eq!(status, StatusCode::OK, "{uri}");
        assert!(page.contains(text), "{uri} lacks {text:?}:\n{page}");
        assert!(
            page.contains("/pkg/reckon.js"),
            "{uri} loads no hydration script"
        );
    }
    site.play_course().await;
    for (uri, text) in [
        ("/", "Hourly sales are final through the 11:00 hour."),
        ("/runs", "check: late"),
        ("/hours", "data-verdict=\"late\""),
        ("/produce", "send again"),
        ("/produce?preset=late", "is behind it"),
        ("/topic", "bronze stored up to offset"),
        ("/tables?table=hourly_sales", "hourly_sales at version"),
        ("/tables?table=orders&version=1", "(latest is"),
        ("/pipeline", "up to date with bronze"),
    ] {
        let (status, page) = site.get(uri).await;
        assert_eq!(status, StatusCode::OK, "{uri}");
        assert!(page.contains(text), "{uri} lacks {text:?}:\n{page}");
    }
    // A lab that runs the course is not told it runs a project.
    let (_, page) = site.get("/hours").await;
    assert!(!page.contains("runs its own SQL project"), "{page}");

    // A check on its own is said to be one, once, where the runs with streams show their figures.
    let (said, code) = lab.check();
    assert!(
        said.contains("late    09:00"),
        "reckon check ({code}): {said}"
    );
    let (_, page) = site.get("/runs").await;
    assert_eq!(
        page.matches("The check alone: no stream ran.").count(),
        1,
        "{page}"
    );
    assert!(page.contains("<th>watermark</th>"), "{page}");

    // The tables page puts each cell under its own column: its rows are the table's rows.
    let opened = lab.open().await;
    for table in ["bronze_orders", "orders", "hourly_sales"] {
        let view = reckon::service::pages::tables::page(&opened, table, None, &Default::default())
            .await
            .unwrap();
        let cell = |v: &Value| match v {
            Value::String(s) => s.clone(),
            Value::Null => String::new(),
            other => other.to_string(),
        };
        let mut shown: Vec<Vec<(String, String)>> = view
            .rows
            .iter()
            .map(|row| {
                let row = view.columns.iter().cloned().zip(row.iter().cloned());
                row.filter(|(c, _)| c != "ingested_at" && c != "kafka_timestamp")
                    .collect()
            })
            .collect();
        let mut stored: Vec<Vec<(String, String)>> = lab
            .table(table)
            .iter()
            .map(|row| {
                let row = row.as_object().unwrap();
                view.columns
                    .iter()
                    .filter_map(|c| Some((c.clone(), cell(row.get(c)?))))
                    .collect()
            })
            .collect();
        shown.sort();
        stored.sort();
        assert!(!shown.is_empty(), "the tables page shows no row of {table}");
        assert_eq!(
            shown, stored,
            "{table}: the page's cells against the table's rows"
        );
    }
    let (status, page) = site.get("/tables?table=nope").await;
    assert_eq!(status, StatusCode::OK);
    assert!(page.contains("table: one of bronze_orders"), "{page}");
    assert_eq!(site.get("/no-such-page").await.0, StatusCode::NOT_FOUND);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_form_posted_without_javascript_comes_back_with_the_fields_error() {
    let lab = TestLab::new("form");
    let site = site(&lab).await;
    let form = "lab=default&event[order_id]=12x&event[customer_id]=C1&event[status]=placed&event[amount]=1.00&event[event_time]=2026-10-01T09:00:00Z";
    let (status, _, headers) = site
        .call(
            Request::post("/fn/produce")
                .header(header::CONTENT_TYPE, "application/x-www-form-urlencoded")
                .header(header::ACCEPT, "text/html")
                .header(header::REFERER, "http://127.0.0.1:3000/produce")
                .body(Body::from(form))
                .unwrap(),
        )
        .await;
    assert_eq!(status, StatusCode::FOUND);
    // Back where the form was (browsers send the whole address as the referer).
    let back = headers[header::LOCATION].to_str().unwrap();
    let back = back
        .strip_prefix("http://127.0.0.1:3000")
        .unwrap_or(back)
        .to_string();
    assert!(back.starts_with("/produce?"), "{back}");
    let (status, page) = site.get(&back).await;
    assert_eq!(status, StatusCode::OK);
    assert!(page.contains("data-field=\"order_id\""), "{page}");
    assert!(page.contains("must be a whole number"), "{page}");
    assert_eq!(lab.kafka().partitions(&lab.topic).unwrap(), None);

    // The same form, right, sends the event and comes back without an error.
    let (status, _, headers) = site
        .call(
            Request::post("/fn/produce")
                .header(header::CONTENT_TYPE, "application/x-www-form-urlencoded")
                .header(header::ACCEPT, "text/html")
                .header(header::REFERER, "http://127.0.0.1:3000/produce")
                .body(Body::from(form.replace("12x", "12")))
                .unwrap(),
        )
        .await;
    assert_eq!(status, StatusCode::FOUND);
    let back = headers[header::LOCATION].to_str().unwrap();
    assert!(
        back.trim_end_matches('?') == "http://127.0.0.1:3000/produce",
        "{back}"
    );
    let (_, page) = site.get("/produce").await;
    assert!(page.contains("send again"), "{page}");
}
