//! The plain data Reckon's layers share with the pages, defined once: what a run and each of its
//! flows did, the check's lines, a lab's freshness and settings, who is asking, and what each page
//! shows. The server fills these, the history stores and reads them back, the JSON API and the
//! server functions send them as they are. No engine types here: the wasm build never sees Kafka,
//! Delta or DataFusion.

mod class;
mod lab;
mod pages;
mod pipeline;
mod run;
mod teaching;
mod writing;

pub use class::*;
pub use lab::*;
pub use pages::*;
pub use pipeline::*;
pub use run::*;
pub use teaching::*;
pub use writing::*;

/// The lab a server always has; its pages live at `/`, every other lab's at `/labs/{name}/`.
pub const DEFAULT_LAB: &str = "default";

/// The statuses an order event may carry (SPEC §1), in the order the produce form lists them.
pub const STATUSES: [&str; 5] = ["placed", "paid", "shipped", "delivered", "cancelled"];
