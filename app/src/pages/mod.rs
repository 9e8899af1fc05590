//! One page per file; each fetches its data with a server function and refetches it live.

pub mod board;
pub mod class;
pub mod code;
mod consumers;
pub mod events;
pub mod freshness;
pub mod history;
pub mod hours;
pub mod labs;
pub mod landing;
pub mod late;
pub mod login;
pub mod milestones;
pub mod pipeline;
pub mod produce;
pub mod quality;
pub mod reconcile;
pub mod run;
pub mod runs;
mod sql;
pub mod tables;
pub mod topic;
pub mod whatif;
pub mod writing;

use leptos::prelude::*;
use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::api::ApiError;
use crate::components::ErrorLine;

/// Renders what `fetch` loads (again on every live announcement, and when `key` changes) with
/// `render`, or the error it failed with.
pub fn loaded<K, T, F, Fut, R, V>(
    key: impl Fn() -> K + Send + Sync + 'static,
    fetch: F,
    render: R,
) -> impl IntoView
where
    K: PartialEq + Clone + Send + Sync + 'static,
    T: Clone + Serialize + DeserializeOwned + Send + Sync + 'static,
    F: Fn(K) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<T, ApiError>> + Send + 'static,
    R: Fn(T) -> V + Clone + Send + Sync + 'static,
    V: IntoView + 'static,
{
    let resource = Resource::new(
        move || (key(), crate::components::Live::get()),
        move |(k, _)| fetch(k),
    );
    view! {
        <Transition fallback=|| view! { <p class="loading">"Loading…"</p> }>
            {move || {
                let render = render.clone();
                Suspend::new(async move {
                    match resource.await {
                        Ok(data) => render(data).into_any(),
                        Err(error) => view! { <ErrorLine error /> }.into_any(),
                    }
                })
            }}
        </Transition>
    }
}

/// On the course's own pages (reconciliation, produce, topic): in a lab that runs its own SQL
/// project, says that these pages are about the course's Kafka pipeline, which its runs do not
/// touch. Says nothing when the lab's kind cannot be read (a public page's viewer).
#[component]
pub fn CourseOnly() -> impl IntoView {
    let lab = crate::components::current_lab();
    let kind = Resource::new(move || lab.clone(), crate::api::project::get_kind);
    view! {
        <Suspense>
            {move || Suspend::new(async move {
                let project = kind.await == Ok(crate::model::PipelineKind::Project);
                project.then(|| view! {
                    <p class="course-only">
                        "This lab runs its own SQL project: its runs read the landing folder, not \
                         this Kafka topic, and this page is about the course's pipeline. The \
                         project's pages are Pipeline, Landing, Quality, Reconciliation, Late rows \
                         and Events; the Code page switches the lab back to the course."
                    </p>
                })
            })}
        </Suspense>
    }
}
