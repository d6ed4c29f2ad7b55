//! What a test prints: iperf3's text lines for people, iperf3's `-J` document and
//! `--json-stream` events for programs. One `Output` per test, on either side.

use std::fs::File;
use std::io::Write;
use std::sync::{Arc, Mutex};

use netrig_core::iperf3::StreamResult;
use netrig_core::units::{format_bytes, format_rate_as, UnitFormat};
use serde_json::{json, Map, Value};

use crate::config::{Common, Format};
use crate::report::{rate, CpuUsage, Sample, TcpExtremes};

pub const SEPARATOR: &str = "- - - - - - - - - - - - - - - - - - - - - - - - -";

/// Where lines go: stdout, or a log file shared by every test of a server.
#[derive(Clone)]
pub enum Sink {
    Stdout,
    File(Arc<Mutex<File>>),
}

impl Sink {
    fn write(&self, text: &str) {
        match self {
            Sink::Stdout => {
                let mut out = std::io::stdout().lock();
                let _ = out.write_all(text.as_bytes());
                let _ = out.flush();
            }
            Sink::File(f) => {
                let mut f = f.lock().unwrap();
                let _ = f.write_all(text.as_bytes());
                let _ = f.flush();
            }
        }
    }
}

/// `%.2g` as C prints it, for loss percentages.
pub fn fmt_g2(x: f64) -> String {
    if x == 0.0 || !x.is_finite() {
        return "0".into();
    }
    let exp = x.abs().log10().floor() as i32;
    if !(-4..2).contains(&exp) {
        let mant = x / 10f64.powi(exp);
        let m = format!("{mant:.1}");
        let m = m.trim_end_matches('0').trim_end_matches('.');
        return format!("{m}e{}{:02}", if exp < 0 { '-' } else { '+' }, exp.abs());
    }
    let decimals = (1 - exp).max(0) as usize;
    let s = format!("{x:.decimals$}");
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    }
}

fn round6(x: f64) -> f64 {
    (x * 1e6).round() / 1e6
}

/// One side of a stream's end-of-test figures.
#[derive(Debug, Clone, Default)]
pub struct Side {
    pub end: f64,
    pub seconds: f64,
    pub bytes: u64,
    pub retransmits: Option<i64>,
    pub extremes: Option<TcpExtremes>,
    /// A paced sender's account of its schedule (netrig's `pacing` object).
    pub pacing: Option<Value>,
}

/// UDP end-of-test figures of one stream (the receiver's view, as iperf3 reports).
#[derive(Debug, Clone, Default)]
pub struct UdpEnd {
    pub jitter_ms: f64,
    pub lost: i64,
    pub packets: i64,
    pub out_of_order: i64,
    pub duplicates: i64,
    /// Datagrams the receiver judged not the sender's (netrig's `suspicious`); None
    /// when the receiver is an iperf3 peer, which does not count them.
    pub suspicious: Option<i64>,
    /// The sending side's own figures for its "sender" line.
    pub sent_packets: i64,
}

impl UdpEnd {
    pub fn lost_percent(&self) -> f64 {
        if self.packets > 0 {
            100.0 * self.lost as f64 / self.packets as f64
        } else {
            0.0
        }
    }
}

#[derive(Debug, Clone)]
pub struct EndStream {
    pub socket: i32,
    /// Whether the local stream sends.
    pub local_sender: bool,
    pub sender: Option<Side>,
    pub receiver: Option<Side>,
    pub udp: Option<UdpEnd>,
}

