//! Empty: this package exists for its manifest (see `Cargo.toml`).
