//! The three operations of the recall contract, siblings over one shared
//! contract: `memory.recall` ([`recall`]), `memory.expand` ([`expand`]) and
//! `memory.sessions` ([`sessions`]). Each turns validated arguments into one
//! page under the [`contract`]; [`envelope`] bounds whatever leaves the crate.

pub mod contract;
pub mod envelope;
pub mod expand;
pub mod forget;
pub mod pack;
pub mod recall;
pub mod sessions;
