//! Wire formats as checked views: parse validates, emit writes; offsets live here only.

pub mod ethernet;
pub mod iperf3;
pub mod pcap;
pub mod probe;
