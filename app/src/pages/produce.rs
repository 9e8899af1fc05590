//! Produce: send one event (with per-field errors), send an earlier one again (a duplicate, as
//! the shop's system would), a "late" preset, the course's batches, "send and run"; the settings
//! (schedule, dedup) and the reset that makes a dedup change take effect.

use leptos::prelude::*;
use leptos_router::hooks::use_query_map;

use crate::api::*;
use crate::components::{
    ErrorLine, FormScope, Live, RunOutcome, current_lab, field_error, form_error, href, short_time,
};
use crate::model::{ProducePage as Page, STATUSES, Sent, Settings};
use crate::pages::{CourseOnly, loaded};

/// The page's actions live as long as the page: the sections below re-render on every live
/// update, and an action's outcome must survive that.
#[derive(Clone, Copy)]
struct Actions {
    produce: ServerAction<ProduceEvent>,
    batch: ServerAction<SendBatch>,
    again: ServerAction<SendAgain>,
    save: ServerAction<SaveSettings>,
    reset: ServerAction<ResetLab>,
}

#[component]
pub fn ProducePage() -> impl IntoView {
    let query = use_query_map();
    let preset = move || query.read().get("preset").unwrap_or_default();
    let lab = current_lab();
    let page_key = move || (lab.clone(), preset());
    let actions = Actions {
        produce: ServerAction::new(),
        batch: ServerAction::new(),
        again: ServerAction::new(),
        save: ServerAction::new(),
        reset: ServerAction::new(),
    };
    // A reset changes every figure: the page reads them again, once. (Here, not in the settings'
    // view: that one is made again by the reload, and an effect made with it would see the reset
    // done, ask again, and so on, until the server's write limit refused the page.)
    let reset_value: Signal<Option<Result<Settings, ApiError>>> = actions.reset.value().into();
    Effect::new(move |_| {
        if reset_value.get().is_some_and(|r| r.is_ok()) {
            Live::bump();
        }
    });
    view! {
        <h1>"Produce"</h1>
        <CourseOnly />
        {sent_view(actions.produce.value().into())}
        {sent_view(actions.batch.value().into())}
        {sent_view(actions.again.value().into())}
        {loaded(page_key, |(lab, _)| page_data(lab), move |(may_write, page, settings): (bool, Page, Settings)| {
            if !may_write {
                return view! {
                    <p class="note read-only">
                        "You may look at this lab but not change it: sending events, running and resetting need the lab's learner token."
                    </p>
                    <RecentEvents page action=None />
                }.into_any();
            }
            let preset = preset();
            view! {
                <EventFormView page=page.clone() preset action=actions.produce />
                <BatchButtons batches=page.batches.clone() action=actions.batch />
                <RecentEvents page action=Some(actions.again) />
                <SettingsView settings actions />
            }.into_any()
        })}
    }
}

/// What the page shows, and whether the person looking may change the lab (the forms).
async fn page_data(lab: String) -> Result<(bool, Page, Settings), ApiError> {
    let may_write = get_session().await?.may_write(&lab);
    let page = get_produce_page(lab.clone()).await?;
    Ok((may_write, page, get_settings(lab).await?))
}

/// Announces a send to the page (and says where it landed).
fn sent_view(value: Signal<Option<Result<Sent, ApiError>>>) -> impl IntoView {
    // Only a send changes what the page shows: a refused one keeps the form (and its errors).
    Effect::new(move |_| {
        if value.get().is_some_and(|sent| sent.is_ok()) {
            Live::bump();
        }
    });
    move || match value.get() {
        Some(Ok(sent)) => {
            let places: Vec<String> = sent
                .sent
                .iter()
                .map(|s| format!("partition {} offset {}", s.partition, s.offset))
                .collect();
            Some(view! {
                <p class="outcome sent">{format!("Sent {} event(s): {}.", sent.sent.len(), places.join(", "))}</p>
                {sent.run.map(|run| view! { <RunOutcome run /> })}
            }.into_any())
        }
        Some(Err(e)) if e.field_name().is_none() => {
            Some(view! { <ErrorLine error=e /> }.into_any())
        }
        _ => None,
    }
}

#[component]
fn EventFormView(page: Page, preset: String, action: ServerAction<ProduceEvent>) -> impl IntoView {
    let value: Signal<_> = action.value().into();
    let (event_time, note) = match preset.as_str() {
        "late" => (
            page.late_event_time.clone().unwrap_or_default(),
            Some(page.late_explanation.clone()),
        ),
        // Without a preset too: an empty time cannot be sent.
        _ => (page.now.clone(), None),
    };
    let status = if preset == "late" { "placed" } else { "" };
    let field = move |name: &'static str, label: &'static str, input: AnyView| {
        view! {
            <label class="field">
                <span>{label}</span>
                {input}
                {field_error(value, name)}
            </label>
        }
    };
    view! {
        <section class="produce">
            <h2>"Send one event"</h2>
            <p class="presets">
                <a href=href("/produce?preset=now")>"event time: now"</a>
                " · "
                <a href=href("/produce?preset=late")>"a late event"</a>
            </p>
            <p class="note">"The partition is Kafka's choice, from the order id: an order's events stay in order on one partition."</p>
            {note.map(|n| view! { <p class="note late-note">{n}</p> })}
            <ActionForm action attr:class="event-form">
                <FormScope />
                {field("order_id", "order id", view! { <input name="event[order_id]" inputmode="numeric" value=page.next_order_id.to_string() /> }.into_any())}
                {field("customer_id", "customer", view! { <input name="event[customer_id]" value="c-lab" /> }.into_any())}
                {field("status", "status", view! {
                    <select name="event[status]">
                        {STATUSES.iter().map(|s| view! { <option value=*s selected={*s == status}>{*s}</option> }).collect_view()}
                    </select>
                }.into_any())}
                {field("amount", "amount", view! { <input name="event[amount]" inputmode="decimal" value="10.00" /> }.into_any())}
                {field("event_time", "event time (UTC)", view! { <input name="event[event_time]" value=event_time placeholder="2024-05-01T09:30:00Z" /> }.into_any())}
                <div class="buttons">
                    <button type="submit">"Send"</button>
                    <button type="submit" name="and_run" value="on" class="primary">"Send and run"</button>
                </div>
            </ActionForm>
        </section>
    }
}

