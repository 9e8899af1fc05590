//! Topic: each partition's log start and end, the offset bronze stored, the lag, the last messages,
//! and the lab's consumer groups with a consumer to start.

use leptos::prelude::*;

use crate::api::get_topic;
use crate::components::current_lab;
use crate::model::TopicView;
use crate::pages::consumers::{ConsumerForm, groups_view};
use crate::pages::{CourseOnly, loaded};

#[component]
pub fn TopicPage() -> impl IntoView {
    view! {
        <CourseOnly />
        {loaded(current_lab, get_topic, |topic: TopicView| {
            let body = match topic.partitions {
                None => view! { <p>"The topic does not exist yet: it is created by the first send."</p> }.into_any(),
                Some(partitions) => view! {
                    <table class="partitions">
                        <tbody>
                        <tr><th>"partition"</th><th>"log start"</th><th>"log end"</th><th title="the offset of the last message bronze stored from this partition (an offset, not a count)">"bronze stored up to offset"</th><th>"lag"</th></tr>
                        {partitions.iter().map(|p| view! {
                            <tr data-partition=p.partition.to_string()>
                                <td>{p.partition}</td><td>{p.log_start}</td><td>{p.log_end}</td>
                                <td>{p.bronze_offset.map(|o| o.to_string()).unwrap_or_else(|| "none".into())}</td>
                                <td>{p.lag}</td>
                            </tr>
                        }).collect_view()}
                        </tbody>
                    </table>
                    {partitions.into_iter().map(|p| view! {
                        <h2>{format!("Partition {}: last messages", p.partition)}</h2>
                        <table class="messages">
                            <tbody>
                            <tr><th>"offset"</th><th>"key"</th><th>"value"</th></tr>
                            {p.last_messages.into_iter().map(|m| view! {
                                <tr><td>{m.offset}</td><td>{m.key.unwrap_or_default()}</td><td><code>{m.value}</code></td></tr>
                            }).collect_view()}
                            </tbody>
                        </table>
                    }).collect_view()}
                    <h2>"Consumer groups"</h2>
                    <p>
                        "Bronze is not among them: it stores the offsets it read in its own Delta commit, with the rows. "
                        "A group's offsets are kept by Kafka, apart from what the consumer did with the messages."
                    </p>
                    {groups_view(topic.groups)}
                }.into_any(),
            };
            view! {
                <h1>{format!("Topic {}", topic.topic)}</h1>
                <p>{format!("on {}", topic.brokers)}</p>
                {body}
            }
        })}
        <ConsumerForm />
    }
}
