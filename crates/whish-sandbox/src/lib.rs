//! # whish-sandbox
//!
//! A local, stateful simulator of the three whish services (money transfer with locations, hosted
//! collect, international top-up), for integration tests and the `whish demo`.
//!
//! **Status:** not built yet (issue 7). This crate is a placeholder so the workspace layout is
//! complete; it exports nothing.
#![forbid(unsafe_code)]
#![deny(missing_docs)]
