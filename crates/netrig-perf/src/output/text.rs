//! iperf3 3.12's text layout: the lines for people. Pure functions of the typed
//! figures ([`super::result`]) and the `-f` unit; [`super::Output`] decides when to
//! print them and adds `--timestamps` and the title.

use netrig_core::units::{format_bytes, format_rate_as, UnitFormat};

use super::result::{interval_directions, interval_sum, percent, DirectionSum, EndResult, Layout, Side};
use crate::report::{rate, Sample};

pub const SEPARATOR: &str = "- - - - - - - - - - - - - - - - - - - - - - - - -";

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

/// `--bidir`'s role label of a stream: `[TX-C]`, `[RX-S]`...; empty otherwise.
fn role(layout: Layout, sender: bool) -> &'static str {
    if !layout.bidir {
        return "";
    }
    match (layout.is_client, sender) {
        (true, true) => "[TX-C]",
        (true, false) => "[RX-C]",
        (false, true) => "[TX-S]",
        (false, false) => "[RX-S]",
    }
}

fn header(layout: Layout, cols: &str) -> String {
    let id = if layout.bidir { "[ ID][Role]" } else { "[ ID]" };
    format!("{id} Interval           Transfer     Bitrate         {cols}")
        .trim_end()
        .to_string()
}

/// `[  5] local 127.0.0.1 port 4711 connected to 127.0.0.1 port 5201`.
pub fn connected_line(socket: i32, local: &std::net::SocketAddr, remote: &std::net::SocketAddr) -> String {
    format!(
        "[{socket:3}] local {} port {} connected to {} port {}",
        local.ip(),
        local.port(),
        remote.ip(),
        remote.port()
    )
}

/// The column header printed before the first interval.
pub fn interval_header(layout: Layout, samples: &[Sample]) -> String {
    let cols = if samples.iter().any(|s| s.udp_rx.is_some()) {
        "Jitter    Lost/Total Datagrams"
    } else if layout.udp {
        "Total Datagrams"
    } else if layout.is_client || samples.iter().any(|s| s.tcp.is_some()) {
        // iperf3's client has the columns for TCP even when it only receives (-R).
        "Retr  Cwnd"
    } else {
        ""
    };
    header(layout, cols)
}

