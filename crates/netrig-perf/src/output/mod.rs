//! What a test prints: iperf3's text lines for people, iperf3's `-J` document and
//! `--json-stream` events for programs. One [`Output`] per test, on either side.
//!
//! The figures are typed once ([`result`]: the test's [`Layout`], [`StartInfo`], and at
//! the end an [`EndResult`]) and rendered twice: [`text`] in iperf3 3.12's text layout,
//! [`json`] in its JSON layout. `Output` decides when: interval lines and events as the
//! test runs, the summary at its end, the `-J` document last. netrig's additions to
//! iperf3's layout are typed in [`crate::extras`], with the schema version every `-J`
//! document carries (`netrig.schema`).

pub mod json;
pub mod result;
pub mod text;

#[cfg(test)]
mod extras_snapshots;
#[cfg(test)]
mod snapshots;

use std::fs::File;
use std::io::Write;
use std::sync::{Arc, Mutex};

use netrig_core::units::UnitFormat;
use serde_json::{json, Map, Value};

use crate::config::{Common, Format};
use crate::extras;
use crate::report::Sample;

pub use result::{DirectionSum, EndResult, EndStream, Layout, Side, StartInfo, UdpEnd};
pub use text::{fmt_g2, SEPARATOR};

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

pub struct Output {
    pub format: Format,
    sink: Sink,
    /// Everything written as text, for `--get-server-output`.
    pub captured: Option<String>,
    layout: Layout,
    header_printed: bool,
    start: Map<String, Value>,
    intervals: Vec<Value>,
    /// The `-J` document's `netrig` object: the schema, the TCP_INFO samples kept.
    netrig: extras::NetrigDoc,
    title: Option<String>,
    last_was_separator: bool,
    /// `-f`: the bitrate column's unit.
    units: UnitFormat,
    /// `--timestamps`: strftime format prefixed to every text line.
    timestamps: Option<String>,
}

impl Output {
    pub fn new(format: Format, sink: Sink, capture: bool) -> Output {
        Output {
            format,
            sink,
            captured: capture.then(String::new),
            layout: Layout::default(),
            header_printed: false,
            start: Map::new(),
            intervals: vec![],
            netrig: extras::NetrigDoc::default(),
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

    /// The test's layout, as [`Output::start`] set it.
    pub fn layout(&self) -> Layout {
        self.layout
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

    /// One TCP_INFO sample (`--tcp-info-interval`): a line in text, a `tcp_info` event
    /// in a stream, kept for the `-J` document's `netrig.tcp_info`.
    pub fn tcp_info(&mut self, sample: extras::TcpInfoSample) {
        match self.format {
            Format::Text => {
                let line = crate::tcp_info::text_line(&sample, self.units);
                self.text(&line);
            }
            Format::JsonStream => self.event("tcp_info", extras::to_value(&sample)),
            Format::Json => self.netrig.tcp_info.push(sample),
        }
    }

    pub fn set_start_value(&mut self, key: &str, v: Value) {
        self.start.insert(key.into(), v);
    }

    pub fn connected(&mut self, socket: i32, local: &std::net::SocketAddr, remote: &std::net::SocketAddr) {
        self.text(&text::connected_line(socket, local, remote));
        if let Value::Array(a) = self
            .start
            .entry("connected")
            .or_insert_with(|| Value::Array(vec![]))
        {
            a.push(json::connected_json(socket, local, remote));
        }
    }

    pub fn start(&mut self, info: &StartInfo) {
        self.layout = info.layout();
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default();
        self.start
            .extend(json::start_json(info, &system_info(), now.as_secs()));
        self.event("start", Value::Object(self.start.clone()));
    }

    /// One interval of a bulk test: its lines (after the column header, the first
    /// time), its `interval` event, and its entry in the `-J` document.
    pub fn interval(&mut self, samples: &[Sample]) {
        if samples.is_empty() {
            return;
        }
        if !self.header_printed {
            self.header_printed = true;
            self.text(&text::interval_header(self.layout, samples));
        }
        for line in text::interval_lines(self.layout, self.units, samples) {
            self.text(&line);
        }
        let v = json::interval_json(self.layout, samples);
        self.event("interval", v.clone());
        self.intervals.push(v);
    }

    /// An interval of a netrig mode (probe, rr): recorded and streamed as is.
    pub fn push_interval(&mut self, v: Value) {
        self.event("interval", v.clone());
        self.intervals.push(v);
    }

    /// The end of a test: the summary lines, the `end` event, and the `end` object for
    /// the `-J` document.
    pub fn end(&mut self, result: &EndResult) -> Value {
        if !self.last_was_separator {
            self.text(SEPARATOR);
        }
        for line in text::render_text(result, self.units).split('\n') {
            self.text(line);
        }
        let v = json::render_json(result);
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
        doc.insert("netrig".into(), extras::to_value(&self.netrig));
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
pub(crate) fn http_date(secs: u64) -> String {
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
    fn dates_like_iperf3() {
        assert_eq!(http_date(1_795_251_224), "Sat, 21 Nov 2026 08:53:44 GMT");
        assert_eq!(http_date(0), "Thu, 01 Jan 1970 00:00:00 GMT");
    }
}
