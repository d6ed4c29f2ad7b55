//! Classic BPF: a program as tcpdump compiles it (`tcpdump -ddd`: code, jt, jf, k per
//! instruction), checked once, then run on frames.
//!
//! The instruction set is the one libpcap's `bpf_filter.c` and Linux's `sk_run_filter`
//! interpret: loads (`ld`/`ldh`/`ldb` absolute, indirect, immediate, scratch memory,
//! length; `ldx` immediate, memory, length, `4*([k]&0xf)`), stores to 16 scratch
//! words, ALU (add sub mul div mod and or xor lsh rsh neg, with K or X), jumps (ja jeq
//! jgt jge jset), `ret` K or A, `tax`, `txa`. Where it follows the kernel:
//!
//! - a load outside the frame ends the program with 0: the frame is rejected;
//! - division or modulo by a zero X does the same (by a zero K is refused when the
//!   program is checked);
//! - shifts by 32 or more give 0 (C leaves them undefined).
//!
//! Departures: Linux's ancillary loads (offsets from `SKF_AD_OFF`, 0xfffff000: VLAN tag,
//! protocol, ...) read metadata a capture file does not have; here they are loads
//! outside the frame, so they reject, as libpcap does when it filters a saved file.
//!
//! [`Program::new`] checks what libpcap's `bpf_validate` checks: a known opcode, jumps
//! inside the program (forward only), scratch indices below 16, no division by a
//! constant 0, a `ret` as the last instruction, at most 4096 instructions. After that,
//! [`Program::run`] cannot fail and runs in at most as many steps as the program is long.

use thiserror::Error;

/// The longest program the kernel accepts (`BPF_MAXINSNS`).
pub const MAX_INSNS: usize = 4096;
/// Scratch memory words (`BPF_MEMWORDS`).
pub const MEM_WORDS: usize = 16;

/// One instruction, as tcpdump prints it: (code, jt, jf, k).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Insn {
    pub code: u16,
    pub jt: u8,
    pub jf: u8,
    pub k: u32,
}

impl Insn {
    pub const fn new(code: u16, jt: u8, jf: u8, k: u32) -> Insn {
        Insn { code, jt, jf, k }
    }
}

#[derive(Debug, Error, PartialEq, Eq)]
pub enum BpfError {
    #[error("a BPF program needs at least one instruction")]
    Empty,
    #[error("a BPF program has at most {MAX_INSNS} instructions, this one {0}")]
    TooLong(usize),
    #[error("instruction {pc}: {problem}")]
    Bad { pc: usize, problem: String },
}

/// Opcode fields (`linux/bpf_common.h`, `pcap/bpf.h`).
mod op {
    pub const LD: u16 = 0x00;
    pub const LDX: u16 = 0x01;
    pub const ST: u16 = 0x02;
    pub const STX: u16 = 0x03;
    pub const ALU: u16 = 0x04;
    pub const JMP: u16 = 0x05;
    pub const RET: u16 = 0x06;
    pub const MISC: u16 = 0x07;

    pub const W: u16 = 0x00;
    pub const H: u16 = 0x08;
    pub const B: u16 = 0x10;

    pub const IMM: u16 = 0x00;
    pub const ABS: u16 = 0x20;
    pub const IND: u16 = 0x40;
    pub const MEM: u16 = 0x60;
    pub const LEN: u16 = 0x80;
    pub const MSH: u16 = 0xa0;

    pub const ADD: u16 = 0x00;
    pub const SUB: u16 = 0x10;
    pub const MUL: u16 = 0x20;
    pub const DIV: u16 = 0x30;
    pub const OR: u16 = 0x40;
    pub const AND: u16 = 0x50;
    pub const LSH: u16 = 0x60;
    pub const RSH: u16 = 0x70;
    pub const NEG: u16 = 0x80;
    pub const MOD: u16 = 0x90;
    pub const XOR: u16 = 0xa0;