fn interval_line(layout: Layout, units: UnitFormat, label: &str, s: &Sample, sum: bool) -> String {
    let role = role(layout, s.stream.sender);
    let head = format!(
        "{label}{role} {:6.2}-{:<6.2} sec  {}  {}",
        s.start,
        s.end,
        format_bytes(s.bytes as f64),
        format_rate_as(s.bits_per_second(), units)
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
    } else if layout.udp {
        let pad = if layout.bidir { "          " } else { "" };
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

/// One interval's lines: a line per stream, then `[SUM]` lines where iperf3 prints
/// them (more than one stream in a direction), then a separator between intervals of
/// several streams (not for `--bidir`, as iperf3).
pub fn interval_lines(layout: Layout, units: UnitFormat, samples: &[Sample]) -> Vec<String> {
    let mut lines: Vec<String> = samples
        .iter()
        .map(|s| interval_line(layout, units, &format!("[{:3}]", s.stream.socket), s, false))
        .collect();
    let multi = samples.len() > 1;
    for (_, sender) in interval_directions(layout, samples) {
        let group: Vec<&Sample> = samples.iter().filter(|s| s.stream.sender == sender).collect();
        if group.is_empty() {
            continue;
        }
        if multi && !layout.bidir || (layout.bidir && group.len() > 1) {
            lines.push(interval_line(layout, units, "[SUM]", &interval_sum(&group), true));
        }
    }
    if multi && !layout.bidir {
        lines.push(SEPARATOR.into());
    }
    lines
}

fn side_line(
    layout: Layout,
    units: UnitFormat,
    label: &str,
    sender: bool,
    side: &Side,
    which: &str,
    retr: bool,
) -> String {
    let head = format!(
        "{label}{} {:6.2}-{:<6.2} sec  {}  {}",
        role(layout, sender),
        0.0,
        side.end,
        format_bytes(side.bytes as f64),
        format_rate_as(rate(side.bytes, side.end), units)
    );
    match (retr, side.retransmits) {
        (true, Some(r)) => format!("{head}  {r:3}             {which}"),
        _ => format!("{head}                  {which}"),
    }
}

#[allow(clippy::too_many_arguments)]
fn udp_line(
    layout: Layout,
    units: UnitFormat,
    label: &str,
    sender: bool,
    side: &Side,
    (jitter, lost, total): (f64, i64, i64),
    which: &str,
) -> String {
    format!(
        "{label}{} {:6.2}-{:<6.2} sec  {}  {}  {:5.3} ms  {}/{} ({}%)  {which}",
        role(layout, sender),
        0.0,
        side.end,
        format_bytes(side.bytes as f64),
        format_rate_as(rate(side.bytes, side.end), units),
        jitter,
        lost,
        total,
        fmt_g2(percent(lost, total))
    )
}

/// A direction's `[SUM]` lines (only for more than one stream).
fn sum_lines(r: &EndResult, units: UnitFormat, d: &DirectionSum, lines: &mut Vec<String>) {
    if d.streams < 2 {
        return;
    }
    let (l, dir) = (r.layout, d.local_sender);
    if let Some(u) = &d.udp {
        if let Some(s) = &d.sent {
            lines.push(udp_line(
                l,
                units,
                "[SUM]",
                dir,
                s,
                (0.0, 0, u.sent_packets),
                "sender",
            ));
        }
        if let Some(s) = &d.received {
            lines.push(udp_line(
                l,
                units,
                "[SUM]",
                dir,
                s,
                (u.jitter_ms, u.lost, u.packets),
                "receiver",
            ));
        }
    } else {
        if let Some(s) = &d.sent {
            lines.push(side_line(
                l,
                units,
                "[SUM]",
                dir,
                s,
                "sender",
                r.shows_retransmits(),
            ));
        }
        if let Some(s) = &d.received {
            lines.push(side_line(l, units, "[SUM]", dir, s, "receiver", false));
        }
    }
}

/// The end-of-test summary in iperf3 3.12's text layout: the column header, each
/// stream's sender and receiver lines, the `[SUM]` lines, and `-F`'s file line. The
/// separator before it is the caller's (it follows what was printed last).
pub fn render_text(r: &EndResult, units: UnitFormat) -> String {
    let l = r.layout;
    let retr = r.shows_retransmits();
    let cols = if l.udp {
        "Jitter    Lost/Total Datagrams"
    } else if retr {
        "Retr"
    } else {
        ""
    };
    let mut lines = vec![header(l, cols)];
    for s in &r.streams {
        let label = format!("[{:3}]", s.socket);
        let end = s.receiver.as_ref().map(|r| r.end).unwrap_or(0.0);
        if let Some(u) = &s.udp {
            if let Some(snd) = &s.sender {
                lines.push(udp_line(
                    l,
                    units,
                    &label,
                    s.local_sender,
                    snd,
                    (0.0, 0, u.sent_packets),
                    "sender",
                ));
            }
            if let Some(rcv) = &s.receiver {
                let figures = (u.jitter_ms, u.lost, u.packets);
                lines.push(udp_line(
                    l,
                    units,
                    &label,
                    s.local_sender,
                    rcv,
                    figures,
                    "receiver",
                ));
            }
            let role = role(l, s.local_sender);
            if u.out_of_order > 0 {
                lines.push(format!(
                    "{label}{role} {:4.1}-{end:4.1} sec  {} datagrams received out-of-order",
                    0.0, u.out_of_order
                ));
            }
            if let Some(n) = u.suspicious.filter(|&n| n > 0) {
                lines.push(format!(
                    "{label}{role} {:4.1}-{end:4.1} sec  {n} suspicious datagrams, left out of loss and jitter",
                    0.0
                ));
            }
        } else {
            if let Some(snd) = &s.sender {
                lines.push(side_line(l, units, &label, s.local_sender, snd, "sender", retr));
            }
            if let Some(rcv) = &s.receiver {
                lines.push(side_line(
                    l,
                    units,
                    &label,
                    s.local_sender,
                    rcv,
                    "receiver",
                    false,
                ));
            }
        }
        if let Some(pacing) = s.sender.as_ref().and_then(|x| x.pacing.as_ref()) {
            lines.extend(
                crate::report::pacing_lines(pacing)
                    .iter()
                    .map(|p| format!("{label} {p}")),
            );
        }
    }
    for d in &r.sums {
        sum_lines(r, units, d, &mut lines);
    }
    if let Some(f) = &r.diskfile {
        lines.push(format!(
            "        Sent {} / {} ({}%) of {}",
            format_bytes(f.ours() as f64),
            format_bytes(f.size as f64),
            f.percent(f.ours()),
            f.filename
        ));
    }
    lines.join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

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
    fn a_file_line_reads_like_iperf3() {
        let mut end = EndResult::build(Layout::default(), vec![], Default::default(), None, (None, None));
        end.diskfile = Some(crate::diskfile::DiskfileReport {
            filename: "/tmp/f".into(),
            size: 2048,
            sent: 1024,
            received: 1000,
            local_sender: true,
        });
        assert_eq!(
            render_text(&end, UnitFormat::default()).lines().last().unwrap(),
            "        Sent 1.00 KBytes / 2.00 KBytes (50%) of /tmp/f"
        );
    }
}
