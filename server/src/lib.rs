//! Reckon's engine: the three streams (Kafka -> bronze -> silver / gold), the check that proves them
//! right, the local Kafka broker, and the lab (a data directory plus a topic) they all work on.

pub mod auth;
pub mod bench;
pub mod broker;
pub mod check;
pub mod config;
pub mod crash;
pub mod dashboard;
pub mod event;
pub mod freshness;
pub mod history;
pub mod http;
pub mod kafka;
pub mod lab;
pub mod labs;
pub mod limit;
pub mod render;
pub mod scenario;
pub mod streams;
pub mod tables;
pub mod views;

pub use config::Config;
pub use lab::Lab;