    pub const JA: u16 = 0x00;
    pub const JEQ: u16 = 0x10;
    pub const JGT: u16 = 0x20;
    pub const JGE: u16 = 0x30;
    pub const JSET: u16 = 0x40;

    pub const K: u16 = 0x00;
    pub const X: u16 = 0x08;
    /// `ret` of A (`BPF_A`, in the size bits).
    pub const RET_A: u16 = 0x10;

    pub const TAX: u16 = 0x00;
    pub const TXA: u16 = 0x80;

    pub fn class(code: u16) -> u16 {
        code & 0x07
    }
    pub fn size(code: u16) -> u16 {
        code & 0x18
    }
    pub fn mode(code: u16) -> u16 {
        code & 0xe0
    }
    pub fn alu(code: u16) -> u16 {
        code & 0xf0
    }
    pub fn src(code: u16) -> u16 {
        code & 0x08
    }
}

/// A checked program.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Program {
    insns: Vec<Insn>,
}

fn check(pc: usize, insn: &Insn, len: usize) -> Result<(), String> {
    let code = insn.code;
    let bad_code = || format!("unknown opcode {code:#06x}");
    let mem = || {
        if (insn.k as usize) < MEM_WORDS {
            Ok(())
        } else {
            Err(format!(
                "scratch memory index {} is not below {MEM_WORDS}",
                insn.k
            ))
        }
    };
    match op::class(code) {
        op::LD => match (op::mode(code), op::size(code)) {
            (op::ABS | op::IND, op::W | op::H | op::B) => Ok(()),
            (op::IMM | op::LEN, op::W) => Ok(()),
            (op::MEM, op::W) => mem(),
            _ => Err(bad_code()),
        },
        op::LDX => match (op::mode(code), op::size(code)) {
            (op::IMM | op::LEN, op::W) => Ok(()),
            (op::MEM, op::W) => mem(),
            (op::MSH, op::B) => Ok(()),
            _ => Err(bad_code()),
        },
        op::ST | op::STX if code & !0x07 == 0 => mem(),
        op::ALU => match op::alu(code) {
            op::NEG if op::src(code) == op::K && code & 0x0f == op::ALU => Ok(()),
            op::DIV | op::MOD if code & 0x0f == op::ALU | op::K && insn.k == 0 => {
                Err("division by a constant 0".into())
            }
            op::ADD
            | op::SUB
            | op::MUL
            | op::DIV
            | op::OR
            | op::AND
            | op::LSH
            | op::RSH
            | op::MOD
            | op::XOR
                if code & 0x07 == op::ALU && code & !0xff == 0 =>
            {
                Ok(())
            }
            _ => Err(bad_code()),
        },
        op::JMP => {
            if code & !0xff != 0 || !matches!(op::alu(code), op::JA | op::JEQ | op::JGT | op::JGE | op::JSET)
            {
                return Err(bad_code());
            }
            let rest = len - pc - 1;
            if op::alu(code) == op::JA {
                if code != op::JMP {
                    return Err(bad_code());
                }
                if insn.k as usize >= rest {
                    return Err(format!("ja {} leaves the program", insn.k));
                }
            } else if insn.jt as usize >= rest || insn.jf as usize >= rest {
                return Err(format!("jump {}/{} leaves the program", insn.jt, insn.jf));
            }
            Ok(())
        }
        op::RET => match code & !0x07 {
            op::K | op::RET_A => Ok(()),
            _ => Err(bad_code()),
        },
        op::MISC => match code & !0x07 {
            op::TAX | op::TXA => Ok(()),
            _ => Err(bad_code()),
        },
        _ => Err(bad_code()),
    }
}

fn load(pkt: &[u8], at: u32, size: u16) -> Option<u32> {
    let at = at as usize;
    let n = match size {
        op::W => 4,
        op::H => 2,
        _ => 1,
    };
    let b = pkt.get(at..at.checked_add(n)?)?;
    Some(b.iter().fold(0u32, |v, &x| (v << 8) | x as u32))
}