#[component]
fn BatchButtons(batches: Vec<String>, action: ServerAction<SendBatch>) -> impl IntoView {
    view! {
        <section class="batches">
            <h2>"The course's batches"</h2>
            <p>"Send a batch as the course does; send one twice to see the check catch a double count when deduplication is off."</p>
            <div class="batch-buttons">
                {batches.into_iter().map(|b| view! {
                    <ActionForm action attr:class="batch-form">
                        <FormScope />
                        <input type="hidden" name="batch" value=b.clone() />
                        <button type="submit" data-batch=b.clone()>{format!("Send batch {b}")}</button>
                        <button type="submit" name="and_run" value="on" data-batch-run=b.clone()>{format!("Send batch {b} and run")}</button>
                    </ActionForm>
                }).collect_view()}
            </div>
        </section>
    }
}

#[component]
fn RecentEvents(page: Page, action: Option<ServerAction<SendAgain>>) -> impl IntoView {
    let watermark = page
        .watermark
        .as_deref()
        .map(short_time)
        .unwrap_or_else(|| "none yet".into());
    view! {
        <section class="recent">
            <h2>"Recently sent"</h2>
            <p>{format!("Gold's watermark: {watermark}. An event older than the watermark is dropped as late.")}</p>
            <table>
                <tbody>
                <tr><th>"sent"</th><th>"by"</th><th>"order"</th><th>"customer"</th><th>"status"</th><th>"amount"</th><th>"event time"</th><th>"partition/offset"</th><th></th></tr>
                {page.recent.into_iter().map(|e| view! {
                    <tr>
                        <td>{short_time(&e.produced_at)}</td>
                        <td>{e.source}</td>
                        <td>{e.order_id}</td>
                        <td>{e.customer_id}</td>
                        <td>{e.status}</td>
                        <td>{e.amount}</td>
                        <td>{short_time(&e.event_time)}</td>
                        <td>{format!("{}/{}", e.partition, e.offset)}</td>
                        <td>
                            {action.map(|action| view! {
                                <ActionForm action attr:class="again-form">
                                    <FormScope />
                                    <input type="hidden" name="id" value=e.id.to_string() />
                                    <button type="submit" data-again=e.id.to_string()>"send again"</button>
                                </ActionForm>
                            })}
                        </td>
                    </tr>
                }).collect_view()}
                </tbody>
            </table>
        </section>
    }
}

#[component]
fn SettingsView(settings: Settings, actions: Actions) -> impl IntoView {
    let (save, reset) = (actions.save, actions.reset);
    let saved: Signal<Option<Result<Settings, ApiError>>> = save.value().into();
    let reset_value: Signal<Option<Result<Settings, ApiError>>> = reset.value().into();
    let pending_dedup = (settings.dedup != settings.dedup_in_effect).then(|| view! {
        <p class="note">{format!(
            "Deduplication is {} now; it will be {} after the next reset (gold's state keeps the setting it started with).",
            on_off(settings.dedup_in_effect), on_off(settings.dedup)
        )}</p>
    });
    view! {
        <section class="settings">
            <h2>"Settings"</h2>
            <ActionForm action=save attr:class="settings-form">
                <FormScope />
                <label class="field">
                    <span>"run every (seconds, empty for never)"</span>
                    <input name="schedule_seconds" inputmode="numeric" value=settings.schedule_seconds.map(|s| s.to_string()).unwrap_or_default() />
                    {field_error(saved, "schedule_seconds")}
                </label>
                <label class="check-field">
                    <input type="checkbox" name="dedup" value="on" checked=settings.dedup />
                    " gold drops duplicates within the watermark"
                </label>
                <label class="check-field">
                    <input type="checkbox" name="public" value="on" checked=settings.public />
                    " anyone may read this lab's freshness and reconciliation pages, without a token"
                </label>
                <button type="submit">"Save settings"</button>
            </ActionForm>
            {form_error(saved)}
            {pending_dedup}
            <h2>"Reset"</h2>
            <p>"A reset deletes the topic and recreates it empty, and removes the tables and gold's state: the course's \"replay the whole pipeline from a new topic\". The history is kept."</p>
            <ActionForm action=reset attr:class="reset-form">
                <FormScope />
                <label class="check-field">
                    <input type="checkbox" name="confirm" value="on" />
                    " I understand: delete the topic and the tables"
                </label>
                {field_error(reset_value, "confirm")}
                <button type="submit" class="danger">"Reset the lab"</button>
            </ActionForm>
            {form_error(reset_value)}
            {move || reset_value.get().and_then(|r| r.ok()).map(|_| view! { <p class="outcome">"The lab was reset."</p> })}
        </section>
    }
}

fn on_off(on: bool) -> &'static str {
    if on { "on" } else { "off" }
}
