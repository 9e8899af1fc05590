//! Pieces the pages share: the lab a page shows and who is looking, live updates, error lines,
//! the run button, figures.

use leptos::prelude::*;
use leptos_router::hooks::use_location;

use crate::api::{ApiError, CancelRun, StartRun};
use crate::model::{RunStarted, RunStatus, SessionView, Verdict};

/// The lab every unscoped page and API route works on.
pub use crate::model::DEFAULT_LAB;

/// The lab a path shows: `/labs/ann/runs` is lab `ann`; a path outside `/labs/<lab>` is `default`.
pub fn lab_of_path(path: &str) -> String {
    path.strip_prefix("/labs/")
        .and_then(|rest| rest.split('/').next())
        .filter(|lab| !lab.is_empty())
        .unwrap_or(DEFAULT_LAB)
        .to_string()
}

/// The lab the current page shows.
pub fn current_lab() -> String {
    lab_of_path(&use_location().pathname.get_untracked())
}

/// A page of lab `lab`: `/runs` of lab ann is `/labs/ann/runs`; the default lab's is `/runs`.
/// `text` as a CSV download's `href`: a data URL, what it cannot hold as it is percent-encoded.
pub fn csv_href(text: &str) -> String {
    let encoded: String = text
        .bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect();
    format!("data:text/csv;charset=utf-8,{encoded}")
}

pub fn lab_href(lab: &str, path: &str) -> String {
    match (lab, path) {
        (DEFAULT_LAB, _) => path.to_string(),
        (_, "/") => format!("/labs/{lab}"),
        _ => format!("/labs/{lab}{path}"),
    }
}

/// A page of the current lab.
pub fn href(path: &str) -> String {
    lab_href(&current_lab(), path)
}

/// Who is looking, loaded once per page: what the header and the forms offer depends on it.
#[derive(Clone, Copy)]
pub struct Session(pub Resource<Result<SessionView, ApiError>>);

impl Session {
    pub fn provide() {
        provide_context(Session(Resource::new(
            || (),
            |()| crate::api::get_session(),
        )));
    }

    pub fn resource() -> Option<Resource<Result<SessionView, ApiError>>> {
        use_context::<Session>().map(|s| s.0)
    }
}

/// The hidden fields every form of a lab carries: the lab, and the session's CSRF token.
#[component]
pub fn FormScope() -> impl IntoView {
    view! {
        <input type="hidden" name="lab" value=current_lab() />
        <CsrfField />
    }
}

/// The session's CSRF token as a hidden field (none when no one signs in).
#[component]
pub fn CsrfField() -> impl IntoView {
    let session = Session::resource();
    view! {
        <Suspense>
            {move || Suspend::new(async move {
                let csrf = match session {
                    Some(s) => s.await.ok().and_then(|s| s.csrf),
                    None => None,
                };
                csrf.map(|csrf| view! { <input type="hidden" name="csrf" value=csrf /> })
            })}
        </Suspense>
    }
}

/// Shows `children` only to those who may change the current lab (the run button), and
/// `fallback` (if any) to the others. The children make no resources: a page's data is loaded
/// with the session instead (see the produce page).
#[component]
pub fn IfWriter(children: ChildrenFn, #[prop(optional, into)] fallback: ViewFn) -> impl IntoView {
    if_session(SessionView::may_write, children, fallback)
}

/// Shows `children` only to the instructor (and on a server that asks for no tokens): making
/// labs, the class's settings.
#[component]
pub fn IfInstructor(
    children: ChildrenFn,
    #[prop(optional, into)] fallback: ViewFn,
) -> impl IntoView {
    if_session(|s, _| s.may_manage(), children, fallback)
}

fn if_session(
    may: fn(&SessionView, &str) -> bool,
    children: ChildrenFn,
    fallback: ViewFn,
) -> impl IntoView {
    let session = Session::resource();
    let lab = current_lab();
    let children = StoredValue::new(children);
    view! {
        <Suspense>
            {move || {
                let (lab, fallback) = (lab.clone(), fallback.clone());
                Suspend::new(async move {
                    let may = match session {
                        Some(s) => s.await.is_ok_and(|s| may(&s, &lab)),
                        None => false,
                    };
                    match may {
                        true => untrack(|| children.with_value(|c| c())).into_any(),
                        false => fallback.run(),
                    }
                })
            }}
        </Suspense>
    }
}

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

/// One live stream per browser and lab, shared by its tabs: the tab holding a Web Lock named for
/// the stream reads it and passes each message to the others on a `BroadcastChannel`; when that
/// tab goes, the lock (and the stream) passes to another. A page put in the back/forward cache
/// gives its stream up, and asks again when it is shown. A browser keeps six connections per
/// host over HTTP/1.1: a stream per page held them all after a few pages and tabs, and the next
/// page waited. Without locks or channels (an old browser), each page reads its own.
#[cfg(feature = "hydrate")]
#[wasm_bindgen::prelude::wasm_bindgen(inline_js = r#"
export function share_live(url, heard) {
  const name = 'reckon-live:' + url;
  const shared = typeof BroadcastChannel === 'function' && navigator.locks;
  const channel = shared ? new BroadcastChannel(name) : null;
  if (channel) channel.onmessage = (e) => heard(e.data);
  let source = null, release = null;
  const read = () => {
    source = new EventSource(url);
    source.onmessage = (e) => { heard(e.data); if (channel) channel.postMessage(e.data); };
  };
  const lead = () => navigator.locks.request(name, () => new Promise((done) => {
    release = done;
    read();
  }));
  const start = () => shared ? lead() : read();
  const stop = () => {
    if (source) { source.close(); source = null; }
    if (release) { release(); release = null; }
  };
  addEventListener('pagehide', stop);
  addEventListener('pageshow', (e) => { if (e.persisted) start(); });
  start();
}
"#)]
extern "C" {
    fn share_live(url: &str, heard: &wasm_bindgen::closure::Closure<dyn FnMut(String)>);
}