impl EndStream {
    /// Combines local totals with the peer's results for the same stream (if any).
    /// `whole_test`: no warm-up was omitted, so the peer's UDP counts (which include the
    /// warm-up, as iperf3's do) cover the same span as ours.
    pub fn build(
        local: &Sample,
        extremes: Option<TcpExtremes>,
        peer: Option<&StreamResult>,
        udp: bool,
        whole_test: bool,
    ) -> EndStream {
        let s = &local.stream;
        let local_side = Side {
            end: local.end,
            seconds: local.end,
            bytes: local.bytes,
            retransmits: local.tcp.map(|t| t.retransmits as i64),
            extremes: if s.sender { extremes } else { None },
            pacing: s.pacing.lock().unwrap().as_ref().map(crate::report::pacing_json),
        };
        let peer_side = peer.map(|p| Side {
            end: p.end_time,
            seconds: p.end_time,
            bytes: p.bytes,
            retransmits: (p.retransmits >= 0).then_some(p.retransmits),
            // The peer's sender extremes, when a netrig peer sent them (iperf3 does not).
            extremes: if s.sender {
                None
            } else {
                p.netrig.as_ref().and_then(TcpExtremes::from_peer)
            },
            pacing: p.netrig.as_ref().and_then(|n| n.get("pacing")).cloned(),
        });
        let (mut sender, mut receiver) = if s.sender {
            (Some(local_side), peer_side)
        } else {
            (peer_side, Some(local_side))
        };
        // iperf3 reports both sides' "seconds" as the sender's duration.
        if let (Some(snd), Some(rcv)) = (sender.as_mut(), receiver.as_mut()) {
            rcv.seconds = snd.seconds;
        }
        if sender.as_ref().map(|x| x.retransmits.is_none()).unwrap_or(false) && udp {
            sender.as_mut().unwrap().retransmits = None;
        }
        let udp_end = udp.then(|| {
            let rx = local.udp_rx.unwrap_or_default();
            let extra = |key: &str| {
                peer.and_then(|p| p.netrig.as_ref())
                    .and_then(|n| n.get(key))
                    .and_then(Value::as_i64)
                    .unwrap_or(0)
            };
            if s.sender {
                // The receiver counts gaps below the highest sequence it saw; datagrams
                // after that (the tail still in flight at the end) are lost too.
                let sent = local.packets as i64;
                let p = peer.cloned().unwrap_or_default();
                let tail = if whole_test { (sent - p.packets).max(0) } else { 0 };
                UdpEnd {
                    jitter_ms: p.jitter * 1000.0,
                    lost: within(p.errors + tail, sent),
                    packets: sent,
                    out_of_order: extra("out_of_order"),
                    duplicates: extra("duplicates"),
                    suspicious: peer
                        .and_then(|p| p.netrig.as_ref())
                        .and_then(|n| n.get("suspicious"))
                        .and_then(Value::as_i64),
                    sent_packets: sent,
                }
            } else {
                let sent = peer.map(|p| p.packets).filter(|&n| n > 0 && whole_test);
                let tail = sent.map(|n| (n - rx.packets as i64).max(0)).unwrap_or(0);
                let packets = sent.unwrap_or(rx.packets as i64);
                UdpEnd {
                    jitter_ms: rx.jitter_ms,
                    lost: within(rx.lost as i64 + tail, packets),
                    packets,
                    out_of_order: rx.out_of_order as i64,
                    duplicates: rx.duplicates as i64,
                    suspicious: Some(rx.suspicious as i64),
                    sent_packets: packets,
                }
            }
        });
        EndStream {
            socket: s.socket,
            local_sender: s.sender,
            sender,
            receiver,
            udp: udp_end,
        }
    }
}

/// Datagrams lost, as a receiver counted them, within 0 and the `packets` the sender
/// says it sent: a receiver that took forged datagrams for the sender's (ours judges
/// the wild ones suspicious; an iperf3 peer takes them all) can count more gaps than
/// there were datagrams, and loss is never more than 100 %.
fn within(lost: i64, packets: i64) -> i64 {
    lost.clamp(0, packets.max(0))
}

/// Facts printed at the start of a test.
#[derive(Debug, Clone, Default)]
pub struct StartInfo {
    pub udp: bool,
    pub num_streams: u32,
    pub blksize: u64,
    pub omit: u64,
    pub duration: u64,
    pub bytes: u64,
    pub blocks: u64,
    pub reverse: bool,
    pub bidir: bool,
    pub tos: u32,
    pub target_bitrate: u64,
    pub cookie: String,
    pub tcp_mss_default: u32,
    pub sock_bufsize: u64,
    pub sndbuf_actual: i32,
    pub rcvbuf_actual: i32,
    pub is_client: bool,
    pub title: Option<String>,
    pub extra_data: Option<String>,
}

impl StartInfo {
    /// What the parameters say; the client adds its socket facts.
    pub fn of(
        p: &netrig_core::iperf3::Params,
        cookie: &netrig_core::wire::iperf3::Cookie,
        is_client: bool,
    ) -> StartInfo {
        StartInfo {
            udp: p.protocol == netrig_core::iperf3::Protocol::Udp,
            num_streams: p.parallel,
            blksize: p.len,
            omit: p.omit,
            duration: p.time,
            bytes: p.bytes,
            blocks: p.blocks,
            reverse: p.reverse,
            bidir: p.bidirectional,
            tos: p.tos,
            target_bitrate: p.bandwidth,
            cookie: cookie.as_str().to_string(),
            is_client,
            ..Default::default()
        }
    }
}

pub struct Output {
    pub format: Format,
    sink: Sink,
    /// Everything written as text, for `--get-server-output`.
    pub captured: Option<String>,
    udp: bool,
    bidir: bool,
    is_client: bool,
    streams_n: usize,
    header_printed: bool,
    start: Map<String, Value>,
    intervals: Vec<Value>,
    extras: Map<String, Value>,
    title: Option<String>,
    last_was_separator: bool,
    /// `-f`: the bitrate column's unit.
    units: UnitFormat,
    /// `--timestamps`: strftime format prefixed to every text line.
    timestamps: Option<String>,
}