impl Program {
    /// Checks a program; its errors name the instruction (counted from 0).
    pub fn new(insns: Vec<Insn>) -> Result<Program, BpfError> {
        let len = insns.len();
        if len == 0 {
            return Err(BpfError::Empty);
        }
        if len > MAX_INSNS {
            return Err(BpfError::TooLong(len));
        }
        for (pc, insn) in insns.iter().enumerate() {
            check(pc, insn, len).map_err(|problem| BpfError::Bad { pc, problem })?;
        }
        if op::class(insns[len - 1].code) != op::RET {
            return Err(BpfError::Bad {
                pc: len - 1,
                problem: "the last instruction is not a ret".into(),
            });
        }
        Ok(Program { insns })
    }

    /// A program that accepts every frame whole.
    pub fn accept_all() -> Program {
        Program {
            insns: vec![Insn::new(op::RET | op::K, 0, 0, u32::MAX)],
        }
    }

    pub fn insns(&self) -> &[Insn] {
        &self.insns
    }

    /// Runs the program on `pkt` (the captured bytes) of a frame `wire_len` bytes long
    /// on the wire; returns how many bytes to keep, 0 to reject.
    pub fn run(&self, pkt: &[u8], wire_len: u32) -> u32 {
        let (mut a, mut x) = (0u32, 0u32);
        let mut mem = [0u32; MEM_WORDS];
        let mut pc = 0usize;
        loop {
            // Program::new checked every jump and that the program ends in a ret.
            let i = self.insns[pc];
            pc += 1;
            let code = i.code;
            match op::class(code) {
                op::LD => {
                    a = match op::mode(code) {
                        op::ABS => match load(pkt, i.k, op::size(code)) {
                            Some(v) => v,
                            None => return 0,
                        },
                        op::IND => match x.checked_add(i.k).and_then(|at| load(pkt, at, op::size(code))) {
                            Some(v) => v,
                            None => return 0,
                        },
                        op::IMM => i.k,
                        op::MEM => mem[i.k as usize],
                        _ => wire_len, // LEN
                    }
                }
                op::LDX => {
                    x = match op::mode(code) {
                        op::IMM => i.k,
                        op::MEM => mem[i.k as usize],
                        op::LEN => wire_len,
                        _ => match load(pkt, i.k, op::B) {
                            Some(v) => 4 * (v & 0xf), // MSH
                            None => return 0,
                        },
                    }
                }
                op::ST => mem[i.k as usize] = a,
                op::STX => mem[i.k as usize] = x,
                op::ALU => {
                    let v = if op::src(code) == op::X { x } else { i.k };
                    a = match op::alu(code) {
                        op::ADD => a.wrapping_add(v),
                        op::SUB => a.wrapping_sub(v),
                        op::MUL => a.wrapping_mul(v),
                        op::DIV => match a.checked_div(v) {
                            Some(q) => q,
                            None => return 0,
                        },
                        op::MOD => match a.checked_rem(v) {
                            Some(r) => r,
                            None => return 0,
                        },
                        op::OR => a | v,
                        op::AND => a & v,
                        op::XOR => a ^ v,
                        op::LSH => a.checked_shl(v).unwrap_or(0),
                        op::RSH => a.checked_shr(v).unwrap_or(0),
                        _ => a.wrapping_neg(), // NEG
                    }
                }
                op::JMP => {
                    let v = if op::src(code) == op::X { x } else { i.k };
                    let taken = match op::alu(code) {
                        op::JA => {
                            pc += i.k as usize;
                            continue;
                        }
                        op::JEQ => a == v,
                        op::JGT => a > v,
                        op::JGE => a >= v,
                        _ => a & v != 0, // JSET
                    };
                    pc += if taken { i.jt } else { i.jf } as usize;
                }
                op::RET => return if code & op::RET_A != 0 { a } else { i.k },
                _ => {
                    if code & op::TXA != 0 {
                        a = x;
                    } else {
                        x = a;
                    }
                }
            }
        }
    }

