//! The one integration-test binary.

mod interp;