fn sample_json(s: &Sample, udp: bool) -> Map<String, Value> {
    let mut m = Map::new();
    m.insert("socket".into(), s.stream.socket.into());
    m.insert("start".into(), round6(s.start).into());
    m.insert("end".into(), round6(s.end).into());
    m.insert("seconds".into(), s.seconds().into());
    m.insert("bytes".into(), s.bytes.into());
    m.insert("bits_per_second".into(), s.bits_per_second().into());
    if let Some(t) = &s.tcp {
        m.insert("retransmits".into(), t.retransmits.into());
        m.insert("snd_cwnd".into(), t.snd_cwnd.into());
        m.insert("snd_wnd".into(), t.snd_wnd.into());
        m.insert("rtt".into(), t.rtt.into());
        m.insert("rttvar".into(), t.rttvar.into());
        m.insert("pmtu".into(), t.pmtu.into());
    }
    if udp && s.stream.sender {
        m.insert("packets".into(), s.packets.into());
    }
    if let Some(u) = &s.udp_rx {
        m.insert("jitter_ms".into(), u.jitter_ms.into());
        m.insert("lost_packets".into(), u.lost.into());
        m.insert("packets".into(), u.packets.into());
        m.insert("lost_percent".into(), u.lost_percent().into());
        m.insert("out_of_order".into(), u.out_of_order.into());
        m.insert("duplicates".into(), u.duplicates.into());
        m.insert("suspicious".into(), u.suspicious.into());
    }
    m.insert("omitted".into(), s.omitted.into());
    m.insert("sender".into(), s.stream.sender.into());
    m
}

/// Sums of one direction's samples for an interval.
fn sum_samples(samples: &[&Sample], udp: bool) -> (Map<String, Value>, Sample) {
    let first = samples[0];
    let mut total = first.clone();
    total.bytes = samples.iter().map(|s| s.bytes).sum();
    total.packets = samples.iter().map(|s| s.packets).sum();
    if let Some(mut t) = first.tcp {
        t.retransmits = samples.iter().filter_map(|s| s.tcp.map(|t| t.retransmits)).sum();
        total.tcp = Some(t);
    }
    if let Some(mut u) = first.udp_rx {
        u.lost = samples.iter().filter_map(|s| s.udp_rx.map(|u| u.lost)).sum();
        u.packets = samples.iter().filter_map(|s| s.udp_rx.map(|u| u.packets)).sum();
        u.out_of_order = samples
            .iter()
            .filter_map(|s| s.udp_rx.map(|u| u.out_of_order))
            .sum();
        u.jitter_ms = samples
            .iter()
            .filter_map(|s| s.udp_rx.map(|u| u.jitter_ms))
            .sum::<f64>()
            / samples.len() as f64;
        total.udp_rx = Some(u);
    }
    let mut m = sample_json(&total, udp);
    m.remove("socket");
    if let Some(Value::Object(_)) = m.get("snd_cwnd") {}
    for k in [
        "snd_cwnd",
        "snd_wnd",
        "rtt",
        "rttvar",
        "pmtu",
        "out_of_order",
        "duplicates",
        "suspicious",
    ] {
        m.remove(k);
    }
    (m, total)
}

impl Output {
    pub fn new(format: Format, sink: Sink, capture: bool) -> Output {
        Output {
            format,
            sink,
            captured: capture.then(String::new),
            udp: false,
            bidir: false,
            is_client: true,
            streams_n: 0,
            header_printed: false,
            start: Map::new(),
            intervals: vec![],
            extras: Map::new(),
            title: None,
            last_was_separator: false,
            units: UnitFormat::default(),
            timestamps: None,
        }
    }

    /// Takes the text options shared by client and server (`-f`, `--timestamps`).
    pub fn configure(&mut self, common: &Common) {
        self.units = common.units;
        self.timestamps = common.timestamps.clone();
    }

    fn rate_text(&self, bits_per_second: f64) -> String {
        format_rate_as(bits_per_second, self.units)
    }

    /// A line for people (text mode only; also captured for the client).
    pub fn text(&mut self, line: &str) {
        self.last_was_separator = line == SEPARATOR;
        if let Some(c) = self.captured.as_mut() {
            c.push_str(line);
            c.push('\n');
        }
        if self.format == Format::Text {
            // As iperf3: timestamp, then title, then the line.
            let stamp = self
                .timestamps
                .as_deref()
                .map(|f| crate::timestamp::now(f).unwrap_or_default())
                .unwrap_or_default();
            let mut t = String::new();
            for l in line.split('\n') {
                match &self.title {
                    Some(title) => t.push_str(&format!("{stamp}{title}:  {l}\n")),
                    None => t.push_str(&format!("{stamp}{l}\n")),
                }
            }
            self.sink.write(&t);
        }
    }

