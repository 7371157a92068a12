//! roofprobe: measures what a GPU (or, without one, the host CPU) really delivers.
