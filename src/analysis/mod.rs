//! What the rows mean: the empirical roofline, the suspect flags, the calibration built from a
//! run, the runs read back from files, and the estimates made from them.

pub mod calibration;
pub mod estimate;
#[doc(hidden)]
pub mod fixtures;
pub mod inputs;
pub mod roofline;
pub mod suspect;