    pub fn event(&mut self, name: &str, data: Value) {
        if self.format == Format::JsonStream {
            let line = json!({ "event": name, "data": data }).to_string();
            self.sink.write(&format!("{line}\n"));
        }
    }

    /// A netrig extra (e.g. TCP_INFO samples): streamed, or kept for the `-J` document.
    pub fn extra(&mut self, key: &str, data: Value) {
        match self.format {
            Format::JsonStream => self.event(key, data),
            Format::Json => {
                let list = self
                    .extras
                    .entry(key.to_string())
                    .or_insert_with(|| Value::Array(vec![]));
                if let Value::Array(a) = list {
                    a.push(data);
                }
            }
            Format::Text => {}
        }
    }

    /// One TCP_INFO sample (`--tcp-info-interval`): a netrig event in JSON, a line in text.
    pub fn tcp_info(&mut self, sample: Value) {
        if self.format == Format::Text {
            let line = crate::tcp_info::text_line(&sample, self.units);
            self.text(&line);
        } else {
            self.extra("tcp_info", sample);
        }
    }

    pub fn set_start_value(&mut self, key: &str, v: Value) {
        self.start.insert(key.into(), v);
    }

    pub fn connected(&mut self, socket: i32, local: &std::net::SocketAddr, remote: &std::net::SocketAddr) {
        self.text(&format!(
            "[{socket:3}] local {} port {} connected to {} port {}",
            local.ip(),
            local.port(),
            remote.ip(),
            remote.port()
        ));
        let entry = json!({
            "socket": socket, "local_host": local.ip().to_string(), "local_port": local.port(),
            "remote_host": remote.ip().to_string(), "remote_port": remote.port(),
        });
        if let Value::Array(a) = self
            .start
            .entry("connected")
            .or_insert_with(|| Value::Array(vec![]))
        {
            a.push(entry);
        }
    }

    pub fn start(&mut self, info: &StartInfo) {
        self.udp = info.udp;
        self.bidir = info.bidir;
        self.is_client = info.is_client;
        self.streams_n = info.num_streams as usize;
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default();
        self.start.insert(
            "version".into(),
            format!("netrig-perf {} (iperf 3.12 protocol)", env!("CARGO_PKG_VERSION")).into(),
        );
        self.start.insert("system_info".into(), system_info().into());
        self.start.insert(
            "timestamp".into(),
            json!({ "time": http_date(now.as_secs()), "timesecs": now.as_secs() }),
        );
        self.start.insert("cookie".into(), info.cookie.clone().into());
        if !info.udp {
            self.start
                .insert("tcp_mss_default".into(), info.tcp_mss_default.into());
        }
        self.start
            .insert("target_bitrate".into(), info.target_bitrate.into());
        self.start.insert("sock_bufsize".into(), info.sock_bufsize.into());
        self.start
            .insert("sndbuf_actual".into(), info.sndbuf_actual.into());
        self.start
            .insert("rcvbuf_actual".into(), info.rcvbuf_actual.into());
        self.start.insert(
            "test_start".into(),
            json!({
                "protocol": if info.udp { "UDP" } else { "TCP" },
                "num_streams": info.num_streams, "blksize": info.blksize, "omit": info.omit,
                "duration": info.duration, "bytes": info.bytes, "blocks": info.blocks,
                "reverse": info.reverse as i32, "tos": info.tos, "target_bitrate": info.target_bitrate,
                "bidir": info.bidir as i32,
            }),
        );
        if let Some(t) = &info.title {
            self.start.insert("title".into(), t.clone().into());
        }
        if let Some(t) = &info.extra_data {
            self.start.insert("extra_data".into(), t.clone().into());
        }
        self.event("start", Value::Object(self.start.clone()));
    }

