//! Frames built in tests: TCP segments in IPv4 or IPv6, wrapped in any link layer or
//! tunnel by the helpers below. Checksums are left at 0 (tshark checks none by default).
//!
//! With NETRIG_DECODE_PCAPS=DIR set, `dump` also writes each test frame to DIR/NAME.pcap
//! so that tshark can be run on it (`tshark -r DIR/NAME.pcap -T fields -e tcp.len ...`);
//! each test's comment says what tshark 4.0.17 shows for its frames.

/// A TCP header (20 bytes, or 24 with a window-scale option) and `len` bytes of payload.
pub fn tcp(sport: u16, dport: u16, seq: u32, ack: u32, flags: u16, win: u16, len: usize) -> Vec<u8> {
    let mut v = Vec::new();
    v.extend(sport.to_be_bytes());
    v.extend(dport.to_be_bytes());
    v.extend(seq.to_be_bytes());
    v.extend(ack.to_be_bytes());
    v.extend([0x50, flags as u8]);
    v.extend(win.to_be_bytes());
    v.extend([0, 0, 0, 0]);
    v.resize(v.len() + len, b'x');
    v
}

/// The test segment: 10.0.0.1:1000 -> 10.0.0.2:80, seq 7, ack 9, ACK, window 512, 10 bytes.
pub fn seg() -> Vec<u8> {
    tcp(1000, 80, 7, 9, super::ACK, 512, 10)
}

pub fn ip4(src: [u8; 4], dst: [u8; 4], proto: u8, payload: &[u8]) -> Vec<u8> {
    let mut v = vec![0x45, 0];
    v.extend(((20 + payload.len()) as u16).to_be_bytes());
    v.extend([0, 1, 0x40, 0, 64, proto, 0, 0]);
    v.extend(src);
    v.extend(dst);
    v.extend(payload);
    v
}

/// The test segment in IPv4 (10.0.0.1 -> 10.0.0.2).
pub fn ip4_seg() -> Vec<u8> {
    ip4([10, 0, 0, 1], [10, 0, 0, 2], 6, &seg())
}

pub fn ip6(src: u8, dst: u8, next: u8, payload: &[u8]) -> Vec<u8> {
    let mut v = vec![0x60, 0, 0, 0];
    v.extend((payload.len() as u16).to_be_bytes());
    v.extend([next, 64]);
    let addr = |last: u8| {
        let mut a = [0u8; 16];
        a[0] = 0xFD;
        a[15] = last;
        a
    };
    v.extend(addr(src));
    v.extend(addr(dst));
    v.extend(payload);
    v
}

/// The test segment in IPv6 (fd00::1 -> fd00::2).
pub fn ip6_seg() -> Vec<u8> {
    ip6(1, 2, 6, &seg())
}

pub fn eth(ethertype: u16, payload: &[u8]) -> Vec<u8> {
    let mut v = vec![2, 2, 2, 2, 2, 2, 4, 4, 4, 4, 4, 4];
    v.extend(ethertype.to_be_bytes());
    v.extend(payload);
    v
}

pub fn udp(sport: u16, dport: u16, payload: &[u8]) -> Vec<u8> {
    let mut v = Vec::new();
    v.extend(sport.to_be_bytes());
    v.extend(dport.to_be_bytes());
    v.extend(((8 + payload.len()) as u16).to_be_bytes());
    v.extend([0, 0]);
    v.extend(payload);
    v
}

/// Bytes concatenated.
pub fn cat(parts: &[&[u8]]) -> Vec<u8> {
    parts.concat()
}

/// Ethernet + IPv4 + TCP with a payload of `len` bytes.
#[allow(clippy::too_many_arguments)]
pub fn ipv4_tcp(
    src: [u8; 4],
    dst: [u8; 4],
    sport: u16,
    dport: u16,
    seq: u32,
    ack: u32,
    flags: u16,
    win: u16,
    len: usize,
) -> Vec<u8> {
    eth(
        0x0800,
        &ip4(src, dst, 6, &tcp(sport, dport, seq, ack, flags, win, len)),
    )
}

/// Writes `frame` as a one-packet pcap of `link_type` to $NETRIG_DECODE_PCAPS/NAME.pcap,
/// when that variable is set.
pub fn dump(name: &str, link_type: u32, frame: &[u8]) {
    dump_frames(name, link_type, &[frame]);
}

pub fn dump_frames(name: &str, link_type: u32, frames: &[&[u8]]) {
    let Some(dir) = std::env::var_os("NETRIG_DECODE_PCAPS") else {
        return;
    };
    let mut v = Vec::new();
    for x in [0xA1B2_C3D4u32, 0x0004_0002, 0, 0, 65535, link_type] {
        v.extend(x.to_le_bytes());
    }
    for (i, f) in frames.iter().enumerate() {
        for x in [1 + i as u32, 0, f.len() as u32, f.len() as u32] {
            v.extend(x.to_le_bytes());
        }
        v.extend(*f);
    }
    let path = std::path::Path::new(&dir).join(format!("{name}.pcap"));
    std::fs::write(&path, v).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
}
