//! The one integration-test binary.

mod sass;