    fn role(&self, sender: bool) -> &'static str {
        if !self.bidir {
            return "";
        }
        match (self.is_client, sender) {
            (true, true) => "[TX-C]",
            (true, false) => "[RX-C]",
            (false, true) => "[TX-S]",
            (false, false) => "[RX-S]",
        }
    }

    fn id_header(&self) -> &'static str {
        if self.bidir {
            "[ ID][Role]"
        } else {
            "[ ID]"
        }
    }

    fn interval_line(&self, label: &str, s: &Sample, sum: bool) -> String {
        let role = self.role(s.stream.sender);
        let head = format!(
            "{label}{role} {:6.2}-{:<6.2} sec  {}  {}",
            s.start,
            s.end,
            format_bytes(s.bytes as f64),
            self.rate_text(s.bits_per_second())
        );
        let omitted = if s.omitted { "(omitted)" } else { "" };
        if let Some(u) = &s.udp_rx {
            format!(
                "{head}  {:5.3} ms  {}/{} ({}%)  {omitted}",
                u.jitter_ms,
                u.lost,
                u.packets,
                fmt_g2(u.lost_percent())
            )
        } else if self.udp {
            let pad = if self.bidir { "          " } else { "" };
            format!("{head} {pad} {}  {omitted}", s.packets)
        } else if let Some(t) = &s.tcp {
            if sum {
                format!("{head}  {:3}             {omitted}", t.retransmits)
            } else {
                format!(
                    "{head}  {:3}   {}       {omitted}",
                    t.retransmits,
                    format_bytes(t.snd_cwnd as f64)
                )
            }
        } else {
            format!("{head}                  {omitted}")
        }
    }

    pub fn interval(&mut self, samples: &[Sample]) {
        if samples.is_empty() {
            return;
        }
        if !self.header_printed {
            self.header_printed = true;
            let any_tx_tcp = samples.iter().any(|s| s.tcp.is_some());
            let any_rx_udp = samples.iter().any(|s| s.udp_rx.is_some());
            let cols = if any_rx_udp {
                "Jitter    Lost/Total Datagrams"
            } else if self.udp {
                "Total Datagrams"
            } else if any_tx_tcp {
                "Retr  Cwnd"
            } else {
                ""
            };
            let line = format!(
                "{} Interval           Transfer     Bitrate         {cols}",
                self.id_header()
            );
            self.text(line.trim_end());
        }
        for s in samples {
            let l = self.interval_line(&format!("[{:3}]", s.stream.socket), s, false);
            self.text(&l);
        }
        let mut doc = Map::new();
        doc.insert(
            "streams".into(),
            Value::Array(
                samples
                    .iter()
                    .map(|s| Value::Object(sample_json(s, self.udp)))
                    .collect(),
            ),
        );
        let multi = samples.len() > 1;
        for (key, sender) in self.directions(samples) {
            let group: Vec<&Sample> = samples.iter().filter(|s| s.stream.sender == sender).collect();
            if group.is_empty() {
                continue;
            }
            let (m, total) = sum_samples(&group, self.udp);
            if multi && !self.bidir || (self.bidir && group.len() > 1) {
                let l = self.interval_line("[SUM]", &total, true);
                self.text(&l);
            }
            doc.insert(key.into(), Value::Object(m));
        }
        if multi && !self.bidir {
            self.text(SEPARATOR);
        }
        let v = Value::Object(doc);
        self.event("interval", v.clone());
        self.intervals.push(v);
    }

    /// An interval of a netrig mode (probe, rr): recorded and streamed as is.
    pub fn push_interval(&mut self, v: Value) {
        self.event("interval", v.clone());
        self.intervals.push(v);
    }

    /// ("sum", direction) pairs: the test's main direction first, then the reverse one.
    fn directions(&self, samples: &[Sample]) -> Vec<(&'static str, bool)> {
        let main = if self.bidir {
            self.is_client
        } else {
            samples[0].stream.sender
        };
        if self.bidir {
            vec![("sum", main), ("sum_bidir_reverse", !main)]
        } else {
            vec![("sum", main)]
        }
    }

    fn side_line(
        &self,
        socket_label: &str,
        sender_flag: bool,
        side: &Side,
        which: &str,
        show_retr: bool,
    ) -> String {
        let role = self.role(sender_flag);
        let head = format!(
            "{socket_label}{role} {:6.2}-{:<6.2} sec  {}  {}",
            0.0,
            side.end,
            format_bytes(side.bytes as f64),
            self.rate_text(rate(side.bytes, side.end))
        );
        match (show_retr, side.retransmits) {
            (true, Some(r)) => format!("{head}  {r:3}             {which}"),
            _ => format!("{head}                  {which}"),
        }
    }

    fn udp_line(
        &self,
        socket_label: &str,
        sender_flag: bool,
        side: &Side,
        (jitter, lost, total): (f64, i64, i64),
        which: &str,
    ) -> String {
        let pct = if total > 0 {
            100.0 * lost as f64 / total as f64
        } else {
            0.0
        };
        format!(
            "{socket_label}{} {:6.2}-{:<6.2} sec  {}  {}  {:5.3} ms  {}/{} ({}%)  {which}",
            self.role(sender_flag),
            0.0,
            side.end,
            format_bytes(side.bytes as f64),
            self.rate_text(rate(side.bytes, side.end)),
            jitter,
            lost,
            total,
            fmt_g2(pct)
        )
    }

    fn side_json(
        &self,
        sender_flag: bool,
        side: &Side,
        socket: Option<i32>,
        udp: Option<&UdpEnd>,
        is_sender_side: bool,
    ) -> Value {
        let mut m = Map::new();
        if let Some(s) = socket {
            m.insert("socket".into(), s.into());
        }
        m.insert("start".into(), 0.into());
        m.insert("end".into(), round6(side.end).into());
        m.insert("seconds".into(), round6(side.seconds).into());
        m.insert("bytes".into(), side.bytes.into());
        m.insert("bits_per_second".into(), rate(side.bytes, side.end).into());
        if let Some(u) = udp {
            m.insert("jitter_ms".into(), u.jitter_ms.into());
            m.insert("lost_packets".into(), u.lost.into());
            m.insert("packets".into(), u.packets.into());
            m.insert("lost_percent".into(), u.lost_percent().into());
            if socket.is_some() {
                m.insert("out_of_order".into(), u.out_of_order.into());
                if let Some(n) = u.suspicious {
                    m.insert("suspicious".into(), n.into());
                }
            }
        } else if is_sender_side {
            if let Some(r) = side.retransmits {
                m.insert("retransmits".into(), r.into());
            }
            if let Some(x) = &side.extremes {
                m.insert("max_snd_cwnd".into(), x.max_snd_cwnd.into());
                m.insert("max_snd_wnd".into(), x.max_snd_wnd.into());
                m.insert("max_rtt".into(), x.max_rtt.into());
                m.insert("min_rtt".into(), x.min_rtt.into());
                m.insert("mean_rtt".into(), x.mean_rtt().into());
            }
        }
        if is_sender_side {
            if let Some(p) = &side.pacing {
                m.insert("pacing".into(), p.clone());
            }
        }
        m.insert("sender".into(), sender_flag.into());
        Value::Object(m)
    }

    /// The end of a test: summary lines and the `end` object.
    pub fn end(
        &mut self,
        streams: &[EndStream],
        cpu: CpuUsage,
        remote_cpu: Option<CpuUsage>,
        congestion: (Option<String>, Option<String>),
    ) -> Value {
        let mut end = Map::new();
        if !self.last_was_separator {
            self.text(SEPARATOR);
        }
        let show_retr = streams
            .iter()
            .any(|s| s.sender.as_ref().and_then(|x| x.retransmits).is_some())
            && !self.udp;
        let cols = if self.udp {
            "Jitter    Lost/Total Datagrams"
        } else if show_retr {
            "Retr"
        } else {
            ""
        };
        let header = format!(
            "{} Interval           Transfer     Bitrate         {cols}",
            self.id_header()
        );
        self.text(header.trim_end());
        let mut json_streams = vec![];
        for s in streams {
            let label = format!("[{:3}]", s.socket);
            let mut obj = Map::new();
            if let Some(u) = &s.udp {
                if let Some(snd) = &s.sender {
                    let l = self.udp_line(&label, s.local_sender, snd, (0.0, 0, u.sent_packets), "sender");
                    self.text(&l);
                }
                if let Some(rcv) = &s.receiver {
                    let l = self.udp_line(
                        &label,
                        s.local_sender,
                        rcv,
                        (u.jitter_ms, u.lost, u.packets),
                        "receiver",
                    );
                    self.text(&l);
                }
                if u.out_of_order > 0 {
                    let l = format!(
                        "{label}{} {:4.1}-{:4.1} sec  {} datagrams received out-of-order",
                        self.role(s.local_sender),
                        0.0,
                        s.receiver.as_ref().map(|r| r.end).unwrap_or(0.0),
                        u.out_of_order
                    );
                    self.text(&l);
                }
                if let Some(n) = u.suspicious.filter(|&n| n > 0) {
                    let l = format!(
                        "{label}{} {:4.1}-{:4.1} sec  {n} suspicious datagrams, left out of loss and jitter",
                        self.role(s.local_sender),
                        0.0,
                        s.receiver.as_ref().map(|r| r.end).unwrap_or(0.0),
                    );
                    self.text(&l);
                }
                let main = if s.local_sender {
                    s.sender.as_ref()
                } else {
                    s.receiver.as_ref()
                };
                if let Some(side) = main {
                    let mut udp = self.side_json(s.local_sender, side, Some(s.socket), Some(u), false);
                    if let Some(p) = s.sender.as_ref().and_then(|x| x.pacing.clone()) {
                        udp["pacing"] = p;
                    }
                    obj.insert("udp".into(), udp);
                }
            } else {
                if let Some(snd) = &s.sender {
                    let l = self.side_line(&label, s.local_sender, snd, "sender", show_retr);
                    self.text(&l);
                    obj.insert(
                        "sender".into(),
                        self.side_json(s.local_sender, snd, Some(s.socket), None, true),
                    );
                }
                if let Some(rcv) = &s.receiver {
                    let l = self.side_line(&label, s.local_sender, rcv, "receiver", false);
                    self.text(&l);
                    obj.insert(
                        "receiver".into(),
                        self.side_json(s.local_sender, rcv, Some(s.socket), None, false),
                    );
                }
            }
            if let Some(pacing) = s.sender.as_ref().and_then(|x| x.pacing.as_ref()) {
                for line in crate::report::pacing_lines(pacing) {
                    self.text(&format!("{label} {line}"));
                }
            }
            json_streams.push(Value::Object(obj));
        }
        end.insert("streams".into(), Value::Array(json_streams));
        // Sums per direction.
        let main_dir = if self.bidir {
            self.is_client
        } else {
            streams.first().map(|s| s.local_sender).unwrap_or(true)
        };
        let dirs: Vec<(bool, &str)> = if self.bidir {
            vec![(main_dir, ""), (!main_dir, "_bidir_reverse")]
        } else {
            vec![(main_dir, "")]
        };
        for (dir, suffix) in dirs {
            let group: Vec<&EndStream> = streams.iter().filter(|s| s.local_sender == dir).collect();
            if group.is_empty() {
                continue;
            }
            let sum_side = |pick: fn(&EndStream) -> Option<&Side>| -> Option<Side> {
                let sides: Vec<&Side> = group.iter().filter_map(|s| pick(s)).collect();
                if sides.is_empty() {
                    return None;
                }
                Some(Side {
                    end: sides.iter().map(|s| s.end).fold(0.0, f64::max),
                    seconds: sides.iter().map(|s| s.end).fold(0.0, f64::max),
                    bytes: sides.iter().map(|s| s.bytes).sum(),
                    retransmits: if sides.iter().all(|s| s.retransmits.is_some()) {
                        Some(sides.iter().filter_map(|s| s.retransmits).sum())
                    } else {
                        None
                    },
                    extremes: None,
                    pacing: None,
                })
            };
            let snd = sum_side(|s| s.sender.as_ref());
            let rcv = sum_side(|s| s.receiver.as_ref());
            let udp_sum = self.udp.then(|| {
                let us: Vec<&UdpEnd> = group.iter().filter_map(|s| s.udp.as_ref()).collect();
                UdpEnd {
                    jitter_ms: us.iter().map(|u| u.jitter_ms).sum::<f64>() / us.len().max(1) as f64,
                    lost: us.iter().map(|u| u.lost).sum(),
                    packets: us.iter().map(|u| u.packets).sum(),
                    out_of_order: us.iter().map(|u| u.out_of_order).sum(),
                    duplicates: us.iter().map(|u| u.duplicates).sum(),
                    suspicious: us.iter().filter_map(|u| u.suspicious).reduce(|a, b| a + b),
                    sent_packets: us.iter().map(|u| u.sent_packets).sum(),
                }
            });
            let print_sum = group.len() > 1;
            let label = "[SUM]";
            if let Some(u) = &udp_sum {
                if let Some(s) = &snd {
                    if print_sum {
                        let l = self.udp_line(label, dir, s, (0.0, 0, u.sent_packets), "sender");
                        self.text(&l);
                    }
                    let sent = UdpEnd {
                        jitter_ms: 0.0,
                        lost: 0,
                        packets: u.sent_packets,
                        ..u.clone()
                    };
                    end.insert(
                        format!("sum_sent{suffix}"),
                        self.side_json(dir, s, None, Some(&sent), true),
                    );
                }
                if let Some(r) = &rcv {
                    if print_sum {
                        let l = self.udp_line(label, dir, r, (u.jitter_ms, u.lost, u.packets), "receiver");
                        self.text(&l);
                    }
                    end.insert(
                        format!("sum_received{suffix}"),
                        self.side_json(false, r, None, Some(u), false),
                    );
                }
                // iperf3's "sum": what was sent, with the receiver's loss and jitter.
                if suffix.is_empty() {
                    if let Some(side) = snd.as_ref().or(rcv.as_ref()) {
                        end.insert("sum".into(), self.side_json(dir, side, None, Some(u), false));
                    }
                }
            } else {
                if let Some(s) = &snd {
                    if print_sum {
                        let l = self.side_line(label, dir, s, "sender", show_retr);
                        self.text(&l);
                    }
                    end.insert(
                        format!("sum_sent{suffix}"),
                        self.side_json(dir, s, None, None, true),
                    );
                }
                if let Some(r) = &rcv {
                    if print_sum {
                        let l = self.side_line(label, dir, r, "receiver", false);
                        self.text(&l);
                    }
                    end.insert(
                        format!("sum_received{suffix}"),
                        self.side_json(dir, r, None, None, false),
                    );
                }
            }
        }
        let mut cpu_obj =
            json!({ "host_total": cpu.total, "host_user": cpu.user, "host_system": cpu.system });
        if let Some(r) = remote_cpu {
            cpu_obj["remote_total"] = r.total.into();
            cpu_obj["remote_user"] = r.user.into();
            cpu_obj["remote_system"] = r.system.into();
        }
        end.insert("cpu_utilization_percent".into(), cpu_obj);
        if !self.udp {
            if let Some(c) = congestion.0 {
                end.insert("sender_tcp_congestion".into(), c.into());
            }
            if let Some(c) = congestion.1 {
                end.insert("receiver_tcp_congestion".into(), c.into());
            }
        }
        let v = Value::Object(end);
        self.event("end", v.clone());
        v
    }

    /// The whole `-J` document (printed by `finish`).
    pub fn document(&self, end: Option<Value>, error: Option<&str>, top: Map<String, Value>) -> Value {
        let mut doc = Map::new();
        doc.insert("start".into(), Value::Object(self.start.clone()));
        doc.insert("intervals".into(), Value::Array(self.intervals.clone()));
        doc.insert("end".into(), end.unwrap_or_else(|| json!({})));
        if let Some(e) = error {
            doc.insert("error".into(), e.into());
        }
        for (k, v) in top {
            doc.insert(k, v);
        }
        if !self.extras.is_empty() {
            doc.insert("netrig".into(), Value::Object(self.extras.clone()));
        }
        Value::Object(doc)
    }

    pub fn finish_json(&mut self, doc: &Value) {
        if self.format == Format::Json {
            let text = serde_json::to_string_pretty(doc).unwrap_or_default();
            self.sink.write(&format!("{text}\n"));
        }
    }

    pub fn error(&mut self, message: &str) {
        match self.format {
            // Text errors go to stderr from main, as iperf3's do.
            Format::Text => {}
            Format::JsonStream => self.event("error", Value::String(message.into())),
            Format::Json => {}
        }
    }

    pub fn set_title(&mut self, title: Option<String>) {
        self.title = title;
    }
}

