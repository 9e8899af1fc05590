//! The topic page's consumer groups: each group of the lab with its committed offset and lag per
//! partition, and "start a consumer" reading N messages and stopping, so a learner can stop it,
//! send more, start it again and see where it resumes, and why.

use leptos::prelude::*;

use crate::api::StartConsumer;
use crate::components::Live;
use crate::components::{ErrorLine, FormScope, IfWriter, field_error};
use crate::model::{GroupRead, GroupView};

/// The lab's groups beside bronze's offsets.
pub fn groups_view(groups: Vec<GroupView>) -> impl IntoView {
    if groups.is_empty() {
        return view! { <p class="no-groups">"No consumer group has read this topic yet."</p> }
            .into_any();
    }
    view! {
        <table class="groups">
            <thead><tr><th>"group"</th><th>"partition"</th><th>"committed (next to read)"</th><th>"lag"</th></tr></thead>
            <tbody>
                {groups.into_iter().flat_map(|g| {
                    let name = g.name.clone();
                    g.partitions.into_iter().map(move |p| view! {
                        <tr data-group=name.clone() data-partition=p.partition.to_string()>
                            <td>{name.clone()}</td><td>{p.partition}</td>
                            <td>{p.committed.map(|o| o.to_string()).unwrap_or_else(|| "none".into())}</td>
                            <td>{p.lag}</td>
                        </tr>
                    })
                }).collect_view()}
            </tbody>
        </table>
    }.into_any()
}

/// "Start a consumer in group G": reads N messages, commits after each, stops; then says where
/// each partition resumed and why.
#[component]
pub fn ConsumerForm() -> impl IntoView {
    let consume = ServerAction::<StartConsumer>::new();
    Effect::new(move |_| {
        if consume.value().get().is_some() {
            Live::bump();
        }
    });
    let result: Signal<_> = consume.value().into();
    view! {
        <IfWriter>
            <h2>"Start a consumer"</h2>
            <p>
                "A consumer in a group reads the topic from the group's committed offsets and commits as it goes. "
                "Read a few messages, send more, start it again: it resumes where the group's commit says."
            </p>
            <ActionForm action=consume attr:class="filter consume-form">
                <FormScope />
                <label class="field"><span>"group"</span><input name="group" value="demo" size="12" />{field_error(result, "group")}</label>
                <label class="field"><span>"messages"</span><input name="max" value="5" size="4" />{field_error(result, "max")}</label>
                <label class="confirm"><input type="checkbox" name="from_beginning" value="true" />" from the beginning (a new group)"</label>
                <button type="submit" disabled=move || consume.pending().get()>"Read and stop"</button>
            </ActionForm>
            {move || consume.value().get().map(|answer| match answer {
                Ok(read) => read_view(read).into_any(),
                Err(error) => view! { <ErrorLine error /> }.into_any(),
            })}
        </IfWriter>
    }
}

fn read_view(read: GroupRead) -> impl IntoView {
    let count = read.messages.len().to_string();
    view! {
        <div class="consumed" data-group=read.group.clone() data-read=count>
            {read.sentences.into_iter().map(|s| view! { <p class="said">{s}</p> }).collect_view()}
            <table class="messages">
                <thead><tr><th>"partition"</th><th>"offset"</th><th>"value"</th></tr></thead>
                <tbody>
                    {read.messages.into_iter().map(|m| view! {
                        <tr data-offset=format!("{}:{}", m.partition, m.offset)>
                            <td>{m.partition}</td><td>{m.offset}</td><td><code>{m.value}</code></td>
                        </tr>
                    }).collect_view()}
                </tbody>
            </table>
        </div>
    }
}
