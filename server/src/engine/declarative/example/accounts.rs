//! The support example's second source (week 14's challenge): account changes, one file a day in
//! `landing/accounts/`, for the AUTO CDC flow into `accounts` (SCD 2, history on `plan`).
//!
//! Day 1 gives every account its first plan at midnight. Later days change a few plans; about one
//! change in six lands two days late (in a later day's file); `acc-007` is deleted on day 10 and
//! comes back on day 14; day 20 repeats day 5's first change exactly; day 8 changes only the
//! seats of `acc-003` (an untracked column).

use chrono::Duration;
use serde_json::json;

use super::{DAYS, date};
use crate::engine::rng::Rng;

pub const ACCOUNTS: u64 = 40;
const PLANS: [&str; 4] = ["free", "team", "pro", "enterprise"];

/// One change of an account, as landed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Change {
    pub account_id: String,
    pub plan: String,
    pub seats: i64,
    pub updated_at: String,
    pub op: &'static str,
}

impl Change {
    pub fn json(&self) -> String {
        json!({
            "account_id": self.account_id, "plan": self.plan, "seats": self.seats,
            "updated_at": self.updated_at, "op": self.op,
        })
        .to_string()
    }
}

fn at(day: u32, seconds: i64) -> String {
    let midnight = date(day).and_hms_opt(0, 0, 0).expect("midnight");
    (midnight + Duration::seconds(seconds))
        .format("%Y-%m-%dT%H:%M:%SZ")
        .to_string()
}

fn account(n: u64) -> String {
    format!("acc-{n:03}")
}

/// Each day's file, days 1 to [`DAYS`]: the changes landed that day. The same on every call.
pub fn changes() -> Vec<Vec<Change>> {
    let mut rng = Rng(0x5eed_ac75);
    let mut files: Vec<Vec<Change>> = vec![vec![]; DAYS as usize];
    let mut plans: Vec<(String, i64)> = vec![];
    for n in 1..=ACCOUNTS {
        let plan = PLANS[rng.below(4) as usize].to_string();
        let seats = 1 + rng.below(50) as i64;
        plans.push((plan.clone(), seats));
        files[0].push(Change {
            account_id: account(n),
            plan,
            seats,
            updated_at: at(1, 0),
            op: "UPSERT",
        });
    }
    for day in 2..=DAYS {
        for _ in 0..(1 + rng.below(3)) {
            let n = 1 + rng.below(ACCOUNTS);
            // acc-007 stays deleted from day 10 to 14; acc-003 changes only seats on day 8.
            if (n == 7 && (10..=14).contains(&day)) || (n == 3 && day == 8) {
                continue;
            }
            let current = &mut plans[(n - 1) as usize];
            let others: Vec<&str> = PLANS.iter().copied().filter(|p| *p != current.0).collect();
            current.0 = others[rng.below(others.len() as u64) as usize].to_string();
            let change = Change {
                account_id: account(n),
                plan: current.0.clone(),
                seats: current.1,
                updated_at: at(day, rng.below(86_400) as i64),
                op: "UPSERT",
            };
            let late = rng.percent(17) && day + 2 <= DAYS;
            let lands = if late { day + 2 } else { day };
            files[(lands - 1) as usize].push(change);
        }
        let special = |n: u64, seconds: i64, op: &'static str, plan: &(String, i64)| Change {
            account_id: account(n),
            plan: plan.0.clone(),
            seats: plan.1,
            updated_at: at(day, seconds),
            op,
        };
        let extra = match day {
            8 => {
                plans[2].1 += 10;
                Some(special(3, 43_200, "UPSERT", &plans[2]))
            }
            10 => Some(special(7, 43_200, "DELETE", &plans[6])),
            14 => {
                plans[6] = ("free".into(), 1);
                Some(special(7, 32_400, "UPSERT", &plans[6]))
            }
            20 => files[4].first().cloned(),
            _ => None,
        };
        files[(day - 1) as usize].extend(extra);
    }
    files
}
