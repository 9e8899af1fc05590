//! Reads under attack: guessed tokens on reads held to the address's rate of guesses, and the
//! share of live streams one client may hold.

use super::*;

/// `GET uri` from `address` with `token`: its status.
async fn read(server: &Server, address: [u8; 4], uri: &str, token: &str) -> StatusCode {
    let request = common::json_request("GET", uri, Some(token), json!({}));
    server.call(from(address, request)).await.status
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reads_with_unknown_tokens_are_held_to_the_rate_of_guesses() {
    let tiny = Rate {
        burst: 3,
        per_second: 0.001,
    };
    let many = Rate {
        burst: 1000,
        per_second: 1000.0,
    };
    let server = Server::with("readguess", true, 2).await.with_rates(Rates {
        sends: many,
        writes: many,
        sign_ins: many,
        guesses: tiny,
    });
    let learner = server.create_lab("ann").await;
    let id = learner.split('.').next().unwrap();
    // The learner's token is verified on its first use (from the learner's own address).
    assert_eq!(
        read(&server, [10, 9, 9, 9], "/api/labs/ann/runs", &learner).await,
        StatusCode::OK
    );
    let guesser = [10, 1, 1, 1];
    let mut statuses = vec![];
    for i in 0..5 {
        // Half of them a known id's guessed secret (each would cost an argon2), half unknown ids.
        let guess = match i % 2 {
            0 => format!("{id}.{i:048}"),
            _ => format!("nosuchid{i}.{i:048}"),
        };
        statuses.push(read(&server, guesser, "/api/labs/ann/runs", &guess).await);
    }
    assert!(
        statuses[..3]
            .iter()
            .all(|s| *s != StatusCode::TOO_MANY_REQUESTS),
        "{statuses:?}"
    );
    assert_eq!(
        &statuses[3..],
        &[StatusCode::TOO_MANY_REQUESTS; 2],
        "reads with guessed tokens past the burst were not held: {statuses:?}"
    );
    // The guesser's address still reads with a token the server verified, and without one;
    // another address guesses on its own count.
    for (token, what) in [
        (INSTRUCTOR, "the instructor's token"),
        (&learner[..], "the learner's token"),
    ] {
        assert_eq!(
            read(&server, guesser, "/api/labs/ann/runs", token).await,
            StatusCode::OK,
            "{what}, from the guesser's address"
        );
    }
    let anonymous = server
        .call(from(
            guesser,
            Request::get("/api/freshness").body(Body::empty()).unwrap(),
        ))
        .await;
    assert_ne!(anonymous.status, StatusCode::TOO_MANY_REQUESTS);
    assert_ne!(
        read(
            &server,
            [10, 2, 2, 2],
            "/api/labs/ann/runs",
            "nosuchid.secret"
        )
        .await,
        StatusCode::TOO_MANY_REQUESTS
    );
}

/// Opens lab ann's live stream from `address` with `token`: the status, and the response kept
/// open (the stream holds its share until it is dropped).
async fn live(
    server: &Server,
    address: [u8; 4],
    token: Option<&str>,
) -> (StatusCode, axum::response::Response) {
    let mut request = Request::get("/api/labs/ann/live");
    if let Some(token) = token {
        request = request.header(header::AUTHORIZATION, format!("Bearer {token}"));
    }
    let request = from(address, request.body(Body::empty()).unwrap());
    let response = tokio::time::timeout(
        Duration::from_secs(30),
        server.router.clone().oneshot(request),
    )
    .await
    .expect("opening a live stream hangs")
    .unwrap();
    (response.status(), response)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_client_holds_at_most_its_share_of_live_streams() {
    let server = Server::with("liveshare", true, 2).await;
    let learner = server.create_lab("ann").await;
    server
        .ok_as(
            "POST",
            "/api/labs/ann/settings",
            Some(INSTRUCTOR),
            json!({"public": true}),
        )
        .await;
    let home = [10, 3, 3, 3];
    // A signed-in client (here a token): its share, then a refusal that says why.
    let mut held = vec![];
    for _ in 0..reckon::web::LIVE_PER_CLIENT {
        let (status, stream) = live(&server, home, Some(&learner)).await;
        assert_eq!(status, StatusCode::OK);
        held.push(stream);
    }
    let (status, refused) = live(&server, home, Some(&learner)).await;
    assert_eq!(status, StatusCode::TOO_MANY_REQUESTS);
    let said = refused.into_body().collect().await.unwrap().to_bytes();
    assert!(
        String::from_utf8_lossy(&said).contains("too many live streams"),
        "{}",
        String::from_utf8_lossy(&said)
    );
    // Others are not held by it: the instructor from the same address, anonymous viewers.
    let (status, _instructor) = live(&server, home, Some(INSTRUCTOR)).await;
    assert_eq!(
        status,
        StatusCode::OK,
        "the instructor, beside the full share"
    );
    // A stream that ends gives its place back.
    held.pop();
    let (status, _again) = live(&server, home, Some(&learner)).await;
    assert_eq!(
        status,
        StatusCode::OK,
        "a place given back was not taken again"
    );
    // Anonymous viewers of the public lab share one count per address.
    let mut anonymous = vec![];
    for _ in 0..reckon::web::LIVE_PER_ADDRESS {
        let (status, stream) = live(&server, home, None).await;
        assert_eq!(status, StatusCode::OK);
        anonymous.push(stream);
    }
    assert_eq!(
        live(&server, home, None).await.0,
        StatusCode::TOO_MANY_REQUESTS
    );
    assert_eq!(
        live(&server, [10, 4, 4, 4], None).await.0,
        StatusCode::OK,
        "another address's viewer was refused"
    );
}
