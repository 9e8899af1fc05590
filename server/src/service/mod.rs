//! The lab service: the server's labs, and per lab its runner, settings and the data the pages show.

pub mod dashboard;
pub mod freshness;
pub mod lab;
pub mod labs;
pub mod views;
