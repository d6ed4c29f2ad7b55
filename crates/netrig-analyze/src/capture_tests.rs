//! Tests of `capture`: pcap and pcapng in every byte order and resolution, truncation,
//! gzip (members, damage, a bomb read in bounded memory).

use super::*;

fn pcap_header(magic: u32, be: bool, link: u32) -> Vec<u8> {
    let mut v = Vec::new();
    let w32 = |v: &mut Vec<u8>, x: u32| v.extend(if be { x.to_be_bytes() } else { x.to_le_bytes() });
    w32(&mut v, magic);
    v.extend(if be { [0u8, 2, 0, 4] } else { [2u8, 0, 4, 0] });
    w32(&mut v, 0);
    w32(&mut v, 0);
    w32(&mut v, 65535);
    w32(&mut v, link);
    v
}

fn record(v: &mut Vec<u8>, be: bool, sec: u32, frac: u32, data: &[u8]) {
    for x in [sec, frac, data.len() as u32, data.len() as u32] {
        v.extend(if be { x.to_be_bytes() } else { x.to_le_bytes() });
    }
    v.extend(data);
}

/// Each packet's frame number, time (ns), interface and bytes.
type Frames = Vec<(u64, i64, usize, Vec<u8>)>;

fn all(bytes: Vec<u8>) -> Result<Frames, CaptureError> {
    let mut r = Reader::new("x.pcap", &bytes[..])?;
    let mut out = Vec::new();
    while let Some(p) = r.next_packet()? {
        out.push((p.frame, p.ts_ns, p.iface, p.data.to_vec()));
    }
    Ok(out)
}

#[test]
fn classic_pcap_in_both_byte_orders_and_resolutions() {
    for be in [false, true] {
        for (magic, frac, want) in [(0xA1B2C3D4u32, 5u32, 5_000i64), (0xA1B23C4D, 5, 5)] {
            let mut v = pcap_header(magic, be, 1);
            record(&mut v, be, 2, frac, b"abc");
            record(&mut v, be, 3, 0, b"de");
            let got = all(v).unwrap();
            assert_eq!(got[0], (1, 2_000_000_000 + want, 0, b"abc".to_vec()));
            assert_eq!(got[1].0, 2);
        }
    }
}

#[test]
fn a_microsecond_field_past_one_second_wraps_as_wiretap_reads_it() {
    let mut v = pcap_header(0xA1B2C3D4, false, 101);
    record(&mut v, false, 1_147_551_795, 8_915_240, b"x");
    assert_eq!(all(v).unwrap()[0].1, 1_147_551_795_325_305_408);
}

#[test]
fn a_file_larger_than_the_buffers_is_read_whole() {
    // 6 MB: past the first buffer (64 KiB) and past one CHUNK (4 MiB).
    let mut v = pcap_header(0xA1B2C3D4, false, 1);
    for i in 0..3000u32 {
        record(&mut v, false, i, 0, &vec![i as u8; 1000 + (i as usize % 1500)]);
    }
    let got = all(v).unwrap();
    assert_eq!(got.len(), 3000);
    for (i, (frame, ts, _, data)) in got.iter().enumerate() {
        assert_eq!((*frame, *ts), (i as u64 + 1, i as i64 * 1_000_000_000));
        assert_eq!(data, &vec![i as u8; 1000 + (i % 1500)]);
    }
}

#[test]
fn truncated_record_names_its_offset() {
    let mut v = pcap_header(0xA1B2C3D4, false, 1);
    record(&mut v, false, 1, 0, b"abcd");
    record(&mut v, false, 1, 0, b"efgh");
    v.truncate(v.len() - 2);
    let e = all(v).unwrap_err().to_string();
    assert!(
        e.starts_with("x.pcap: byte offset 44: packet 2 cut short (2 of 4 bytes)"),
        "{e}"
    );
}

#[test]
fn wrong_magic_is_refused() {
    let e = all(b"GIF89a......................".to_vec())
        .unwrap_err()
        .to_string();
    assert!(e.contains("byte offset 0: not a pcap or pcapng file"), "{e}");
}

fn block(be: bool, t: u32, body: &[u8]) -> Vec<u8> {
    let l = (12 + body.len()) as u32;
    let w = |x: u32| if be { x.to_be_bytes() } else { x.to_le_bytes() };
    let mut v = Vec::new();
    v.extend(w(t));
    v.extend(w(l));
    v.extend(body);
    v.extend(w(l));
    v
}

fn pcapng(be: bool) -> Vec<u8> {
    let w32 = |x: u32| if be { x.to_be_bytes() } else { x.to_le_bytes() };
    let w16 = |x: u16| if be { x.to_be_bytes() } else { x.to_le_bytes() };
    let mut shb = Vec::new();
    shb.extend(w32(0x1A2B3C4D));
    shb.extend(w16(1));
    shb.extend(w16(0));
    shb.extend([0xFF; 8]);
    let mut idb = Vec::new();
    idb.extend(w16(1));
    idb.extend(w16(0));
    idb.extend(w32(0));
    idb.extend(w16(2));
    idb.extend(w16(6));
    idb.extend(b"veth-a\0\0");
    idb.extend(w16(9));
    idb.extend(w16(1));
    idb.extend([9, 0, 0, 0]);
    idb.extend([0; 4]);
    let mut epb = Vec::new();
    let ts: u64 = 1_700_000_000_123_456_789;
    for x in [0, (ts >> 32) as u32, ts as u32, 3, 3] {
        epb.extend(w32(x));
    }
    epb.extend(b"xyz\0");
    let mut out = block(be, 0x0A0D0D0A, &shb);
    out.extend(block(be, 1, &idb));
    out.extend(block(be, 6, &epb));
    out
}