#[cfg(feature = "hydrate")]
fn subscribe(count: RwSignal<u64>) {
    use wasm_bindgen::closure::Closure;
    let path = window().location().pathname().unwrap_or_default();
    let url = match lab_of_path(&path).as_str() {
        DEFAULT_LAB => "/api/live".to_string(),
        lab => format!("/api/labs/{lab}/live"),
    };
    let heard = Closure::<dyn FnMut(String)>::new(move |_| {
        count.update(|n| *n += 1);
    });
    share_live(&url, &heard);
    // It lives as long as the page: the subscription is the page's, not a component's.
    heard.forget();
}

/// An error from the server, as a line the reader can act on.
#[component]
pub fn ErrorLine(error: ApiError) -> impl IntoView {
    let sign_in = matches!(error, ApiError::Unauthorized(_))
        .then(|| view! { " " <a href="/login">"Sign in"</a> });
    view! { <p class="error" role="alert">{error.to_string()}{sign_in}</p> }
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

/// A run's outcome, as a sentence with a link to it. A run still going is followed: when the
/// server announces a run's end, the sentence says how this one ended.
#[component]
pub fn RunOutcome(run: RunStarted) -> impl IntoView {
    let (id, running) = (run.id, run.status == RunStatus::Running);
    let lab = current_lab();
    let links = lab.clone();
    let followed = Resource::new(
        move || (Live::get(), running),
        move |(_, running)| {
            let lab = lab.clone();
            async move {
                match running {
                    true => crate::api::get_run(lab, id.to_string()).await.ok(),
                    false => None,
                }
            }
        },
    );
    let sentence = move |run: RunStarted| {
        let text = match run.status {
            RunStatus::Running => format!("Run #{} started; this says how it ends.", run.id),
            RunStatus::Succeeded => format!("Run #{} succeeded.", run.id),
            RunStatus::Canceled => format!("Run #{} was cancelled.", run.id),
            RunStatus::Failed => format!(
                "Run #{} failed: {}",
                run.id,
                run.error.clone().unwrap_or_default()
            ),
        };
        view! {
            <p class=format!("outcome {}", run.status) data-run=run.id>
                <a href=lab_href(&links, &format!("/runs/{}", run.id))>{text}</a>
            </p>
        }
    };
    let (first, later) = (run.clone(), sentence.clone());
    view! {
        <Transition fallback=move || sentence(first.clone())>
            {move || {
                let (run, sentence) = (run.clone(), later.clone());
                Suspend::new(async move {
                    let now = followed.await.map(|d| RunStarted {
                        id: d.run.id,
                        status: d.run.status,
                        error: d.run.error,
                    });
                    sentence(now.unwrap_or(run))
                })
            }}
        </Transition>
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
        <IfWriter>
            <ActionForm action attr:class="run-form">
                <FormScope />
                <button type="submit" class="primary" disabled=move || action.pending().get()>
                    "Run the pipeline now"
                </button>
            </ActionForm>
        </IfWriter>
        {move || match value.get() {
            Some(Ok(run)) => Some(view! { <RunOutcome run /> }.into_any()),
            Some(Err(error)) => Some(view! { <ErrorLine error /> }.into_any()),
            None => None,
        }}
        <StopButton />
    }
}

/// "Stop the run in progress": its process is killed at once and the run recorded as cancelled;
/// the next run recovers as after a crash. Works as a plain form without JavaScript.
#[component]
pub fn StopButton() -> impl IntoView {
    let action = ServerAction::<CancelRun>::new();
    Effect::new(move |_| {
        if action.value().get().is_some() {
            Live::bump();
        }
    });
    let value = action.value();
    view! {
        <IfWriter>
            <ActionForm action attr:class="run-form stop-form">
                <FormScope />
                <button type="submit" disabled=move || action.pending().get()>
                    "Stop the run in progress"
                </button>
            </ActionForm>
        </IfWriter>
        {move || match value.get() {
            Some(Ok(true)) => Some(view! { <p class="outcome canceled">"The run was stopped."</p> }.into_any()),
            Some(Ok(false)) => Some(view! { <p class="outcome">"No run was going on."</p> }.into_any()),
            Some(Err(error)) => Some(view! { <ErrorLine error /> }.into_any()),
            None => None,
        }}
    }
}

/// A verdict as a coloured word.
#[component]
pub fn VerdictBadge(verdict: Verdict) -> impl IntoView {
    view! { <span class=format!("verdict {verdict}")>{verdict.word()}</span> }
}

/// An RFC 3339 time shown as `YYYY-MM-DD HH:MM:SS` (UTC), the way the check prints times.
pub fn short_time(rfc3339: &str) -> String {
    let t = rfc3339.trim_end_matches('Z').replace('T', " ");
    match t.split_once('.') {
        Some((whole, _)) => whole.to_string(),
        None => t,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_path_names_its_lab_and_a_lab_its_pages() {
        assert_eq!(lab_of_path("/labs/ann/runs/3"), "ann");
        assert_eq!(lab_of_path("/labs/ann"), "ann");
        assert_eq!(lab_of_path("/runs"), "default");
        assert_eq!(lab_of_path("/labs"), "default");
        assert_eq!(lab_href("ann", "/"), "/labs/ann");
        assert_eq!(lab_href("ann", "/hours"), "/labs/ann/hours");
        assert_eq!(lab_href("default", "/hours"), "/hours");
    }
}
