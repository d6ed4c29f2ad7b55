//! Wire formats as checked views: parse validates, emit writes; offsets live here only.
//!
//! - `iperf3`: iperf3's control connection (cookie, states, JSON frames) and UDP header.
//! - `probe`: netrig's own latency probe and request/response datagrams.
//! - `ethernet`: Ethernet II / IP frames as the link emulator sees them (flow, ECN, length).
//! - `pcap`: the classic libpcap capture file.
//! - `pcapng`: the pcapng capture file (interfaces, packets with comments and flags).
//! - `bpf`: classic BPF filter programs (as tcpdump compiles them), checked and run.
//!
//! Does not own what the bytes mean to a test (the `iperf3` documents, `stats`) or to a
//! link (the `link` model); nothing here uses them.

pub mod bpf;
pub mod ethernet;
pub mod iperf3;
pub mod pcap;
pub mod pcapng;
pub mod probe;
