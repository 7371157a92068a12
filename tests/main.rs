//! The one integration-test binary.
mod cli_roofline;