#[test]
fn pcapng_in_both_byte_orders_with_names_and_nanoseconds() {
    for be in [false, true] {
        let mut v = pcapng(be);
        // A second section: interface ids start again at 0.
        v.extend(pcapng(be));
        let mut r = Reader::new("x.pcapng", &v[..]).unwrap();
        let p = r.next_packet().unwrap().unwrap();
        assert_eq!(
            (p.frame, p.ts_ns, p.iface, p.data),
            (1, 1_700_000_000_123_456_789, 0, &b"xyz"[..])
        );
        let p = r.next_packet().unwrap().unwrap();
        assert_eq!((p.frame, p.iface), (2, 1));
        assert!(r.next_packet().unwrap().is_none());
        assert_eq!(r.interfaces()[1].name.as_deref(), Some("veth-a"));
    }
}

#[test]
fn simple_packet_blocks_use_interface_0_and_count_as_frames() {
    let mut v = pcapng(false);
    let mut spb = 5u32.to_le_bytes().to_vec();
    spb.extend(b"hello\0\0\0");
    v.extend(block(false, 3, &spb));
    v.extend(block(false, 5, &[0; 8])); // an interface statistics block: skipped
    let mut r = Reader::new("x.pcapng", &v[..]).unwrap();
    r.next_packet().unwrap().unwrap();
    let p = r.next_packet().unwrap().unwrap();
    assert_eq!((p.frame, p.iface, p.orig_len, p.data), (2, 0, 5, &b"hello"[..]));
    assert!(r.next_packet().unwrap().is_none());
}

#[test]
fn pcapng_block_cut_short() {
    let mut v = pcapng(false);
    v.truncate(v.len() - 3);
    let mut r = Reader::new("x.pcapng", &v[..]).unwrap();
    let e = r.next_packet().unwrap_err().to_string();
    assert!(e.contains("pcapng block (type 0x6) cut short"), "{e}");
}

fn gz(bytes: &[u8]) -> Vec<u8> {
    use std::io::Write;
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    e.write_all(bytes).unwrap();
    e.finish().unwrap()
}

#[test]
fn a_gzip_capture_is_read_as_its_contents_whatever_its_name() {
    // Two gzip members back to back (as `cat a.gz b.gz` makes) are one stream.
    let mut v = pcap_header(0xA1B2C3D4, false, 1);
    record(&mut v, false, 2, 5, b"abc");
    let mut more = Vec::new();
    record(&mut more, false, 3, 0, b"de");
    let (first, second) = (gz(&v), gz(&more));
    let file: Vec<u8> = [first.clone(), second].concat();
    let mut r = Reader::new("capture.bin", &file[..]).unwrap();
    assert!(r.gzip());
    let p = r.next_packet().unwrap().unwrap();
    assert_eq!((p.frame, p.ts_ns, p.data), (1, 2_000_005_000, &b"abc"[..]));
    assert_eq!(r.next_packet().unwrap().unwrap().data, b"de");
    assert!(r.next_packet().unwrap().is_none());
    assert_eq!(r.file_bytes(), file.len() as u64);
    assert_eq!(r.bytes_read, (v.len() + more.len()) as u64);
    // pcapng too.
    let ng = gz(&pcapng(true));
    let mut r = Reader::new("x.pcapng.gz", &ng[..]).unwrap();
    assert_eq!(r.next_packet().unwrap().unwrap().data, b"xyz");
    // A damaged stream is refused with a sentence naming the compressed offset.
    let mut bad = first.clone();
    let n = bad.len();
    bad[n - 6] ^= 0xFF; // the CRC
    let e = all(bad).unwrap_err().to_string();
    assert!(e.contains("the gzip-compressed data is damaged"), "{e}");
    let e = all(first[..first.len() / 2].to_vec()).unwrap_err().to_string();
    assert!(
        e.contains("gzip-compressed data is damaged") || e.contains("decompressed bytes"),
        "{e}"
    );
}

#[test]
fn a_gzip_bomb_is_read_in_bounded_memory() {
    // 40 MB of records inflated from a few hundred kB: read frame by frame, the buffer never
    // grows past one CHUNK; a record claiming 2 GB is refused before any allocation.
    let mut v = pcap_header(0xA1B2C3D4, false, 1);
    for i in 0..20_000u32 {
        record(&mut v, false, i, 0, &[0u8; 2000]);
    }
    let small = gz(&v);
    assert!(small.len() < 1_000_000, "{}", small.len());
    let mut r = Reader::new("bomb.gz", &small[..]).unwrap();
    let mut n = 0;
    while let Some(p) = r.next_packet().unwrap() {
        assert_eq!(p.data.len(), 2000);
        n += 1;
    }
    assert_eq!(n, 20_000);
    assert!(r.buf.len() <= CHUNK, "{}", r.buf.len());
    let mut v = pcap_header(0xA1B2C3D4, false, 1);
    for x in [1u32, 0, 2_000_000_000, 2_000_000_000] {
        v.extend(x.to_le_bytes());
    }
    let e = all(gz(&v)).unwrap_err().to_string();
    assert!(
        e.contains("claims 2000000000 captured bytes: corrupt file"),
        "{e}"
    );
    assert!(e.contains("offsets count the decompressed bytes"), "{e}");
}

#[test]
fn resolutions() {
    assert_eq!(TsResol::Pow10(6).to_ns(3), 3000);
    assert_eq!(TsResol::Pow10(12).to_ns(3000), 3);
    assert_eq!(TsResol::Pow2(10).to_ns(1024), 1_000_000_000);
}
