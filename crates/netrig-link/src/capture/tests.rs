//! Captures written and read back: requests checked, rings and size bounds, filters,
//! superframes written as their segments.

use super::*;

fn tmpdir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("netrig-capture-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn request(json: &str) -> CaptureRequest {
    serde_json::from_str(json).unwrap()
}

fn spec() -> DirectionSpec {
    serde_json::from_str(r#"{"queue": {"limit_packets": 100}, "loss": {"random": {"p": 0.05}}}"#).unwrap()
}

#[test]
fn a_symbolic_link_at_the_capture_path_is_refused() {
    let dir = tmpdir("symlink");
    let target = dir.join("target");
    std::fs::write(&target, b"keep").unwrap();
    let link = dir.join("cap.pcapng");
    std::os::unix::fs::symlink(&target, &link).unwrap();
    let req = format!(r#"{{"link":"l1","path":"{}"}}"#, link.display());
    let s = spec();
    let err = Capture::start("l1", request(&req).check().unwrap(), [&s, &s], 0, 0)
        .err()
        .unwrap();
    assert!(err.to_string().contains("cap.pcapng"), "{err}");
    assert_eq!(std::fs::read(&target).unwrap(), b"keep");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn ring_names_put_the_index_before_the_extension() {
    assert_eq!(
        ring_path(Path::new("/x/cap.pcapng"), 0),
        Path::new("/x/cap.pcapng")
    );
    assert_eq!(
        ring_path(Path::new("/x/cap.pcapng"), 2),
        Path::new("/x/cap.2.pcapng")
    );
    assert_eq!(ring_path(Path::new("/x/cap"), 1), Path::new("/x/cap.1"));
}

#[test]
fn requests_are_checked_field_by_field() {
    let e = |j: &str| request(j).check().unwrap_err();
    assert_eq!(
        e(r#"{"link":"l","path":"p","dir":"up"}"#),
        "dir: 'up' is not a_to_b, b_to_a or both"
    );
    assert_eq!(
        e(r#"{"link":"l","path":"p","snaplen":0}"#),
        "snaplen: must be at least 1 byte"
    );
    assert_eq!(
        e(r#"{"link":"l","path":"p","files":3}"#),
        "files: a ring of files needs file_size"
    );
    assert!(e(r#"{"link":"l","path":"p","file_size":1000}"#).starts_with("file_size: 1000 bytes cannot hold"));
    assert_eq!(
        e(r#"{"link":"l","path":"p","bpf":[[21,1,0,0],[6,0,0,0]]}"#),
        "bpf: instruction 0: jump 1/0 leaves the program"
    );
    assert_eq!(
        e(r#"{"link":"l","path":"p","bpf":[[6,300,0,0]]}"#),
        "bpf: instruction 0: jt 300 is above 255"
    );
    assert!(serde_json::from_str::<CaptureRequest>(r#"{"link":"l","path":"p","snap":1}"#).is_err());
    let ok = request(r#"{"link":"l","path":"p"}"#).check().unwrap();
    assert_eq!(
        (ok.dirs, ok.snaplen, ok.drops, ok.files),
        ([true, true], DEFAULT_SNAPLEN, true, 1)
    );
}

fn frame(n: usize) -> Vec<u8> {
    vec![0x5a; n]
}

#[test]
fn a_ring_rotates_by_size_and_stays_within_files_times_size() {
    let dir = tmpdir("ring");
    let base = dir.join("cap.pcapng");
    let size = 8192u64;
    let req = format!(
        r#"{{"link":"l1","path":"{}","snaplen":1500,"file_size":{size},"files":3}}"#,
        base.display()
    );
    let opts = request(&req).check().unwrap();
    let s = spec();
    let mut c = Capture::start("l1", opts, [&s, &s], 0, 1_700_000_000_000_000_000).unwrap();
    for i in 0..200u64 {
        c.delivered((i % 2) as usize, i * 1000, &[], &frame(1000), false, false);
        if i % 10 == 0 {
            c.dropped(0, i * 1000, &[], &frame(1000), DropReason::Overflow);
        }
    }
    let status = c.finish();
    let counters = status["counters"].clone();
    assert_eq!(counters["frames"], 220);
    assert_eq!(counters["drops"], 20);
    let files: Vec<PathBuf> = (0..3).map(|k| ring_path(&base, k)).collect();
    let sizes: Vec<u64> = files
        .iter()
        .map(|f| std::fs::metadata(f).unwrap().len())
        .collect();
    assert!(sizes.iter().all(|&s| s <= size), "{sizes:?}");
    assert!(!ring_path(&base, 3).exists(), "never more than `files` files");
    // Each file is one section: it starts with a section header.
    for f in &files {
        assert_eq!(&std::fs::read(f).unwrap()[..4], &[0x0a, 0x0d, 0x0d, 0x0a]);
    }
    // 220 blocks of 1000 + 32 + options bytes: about 7 per file, so many rotations.
    let rotated = counters["files_rotated"].as_u64().unwrap();
    assert!(rotated >= 25, "{rotated}");
    assert_eq!(status["files"].as_array().unwrap().len(), 3);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn one_file_stops_at_its_size_and_keeps_the_beginning() {
    let dir = tmpdir("one");
    let base = dir.join("cap.pcapng");
    let size = 8192u64;
    let req = format!(
        r#"{{"link":"l1","path":"{}","snaplen":1500,"file_size":{size},"files":1}}"#,
        base.display()
    );
    let opts = request(&req).check().unwrap();
    let s = spec();
    let mut c = Capture::start("l1", opts, [&s, &s], 0, 1_700_000_000_000_000_000).unwrap();
    for i in 0..100u64 {
        c.delivered(0, i * 1000, &[], &frame(1000), false, false);
    }
    let status = c.finish();
    let counters = status["counters"].clone();
    let kept = counters["frames"].as_u64().unwrap();
    assert!((5..=8).contains(&kept), "{kept}");
    assert_eq!(counters["over_size"].as_u64().unwrap(), 100 - kept);
    assert_eq!(counters["files_rotated"], 0);
    assert!(std::fs::metadata(&base).unwrap().len() <= size);
    assert!(!ring_path(&base, 1).exists());
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn filters_count_what_they_leave_out_and_drops_off_count_into_the_next_frame() {
    let dir = tmpdir("filter");
    let base = dir.join("cap.pcapng");
    // len > 1000 (tcpdump -ddd 'len > 1000')
    let req = format!(
        r#"{{"link":"l1","dir":"a_to_b","path":"{}","drops":false,
             "bpf":[[128,0,0,0],[37,0,1,1000],[6,0,0,262144],[6,0,0,0]]}}"#,
        base.display()
    );
    let s = spec();
    let mut c = Capture::start("l1", request(&req).check().unwrap(), [&s, &s], 0, 0).unwrap();
    c.delivered(0, 1, &[], &frame(1500), false, false);
    c.delivered(0, 2, &[], &frame(100), false, false);
    c.dropped(0, 3, &[], &frame(1500), DropReason::Loss);
    c.dropped(0, 4, &[], &frame(1500), DropReason::Loss);
    c.delivered(1, 5, &[], &frame(1500), false, false); // not captured
    c.delivered(0, 6, &[], &frame(1200), true, false);
    let st = c.finish();
    assert_eq!(st["counters"]["frames"], 2);
    assert_eq!(st["counters"]["filtered"], 1);
    assert_eq!(st["counters"]["drops"], 0);
    assert_eq!(st["interfaces"], json!(["l1 a->b"]));
    let bytes = std::fs::read(&base).unwrap();
    // The last block carries the duplicate's comment and a drop count of 2.
    let text = String::from_utf8_lossy(&bytes);
    assert!(text.contains("netrig-link duplicated this frame"), "{text}");
    let tail = &bytes[bytes.len() - 20..bytes.len() - 8];
    assert_eq!(&tail[..4], &[4, 0, 8, 0], "epb_dropcount, 8 bytes");
    assert_eq!(u64::from_le_bytes(tail[4..12].try_into().unwrap()), 2);
    let _ = std::fs::remove_dir_all(&dir);
}

/// The enhanced packet blocks of a pcapng file: (timestamp, captured bytes, original
/// length, flags, comment).
fn blocks(bytes: &[u8]) -> Vec<(u64, Vec<u8>, u32, u32, String)> {
    let u = |i: usize| u32::from_le_bytes(bytes[i..i + 4].try_into().unwrap());
    let mut out = vec![];
    let mut at = 0;
    while at + 12 <= bytes.len() {
        let (kind, len) = (u(at), u(at + 4) as usize);
        if kind == 6 {
            let ts = ((u(at + 12) as u64) << 32) | u(at + 16) as u64;
            let (cap, orig) = (u(at + 20) as usize, u(at + 24));
            let data = bytes[at + 28..at + 28 + cap].to_vec();
            let (mut o, end) = (at + 28 + cap.div_ceil(4) * 4, at + len - 4);
            let (mut flags, mut comment) = (0, String::new());
            while o + 4 <= end {
                let code = u16::from_le_bytes([bytes[o], bytes[o + 1]]);
                let n = u16::from_le_bytes([bytes[o + 2], bytes[o + 3]]) as usize;
                let v = &bytes[o + 4..o + 4 + n];
                match code {
                    1 => comment = String::from_utf8_lossy(v).into_owned(),
                    2 => flags = u32::from_le_bytes(v.try_into().unwrap()),
                    _ => {}
                }
                o += 4 + n.div_ceil(4) * 4;
            }
            out.push((ts, data, orig, flags, comment));
        }
        at += len;
    }
    out
}

#[test]
fn a_superframe_is_written_as_its_segments_spaced_at_the_link_rate() {
    use crate::gso::tests::{payload, superframe, tcp, verify, vnet};
    use crate::gso::{VnetHdr, GSO_TCPV4};
    let dir = tmpdir("segments");
    let base = dir.join("cap.pcapng");
    let req = format!(r#"{{"link":"l1","dir":"a_to_b","path":"{}"}}"#, base.display());
    let s: DirectionSpec = serde_json::from_str(
        r#"{"rate_bps": 10000000000, "overhead_bytes": 20, "queue": {"limit_packets": 100}}"#,
    )
    .unwrap();
    let mut c = Capture::start("l1", request(&req).check().unwrap(), [&s, &s], 0, 0).unwrap();
    let frame = superframe(false, tcp(1000, 0x18), &payload(3 * 1448 + 100), 7);
    let v = vnet(GSO_TCPV4, 1448, 34, 16);
    c.delivered(0, 1_000_000, &v, &frame, false, false);
    c.dropped(0, 2_000_000, &v, &frame, DropReason::Overflow);
    let mut zero = VnetHdr::parse(&v).unwrap();
    zero.gso_size = 0;
    c.delivered(0, 3_000_000, &zero.to_bytes(), &frame, false, false);
    c.delivered(0, 4_000_000, &[0u8; 10], &frame[..100], false, false); // no offload
    let past = VnetHdr {
        flags: crate::gso::F_NEEDS_CSUM,
        csum_start: 90,
        csum_offset: 16,
        ..VnetHdr::default()
    };
    c.delivered(0, 5_000_000, &past.to_bytes(), &frame[..100], false, false);
    let st = c.finish();
    let b = blocks(&std::fs::read(&base).unwrap());
    assert_eq!(
        b.len(),
        11,
        "4 + 4 segments, a whole superframe, two plain frames"
    );
    let lens: Vec<usize> = b.iter().map(|x| x.1.len()).collect();
    assert_eq!(
        lens,
        [
            1514,
            1514,
            1514,
            166,
            1514,
            1514,
            1514,
            166,
            frame.len(),
            100,
            100
        ]
    );
    // 10 Gbit/s: 0.8 ns a byte; each segment leaves the bytes after it, 20 bytes of
    // overhead each, sooner.
    let ts: Vec<u64> = b[..4].iter().map(|x| x.0).collect();
    assert_eq!(
        ts,
        [1_000_000 - 2604, 1_000_000 - 1376, 1_000_000 - 149, 1_000_000]
    );
    for x in &b[..8] {
        verify(&x.1, 14, false);
    }
    for x in &b[4..8] {
        assert_eq!((x.0, x.3), (2_000_000, FLAG_INBOUND));
        assert_eq!(
            x.4,
            "netrig-link dropped this frame: queue full (drop-tail, 100 packets)"
        );
    }
    assert_eq!(
        b[8].4,
        "netrig-link wrote this superframe whole: its gso_size is 0"
    );
    assert_eq!((b[9].3, b[9].4.as_str()), (FLAG_OUTBOUND, ""));
    assert_eq!(
        b[10].4,
        "netrig-link wrote this frame as it came: its checksum at csum_start 90 + csum_offset 16 \
         is past its 100 bytes"
    );
    let cnt = &st["counters"];
    assert_eq!(
        (cnt["frames"].as_u64(), cnt["drops"].as_u64()),
        (Some(11), Some(4))
    );
    assert_eq!(
        (cnt["superframes"].as_u64(), cnt["unsegmented"].as_u64()),
        (Some(2), Some(2))
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn filter_and_snap_length_apply_per_segment_and_unwritten_drops_count_segments() {
    use crate::gso::tests::{payload, superframe, tcp, vnet};
    use crate::gso::GSO_TCPV4;
    let dir = tmpdir("segfilter");
    let base = dir.join("cap.pcapng");
    // len > 1000 (tcpdump -ddd 'len > 1000'), 80 bytes kept of each frame.
    let req = format!(
        r#"{{"link":"l1","dir":"a_to_b","path":"{}","drops":false,"snaplen":80,
             "bpf":[[128,0,0,0],[37,0,1,1000],[6,0,0,262144],[6,0,0,0]]}}"#,
        base.display()
    );
    let s = spec();
    let mut c = Capture::start("l1", request(&req).check().unwrap(), [&s, &s], 0, 0).unwrap();
    let frame = superframe(false, tcp(1, 0x10), &payload(3 * 1448 + 100), 7);
    let v = vnet(GSO_TCPV4, 1448, 34, 16);
    c.dropped(0, 1, &v, &frame, DropReason::Loss);
    c.delivered(0, 2, &v, &frame, false, false);
    let st = c.finish();
    let b = blocks(&std::fs::read(&base).unwrap());
    assert_eq!(b.len(), 3, "the short last segment is filtered out");
    assert!(
        b.iter().all(|x| x.1.len() == 80 && x.2 == 1514),
        "cut to the snap length"
    );
    assert_eq!(st["counters"]["filtered"], 1);
    // The first frame written carries the 4 segments dropped before it.
    let bytes = std::fs::read(&base).unwrap();
    let text = bytes.windows(4).position(|w| w == [4, 0, 8, 0]).unwrap();
    assert_eq!(
        u64::from_le_bytes(bytes[text + 4..text + 12].try_into().unwrap()),
        4
    );
    let _ = std::fs::remove_dir_all(&dir);
}
