//! pi-fabric-memory: recall over Pi session history, as a napi-rs addon.
//!
//! Everything but `src/napi/` is pure Rust with no napi import; the edge
//! there converts arguments, runs each call as an `AsyncTask` off the JS
//! thread and maps errors. See ARCHITECTURE.md for the data flow.
#![deny(clippy::all)]

pub(crate) mod args;
mod byte_string;
pub mod config;
pub(crate) mod coverage;
pub mod engine;
pub mod error;
mod fault;
pub mod forgotten;
pub(crate) mod fsread;
pub mod index;
pub(crate) mod jsregex;
pub mod ops;
mod pi_path;
pub mod project;
pub mod query;
#[cfg(test)]
mod safety_tests;
pub mod session;
pub mod store;
#[cfg(test)]
mod testing;
pub mod text;
pub mod threat;
pub(crate) mod tokenize;
#[cfg(test)]
mod write_fault_tests;

#[cfg_attr(test, allow(dead_code))]
mod napi;