    /// Whether the program keeps any of the frame.
    pub fn matches(&self, pkt: &[u8], wire_len: u32) -> bool {
        self.run(pkt, wire_len) != 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn prog(insns: &[(u16, u8, u8, u32)]) -> Program {
        Program::new(insns.iter().map(|&(c, t, f, k)| Insn::new(c, t, f, k)).collect()).unwrap()
    }

    fn bad(insns: &[(u16, u8, u8, u32)]) -> String {
        Program::new(insns.iter().map(|&(c, t, f, k)| Insn::new(c, t, f, k)).collect())
            .unwrap_err()
            .to_string()
    }

    /// Ethernet + IPv4 (20 bytes) + TCP (20 bytes) from 10.0.0.1:40000 to 10.0.0.2:5201
    /// with `flags`, and `payload` bytes.
    fn tcp_frame(flags: u8, payload: usize) -> Vec<u8> {
        let mut f = vec![2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1, 0x08, 0x00];
        let ip_len = (40 + payload) as u16;
        f.extend_from_slice(&[
            0x45,
            0,
            (ip_len >> 8) as u8,
            ip_len as u8,
            0,
            1,
            0x40,
            0,
            64,
            6,
            0,
            0,
        ]);
        f.extend_from_slice(&[10, 0, 0, 1, 10, 0, 0, 2]);
        f.extend_from_slice(&[
            0x9c, 0x40, 0x14, 0x51, 0, 0, 0, 1, 0, 0, 0, 0, 0x50, flags, 0xff, 0xff,
        ]);
        f.extend_from_slice(&[0, 0, 0, 0]);
        f.resize(f.len() + payload, 0xab);
        f
    }

    // tcpdump -ddd -y EN10MB 'tcp' (tcpdump 4.99.3, libpcap 1.10.3)
    const TCP: &[(u16, u8, u8, u32)] = &[
        (40, 0, 0, 12),
        (21, 0, 2, 34525),
        (48, 0, 0, 20),
        (21, 6, 7, 6),
        (21, 0, 6, 2048),
        (48, 0, 0, 23),
        (21, 3, 4, 6),
        (21, 0, 3, 44),
        (48, 0, 0, 54),
        (21, 0, 1, 6),
        (6, 0, 0, 262144),
        (6, 0, 0, 0),
    ];

    // tcpdump -ddd -y EN10MB 'tcp[tcpflags] & tcp-syn != 0'
    const SYN: &[(u16, u8, u8, u32)] = &[
        (40, 0, 0, 12),
        (21, 0, 8, 2048),
        (48, 0, 0, 23),
        (21, 0, 6, 6),
        (40, 0, 0, 20),
        (69, 4, 0, 8191),
        (177, 0, 0, 14),
        (80, 0, 0, 27),
        (69, 0, 1, 2),
        (6, 0, 0, 262144),
        (6, 0, 0, 0),
    ];

    #[test]
    fn tcpdumps_tcp_program_keeps_tcp_and_rejects_udp() {
        let p = prog(TCP);
        let f = tcp_frame(0x10, 10);
        assert_eq!(p.run(&f, f.len() as u32), 262144);
        let mut udp = f.clone();
        udp[23] = 17;
        assert_eq!(p.run(&udp, udp.len() as u32), 0);
        let mut arp = f.clone();
        arp[12..14].copy_from_slice(&[0x08, 0x06]);
        assert!(!p.matches(&arp, arp.len() as u32));
    }

    #[test]
    fn the_syn_program_reads_the_flags_past_the_ip_header_by_msh() {
        let p = prog(SYN);
        let syn = tcp_frame(0x02, 0);
        let ack = tcp_frame(0x10, 0);
        assert!(p.matches(&syn, syn.len() as u32));
        assert!(!p.matches(&ack, ack.len() as u32));
        // With IP options (IHL 6) the flags move 4 bytes on: ldxb 4*([14]&0xf) follows.
        let mut opt = syn.clone();
        opt[14] = 0x46;
        opt.splice(34..34, [1, 1, 1, 1]);
        assert!(p.matches(&opt, opt.len() as u32));
        opt[34 + 4 + 13] = 0x10;
        assert!(!p.matches(&opt, opt.len() as u32));
        // A later fragment (offset != 0) has no TCP header: jset 0x1fff rejects.
        let mut frag = syn.clone();
        frag[20..22].copy_from_slice(&[0x00, 0x10]);
        assert!(!p.matches(&frag, frag.len() as u32));
    }

    #[test]
    fn loads_outside_the_frame_reject_it() {
        let ldb_far = prog(&[(0x30, 0, 0, 100), (0x06, 0, 0, 1)]);
        assert_eq!(ldb_far.run(&[0; 100], 100), 0);
        assert_eq!(ldb_far.run(&[0; 101], 101), 1);
        // A word straddling the end is out too.
        let ld_w = prog(&[(0x20, 0, 0, 98), (0x06, 0, 0, 1)]);
        assert_eq!(ld_w.run(&[0; 101], 101), 0);
        assert_eq!(ld_w.run(&[0; 102], 102), 1);
        // Indirect loads add X, with no wrap-around.
        let ind = prog(&[(0x01, 0, 0, u32::MAX), (0x50, 0, 0, 2), (0x06, 0, 0, 1)]);
        assert_eq!(ind.run(&[0; 10], 10), 0);
        // An ancillary load (SKF_AD_OFF + VLAN_TAG_PRESENT) has no data to read here.
        let anc = prog(&[(0x20, 0, 0, 0xffff_f02c), (0x06, 0, 0, 1)]);
        assert_eq!(anc.run(&[0; 64], 64), 0);
    }

    #[test]
    fn alu_scratch_memory_and_registers() {
        // A = len; M[3] = A; A = 7; X = A; A = M[3]; A = A - X; A = A * 3; A = A / X
        // (X = 7); A = A % 5; A = A ^ 1; A = -A; A = A & 0xff; A = A << 1; A = A >> 2;
        // A = A | 0x100; ret A
        let p = prog(&[
            (0x80, 0, 0, 0),
            (0x02, 0, 0, 3),
            (0x00, 0, 0, 7),
            (0x07, 0, 0, 0),
            (0x60, 0, 0, 3),
            (0x1c, 0, 0, 0),
            (0x24, 0, 0, 3),
            (0x3c, 0, 0, 0),
            (0x94, 0, 0, 5),
            (0xa4, 0, 0, 1),
            (0x84, 0, 0, 0),
            (0x54, 0, 0, 0xff),
            (0x64, 0, 0, 1),
            (0x74, 0, 0, 2),
            (0x44, 0, 0, 0x100),
            (0x16, 0, 0, 0),
        ]);
        // len 100: 100-7 = 93; *3 = 279; /7 = 39; %5 = 4; ^1 = 5; -5 = 0xfffffffb;
        // &0xff = 0xfb; <<1 = 0x1f6; >>2 = 0x7d; |0x100 = 0x17d
        assert_eq!(p.run(&[], 100), 0x17d);
        // ldx len, stx, ld mem, txa, ret a
        let p = prog(&[
            (0x81, 0, 0, 0),
            (0x03, 0, 0, 15),
            (0x61, 0, 0, 15),
            (0x87, 0, 0, 0),
            (0x16, 0, 0, 0),
        ]);
        assert_eq!(p.run(&[], 42), 42);
        // Division by a zero X rejects; shifts by 32 or more give 0.
        let div_x = prog(&[(0x00, 0, 0, 9), (0x01, 0, 0, 0), (0x3c, 0, 0, 0), (0x06, 0, 0, 1)]);
        assert_eq!(div_x.run(&[], 1), 0);
        let mod_x = prog(&[(0x00, 0, 0, 9), (0x01, 0, 0, 0), (0x9c, 0, 0, 0), (0x06, 0, 0, 1)]);
        assert_eq!(mod_x.run(&[], 1), 0);
        let shl = prog(&[
            (0x00, 0, 0, 9),
            (0x01, 0, 0, 32),
            (0x6c, 0, 0, 0),
            (0x16, 0, 0, 0),
        ]);
        assert_eq!(shl.run(&[], 1), 0);
        let shr = prog(&[(0x00, 0, 0, 9), (0x74, 0, 0, 40), (0x16, 0, 0, 0)]);
        assert_eq!(shr.run(&[], 1), 0);
    }

    #[test]
    fn jumps_compare_with_k_or_x() {
        // ld [0]; jgt #5 → ret 1; jge x(=5) → ret 2; jset #1 → ret 3; ja → ret 4
        let p = prog(&[
            (0x01, 0, 0, 5),
            (0x30, 0, 0, 0),
            (0x25, 3, 0, 5),
            (0x3d, 3, 0, 0),
            (0x45, 3, 0, 1),
            (0x05, 0, 0, 4),
            (0x06, 0, 0, 1),
            (0x06, 0, 0, 2),
            (0x06, 0, 0, 3),
            (0x06, 0, 0, 9),
            (0x06, 0, 0, 4),
        ]);
        assert_eq!(p.run(&[6], 1), 1);
        assert_eq!(p.run(&[5], 1), 2);
        assert_eq!(p.run(&[3], 1), 3);
        assert_eq!(p.run(&[2], 1), 4);
        // jeq x
        let p = prog(&[
            (0x01, 0, 0, 7),
            (0x30, 0, 0, 0),
            (0x1d, 0, 1, 0),
            (0x06, 0, 0, 1),
            (0x06, 0, 0, 0),
        ]);
        assert!(p.matches(&[7], 1));
        assert!(!p.matches(&[8], 1));
    }

    #[test]
    fn bad_programs_are_refused_with_the_instruction_named() {
        assert_eq!(Program::new(vec![]).unwrap_err(), BpfError::Empty);
        assert!(bad(&[(0x06, 0, 0, 0); MAX_INSNS + 1]).contains("at most 4096"));
        assert_eq!(
            bad(&[(0x15, 1, 0, 0), (0x06, 0, 0, 0)]),
            "instruction 0: jump 1/0 leaves the program"
        );
        assert_eq!(
            bad(&[(0x05, 0, 0, 1), (0x06, 0, 0, 0)]),
            "instruction 0: ja 1 leaves the program"
        );
        assert_eq!(
            bad(&[(0x02, 0, 0, 16), (0x06, 0, 0, 0)]),
            "instruction 0: scratch memory index 16 is not below 16"
        );
        assert_eq!(
            bad(&[(0x34, 0, 0, 0), (0x06, 0, 0, 0)]),
            "instruction 0: division by a constant 0"
        );
        assert_eq!(
            bad(&[(0x94, 0, 0, 0), (0x06, 0, 0, 0)]),
            "instruction 0: division by a constant 0"
        );
        assert_eq!(
            bad(&[(0x00, 0, 0, 0)]),
            "instruction 0: the last instruction is not a ret"
        );
        assert_eq!(
            bad(&[(0xff, 0, 0, 0), (0x06, 0, 0, 0)]),
            "instruction 0: unknown opcode 0x00ff"
        );
        assert!(bad(&[(0x06, 0, 0, 0), (0x18, 0, 0, 0)]).starts_with("instruction 1: unknown opcode"));
        // ldb immediate and ldxh msh do not exist.
        assert!(bad(&[(0x10, 0, 0, 0), (0x06, 0, 0, 0)]).contains("unknown opcode"));
        assert!(bad(&[(0xa9, 0, 0, 0), (0x06, 0, 0, 0)]).contains("unknown opcode"));
        assert_eq!(Program::accept_all().run(&[], 0), u32::MAX);
    }
}