pub fn system_info() -> String {
    // SAFETY: a zeroed utsname is valid; uname fills it.
    let mut u: libc::utsname = unsafe { std::mem::zeroed() };
    if unsafe { libc::uname(&mut u) } != 0 {
        return String::new();
    }
    let f = |a: &[libc::c_char]| {
        let bytes: Vec<u8> = a.iter().take_while(|&&c| c != 0).map(|&c| c as u8).collect();
        String::from_utf8_lossy(&bytes).into_owned()
    };
    format!(
        "{} {} {} {} {}",
        f(&u.sysname),
        f(&u.nodename),
        f(&u.release),
        f(&u.version),
        f(&u.machine)
    )
}

/// RFC 1123 date, as iperf3's `start.timestamp.time`.
fn http_date(secs: u64) -> String {
    const DAYS: [&str; 7] = ["Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed"];
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    let days = secs / 86_400;
    let rem = secs % 86_400;
    // Civil from days (Howard Hinnant's algorithm).
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = if m <= 2 { y + 1 } else { y };
    format!(
        "{}, {:02} {} {} {:02}:{:02}:{:02} GMT",
        DAYS[(days % 7) as usize],
        d,
        MONTHS[(m - 1) as usize],
        y,
        rem / 3600,
        (rem % 3600) / 60,
        rem % 60
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_peers_loss_count_never_exceeds_what_was_sent() {
        // An iperf3 receiver that took a forged 2^32 - 1 for the sender's: 4 billion
        // "lost" of 2,600 sent. The report stays within 100 %; iperf3 counts no suspects.
        let stream = crate::engine::Stream::new(1, 4, true, "a".into(), "b".into());
        let local = Sample {
            stream,
            start: 0.0,
            end: 3.0,
            bytes: 2_600 * 1460,
            packets: 2_600,
            omitted: false,
            tcp: None,
            udp_rx: None,
        };
        let mut peer = StreamResult {
            id: 1,
            errors: 4_294_954_718,
            packets: 4_294_967_295,
            ..Default::default()
        };
        let u = EndStream::build(&local, None, Some(&peer), true, true)
            .udp
            .unwrap();
        assert_eq!((u.lost, u.packets, u.suspicious), (2_600, 2_600, None));
        assert_eq!(u.lost_percent(), 100.0);
        // A netrig receiver reports its suspects and an honest count.
        peer.errors = 3;
        peer.packets = 2_600;
        peer.netrig = Some(json!({"suspicious": 200}));
        let u = EndStream::build(&local, None, Some(&peer), true, true)
            .udp
            .unwrap();
        assert_eq!((u.lost, u.packets, u.suspicious), (3, 2_600, Some(200)));
        assert_eq!((within(-5, 10), within(12, 10), within(4, 0)), (0, 10, 0));
    }

    #[test]
    fn percent_like_c_g2() {
        assert_eq!(fmt_g2(0.0), "0");
        assert_eq!(fmt_g2(16.32), "16");
        assert_eq!(fmt_g2(0.5), "0.5");
        assert_eq!(fmt_g2(1.25), "1.2");
        assert_eq!(fmt_g2(100.0), "1e+02");
        assert_eq!(fmt_g2(0.012), "0.012");
    }

    #[test]
    fn dates_like_iperf3() {
        assert_eq!(http_date(1_795_251_224), "Sat, 21 Nov 2026 08:53:44 GMT");
        assert_eq!(http_date(0), "Thu, 01 Jan 1970 00:00:00 GMT");
    }
}
