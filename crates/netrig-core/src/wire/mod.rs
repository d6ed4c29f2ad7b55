//! Wire formats as checked views: parse validates, emit writes; offsets live here only.

pub mod iperf3;
pub mod probe;
