//! Pieces the pages share: live updates, error lines, the run button, figures.

use leptos::prelude::*;

use crate::api::{ApiError, StartRun};
use crate::model::RunStarted;

/// Counts what the server announced on `/api/live`; resources that read it refetch on each.
#[derive(Clone, Copy)]
pub struct Live(RwSignal<u64>);

impl Live {
    /// Provides the counter and, in the browser, subscribes it to the server's events.
    pub fn provide() {
        let live = Live(RwSignal::new(0));
        provide_context(live);
        #[cfg(feature = "hydrate")]
        Effect::new(move |_| {
            subscribe(live.0);
            // For people and tests: the page is live from here on.
            if let Some(body) = document().body() {
                let _ = body.set_attribute("data-hydrated", "true");
            }
        });
    }

    /// The count, tracked: read it in a resource's source to refetch on every announcement.
    pub fn get() -> u64 {
        use_context::<Live>().map(|l| l.0.get()).unwrap_or(0)
    }

    /// Counts one announcement now (after an action of this page, before the server's arrives).
    pub fn bump() {
        if let Some(l) = use_context::<Live>() {
            l.0.update(|n| *n += 1);
        }
    }
}

#[cfg(feature = "hydrate")]
fn subscribe(count: RwSignal<u64>) {
    use wasm_bindgen::JsCast;
    use wasm_bindgen::closure::Closure;
    let Ok(source) = web_sys::EventSource::new("/api/live") else {
        return;
    };
    let on_message = Closure::<dyn FnMut(web_sys::MessageEvent)>::new(move |_| {
        count.update(|n| *n += 1);
    });
    source.set_onmessage(Some(on_message.as_ref().unchecked_ref()));
    // Both live as long as the page: the subscription is the page's, not a component's.
    on_message.forget();
    std::mem::forget(source);
}

/// An error from the server, as a line the reader can act on.
#[component]
pub fn ErrorLine(error: ApiError) -> impl IntoView {
    view! { <p class="error" role="alert">{error.to_string()}</p> }
}

/// The error of a field of a form, shown beside it.
pub fn field_error<T: Clone + Send + Sync + 'static>(
    result: Signal<Option<Result<T, ApiError>>>,
    field: &'static str,
) -> impl IntoView {
    move || match result.get() {
        Some(Err(e)) if e.field_name() == Some(field) => {
            let message = match e {
                ApiError::Field { message, .. } => message,
                other => other.to_string(),
            };
            Some(view! { <span class="field-error" data-field=field>{message}</span> })
        }
        _ => None,
    }
}

/// An error that is not about one field, shown above a form.
pub fn form_error<T: Clone + Send + Sync + 'static>(
    result: Signal<Option<Result<T, ApiError>>>,
) -> impl IntoView {
    move || match result.get() {
        Some(Err(e)) if e.field_name().is_none() => Some(view! { <ErrorLine error=e /> }),
        _ => None,
    }
}

/// A run's outcome, as a sentence with a link to it.
#[component]
pub fn RunOutcome(run: RunStarted) -> impl IntoView {
    let text = match run.status.as_str() {
        "running" => format!("Run #{} started.", run.id),
        "succeeded" => format!("Run #{} succeeded.", run.id),
        _ => format!(
            "Run #{} failed: {}",
            run.id,
            run.error.clone().unwrap_or_default()
        ),
    };
    view! {
        <p class=format!("outcome {}", run.status)>
            <a href=format!("/runs/{}", run.id)>{text}</a>
        </p>
    }
}

/// The "Run the pipeline now" button; works as a plain form without JavaScript.
#[component]
pub fn RunButton() -> impl IntoView {
    let action = ServerAction::<StartRun>::new();
    Effect::new(move |_| {
        if action.value().get().is_some() {
            Live::bump();
        }
    });
    let value = action.value();
    view! {
        <ActionForm action attr:class="run-form">
            <button type="submit" class="primary" disabled=move || action.pending().get()>
                "Run the pipeline now"
            </button>
        </ActionForm>
        {move || match value.get() {
            Some(Ok(run)) => Some(view! { <RunOutcome run /> }.into_any()),
            Some(Err(error)) => Some(view! { <ErrorLine error /> }.into_any()),
            None => None,
        }}
    }
}

/// A verdict as a coloured word.
#[component]
pub fn VerdictBadge(verdict: String) -> impl IntoView {
    let class = format!("verdict {}", verdict.to_lowercase());
    view! { <span class=class>{verdict}</span> }
}

/// An RFC 3339 time shown as `YYYY-MM-DD HH:MM:SS` (UTC), the way the check prints times.
pub fn short_time(rfc3339: &str) -> String {
    let t = rfc3339.trim_end_matches('Z').replace('T', " ");
    match t.split_once('.') {
        Some((whole, _)) => whole.to_string(),
        None => t,
    }
}
