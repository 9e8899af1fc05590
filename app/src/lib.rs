//! Reckon's dashboard. The Leptos UI lands with the dashboard issue; until then this crate only
//! names the pages the server will render, so the workspace layout is the final one.

/// Routes the dashboard will serve, in the order its navigation shows them.
pub const PAGES: [&str; 7] = [
    "/",
    "/runs",
    "/hours",
    "/produce",
    "/topic",
    "/tables",
    "/pipeline",
];
