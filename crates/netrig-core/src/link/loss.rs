//! Loss, duplication and corruption, with netem's semantics (tc-netem(8)).

use crate::link::packet::{BitFlip, Packet};
use crate::link::rng::{Correlated, Rng};

/// What drops packets on their way in.
#[derive(Debug, Clone)]
pub enum Loss {
    None,
    /// Each packet lost with probability `p` (correlated as netem's `loss p% corr%`).
    Random {
        p: f64,
        corr: Correlated,
    },
    /// Gilbert-Elliott (netem's `loss gemodel p r 1-h 1-k`): in the good state a packet
    /// is lost with `loss_good` (1-k), in the bad state with `loss_bad` (1-h); the
    /// state moves good→bad with `p`, bad→good with `r`, before each packet.
    GilbertElliott {
        p: f64,
        r: f64,
        loss_good: f64,
        loss_bad: f64,
        bad: bool,
    },
}

impl Loss {
    pub fn random(p: f64, correlation: f64) -> Loss {
        Loss::Random {
            p,
            corr: Correlated::new(correlation),
        }
    }

    pub fn gilbert_elliott(p: f64, r: f64, loss_good: f64, loss_bad: f64) -> Loss {
        Loss::GilbertElliott {
            p,
            r,
            loss_good,
            loss_bad,
            bad: false,
        }
    }

    /// Whether the next packet is lost.
    pub fn lose(&mut self, rng: &mut Rng) -> bool {
        match self {
            Loss::None => false,
            Loss::Random { p, corr } => *p > 0.0 && corr.next(rng) < *p,
            Loss::GilbertElliott {
                p,
                r,
                loss_good,
                loss_bad,
                bad,
            } => {
                // As netem: the loss chance is the state's at the packet's arrival.
                let was_bad = *bad;
                if was_bad {
                    if rng.chance(*r) {
                        *bad = false;
                    }
                    rng.chance(*loss_bad)
                } else {
                    if rng.chance(*p) {
                        *bad = true;
                    }
                    rng.chance(*loss_good)
                }
            }
        }
    }
}

/// A correlated probability, as netem's `duplicate` and `corrupt` take.
#[derive(Debug, Clone, Default)]
pub struct Chance {
    pub p: f64,
    corr: Correlated,
}

impl Chance {
    pub fn new(p: f64, correlation: f64) -> Chance {
        Chance {
            p,
            corr: Correlated::new(correlation),
        }
    }

    pub fn happens(&mut self, rng: &mut Rng) -> bool {
        self.p > 0.0 && self.corr.next(rng) < self.p
    }
}

/// Flips one random bit of the frame past its Ethernet header (which starts `head`
/// bytes into the packet's data), so that it still reaches its destination and fails
/// its checksum there (netem flips anywhere); records which in `flip`.
pub fn corrupt(pkt: &mut Packet, rng: &mut Rng) {
    const ETH_HEADER: usize = 14;
    let first = pkt.head as usize + ETH_HEADER;
    if pkt.data.len() > first {
        let span = (pkt.data.len() - first) as u64;
        let flip = BitFlip {
            byte: first + rng.below(span) as usize,
            mask: 1 << rng.below(8),
        };
        flip.apply(&mut pkt.data);
        pkt.flip = Some(flip);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_percent_over_a_million_falls_in_the_binomial_999_interval() {
        let mut rng = Rng::new(42);
        let mut l = Loss::random(0.01, 0.0);
        let n = 1_000_000u64;
        let lost = (0..n).filter(|_| l.lose(&mut rng)).count() as f64;
        // mean 10 000, sd sqrt(n p (1-p)) = 99.5; the 99.9 % interval is ±3.29 sd.
        let sd = (n as f64 * 0.01 * 0.99).sqrt();
        assert!((lost - 10_000.0).abs() < 3.29 * sd, "{lost}");
    }

    fn bursts(lost: &[bool]) -> Vec<usize> {
        let mut out = vec![];
        let mut run = 0;
        for &x in lost {
            if x {
                run += 1;
            } else if run > 0 {
                out.push(run);
                run = 0;
            }
        }
        out
    }

    #[test]
    fn gilbert_elliott_bursts_have_the_configured_mean_length() {
        // All lost in bad, none in good: bursts are the bad state's sojourns, mean 1/r.
        let mut rng = Rng::new(7);
        let mut l = Loss::gilbert_elliott(0.01, 0.25, 0.0, 1.0);
        let lost: Vec<bool> = (0..2_000_000).map(|_| l.lose(&mut rng)).collect();
        let b = bursts(&lost);
        let mean = b.iter().sum::<usize>() as f64 / b.len() as f64;
        assert!((mean - 4.0).abs() < 0.1, "{mean}");
        // Stationary loss: p / (p + r) = 0.01 / 0.26.
        let rate = lost.iter().filter(|&&x| x).count() as f64 / lost.len() as f64;
        assert!((rate - 0.01 / 0.26).abs() < 0.003, "{rate}");
    }

    #[test]
    fn correlation_makes_losses_burstier() {
        let mut rng = Rng::new(3);
        let mean_burst = |corr: f64, rng: &mut Rng| {
            let mut l = Loss::random(0.1, corr);
            let lost: Vec<bool> = (0..500_000).map(|_| l.lose(rng)).collect();
            let b = bursts(&lost);
            b.iter().sum::<usize>() as f64 / b.len() as f64
        };
        let plain = mean_burst(0.0, &mut rng);
        let corr = mean_burst(0.75, &mut rng);
        // ...and the loss rate is still 10 %.
        let mut l = Loss::random(0.1, 0.75);
        let rate = (0..500_000).filter(|_| l.lose(&mut rng)).count() as f64 / 500_000.0;
        assert!((rate - 0.1).abs() < 0.005, "{rate}");
        assert!((plain - 1.0 / 0.9).abs() < 0.02, "{plain}");
        assert!(corr > plain * 1.5, "{corr} vs {plain}");
    }

    #[test]
    fn duplicate_chance_and_corruption_flip_one_bit_past_the_header() {
        let mut rng = Rng::new(5);
        let mut d = Chance::new(0.05, 0.0);
        let n = (0..100_000).filter(|_| d.happens(&mut rng)).count();
        assert!((4_600..5_400).contains(&n), "{n}");
        let mut p = Packet {
            data: vec![0u8; 100],
            ..Default::default()
        };
        corrupt(&mut p, &mut rng);
        let ones: u32 = p.data.iter().map(|b| b.count_ones()).sum();
        assert_eq!(ones, 1);
        assert!(p.data[..14].iter().all(|&b| b == 0));
        let flip = p.flip.unwrap();
        assert_eq!(p.data[flip.byte], flip.mask);
        flip.apply(&mut p.data);
        assert!(p.data.iter().all(|&b| b == 0), "flipping again undoes it");
    }

    #[test]
    fn corruption_flips_past_the_head_and_the_ethernet_header_behind_it() {
        let mut rng = Rng::new(9);
        for _ in 0..2_000 {
            let mut p = Packet {
                data: vec![0u8; 10 + 14 + 3],
                head: 10,
                ..Default::default()
            };
            corrupt(&mut p, &mut rng);
            assert!(p.data[..24].iter().all(|&b| b == 0));
            assert!(p.flip.unwrap().byte >= 24);
        }
        let mut p = Packet {
            data: vec![0u8; 24],
            head: 10,
            ..Default::default()
        };
        corrupt(&mut p, &mut rng);
        assert_eq!((p.flip, p.data), (None, vec![0u8; 24]), "nothing past the header");
    }
}
