//! A small seeded generator (xoshiro256**, seeded by splitmix64) and the distributions
//! the link model draws from. Same seed, same run.

#[derive(Debug, Clone)]
pub struct Rng {
    s: [u64; 4],
}

fn splitmix(x: &mut u64) -> u64 {
    *x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *x;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

impl Rng {
    pub fn new(seed: u64) -> Rng {
        let mut x = seed;
        Rng {
            s: [
                splitmix(&mut x),
                splitmix(&mut x),
                splitmix(&mut x),
                splitmix(&mut x),
            ],
        }
    }

    pub fn next_u64(&mut self) -> u64 {
        let s = &mut self.s;
        let result = s[1].wrapping_mul(5).rotate_left(7).wrapping_mul(9);
        let t = s[1] << 17;
        s[2] ^= s[0];
        s[3] ^= s[1];
        s[1] ^= s[2];
        s[0] ^= s[3];
        s[2] ^= t;
        s[3] = s[3].rotate_left(45);
        result
    }

    /// Uniform in [0, 1).
    pub fn uniform(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    /// True with probability `p`.
    pub fn chance(&mut self, p: f64) -> bool {
        p > 0.0 && self.uniform() < p
    }

    /// Standard normal (Box-Muller).
    pub fn normal(&mut self) -> f64 {
        let u1 = self.uniform().max(f64::MIN_POSITIVE);
        let u2 = self.uniform();
        (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
    }

    /// Uniform integer in [0, n).
    pub fn below(&mut self, n: u64) -> u64 {
        if n == 0 {
            0
        } else {
            ((self.next_u64() as u128 * n as u128) >> 64) as u64
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_seed_same_sequence() {
        let (mut a, mut b) = (Rng::new(7), Rng::new(7));
        for _ in 0..100 {
            assert_eq!(a.next_u64(), b.next_u64());
        }
        assert_ne!(Rng::new(7).next_u64(), Rng::new(8).next_u64());
    }

    #[test]
    fn uniform_and_normal_have_their_moments() {
        let mut r = Rng::new(1);
        let n = 200_000;
        let u: Vec<f64> = (0..n).map(|_| r.uniform()).collect();
        let mean = u.iter().sum::<f64>() / n as f64;
        assert!((mean - 0.5).abs() < 0.005, "{mean}");
        assert!(u.iter().all(|&x| (0.0..1.0).contains(&x)));
        let z: Vec<f64> = (0..n).map(|_| r.normal()).collect();
        let m = z.iter().sum::<f64>() / n as f64;
        let var = z.iter().map(|x| (x - m).powi(2)).sum::<f64>() / n as f64;
        assert!(m.abs() < 0.01 && (var - 1.0).abs() < 0.02, "{m} {var}");
    }
}

/// Correlated uniforms: a Gaussian AR(1) process z' = rho·z + sqrt(1-rho²)·n mapped
/// through the normal CDF, so every draw is uniform on [0, 1) (a loss of `p` stays `p`)
/// while consecutive draws are correlated by about `rho`. netem's blend
/// (u·(1-rho) + last·rho) shrinks the spread, so its "loss 10% 75%" loses far fewer
/// than 10 %; this keeps the configured rate and still makes the bursts.
#[derive(Debug, Clone, Default)]
pub struct Correlated {
    pub rho: f64,
    z: Option<f64>,
}

impl Correlated {
    pub fn new(rho: f64) -> Correlated {
        Correlated {
            rho: rho.clamp(0.0, 0.999_999),
            z: None,
        }
    }

    pub fn next(&mut self, rng: &mut Rng) -> f64 {
        if self.rho == 0.0 {
            return rng.uniform();
        }
        let n = rng.normal();
        let z = match self.z {
            None => n,
            Some(prev) => self.rho * prev + (1.0 - self.rho * self.rho).sqrt() * n,
        };
        self.z = Some(z);
        normal_cdf(z).clamp(0.0, 1.0 - f64::EPSILON)
    }
}

/// The standard normal CDF (via erf, Abramowitz & Stegun 7.1.26, |error| < 1.5e-7).
pub fn normal_cdf(z: f64) -> f64 {
    let x = z.abs() / std::f64::consts::SQRT_2;
    let t = 1.0 / (1.0 + 0.327_591_1 * x);
    let poly = t
        * (0.254_829_592
            + t * (-0.284_496_736 + t * (1.421_413_741 + t * (-1.453_152_027 + t * 1.061_405_429))));
    let erf = 1.0 - poly * (-x * x).exp();
    if z >= 0.0 {
        0.5 * (1.0 + erf)
    } else {
        0.5 * (1.0 - erf)
    }
}

/// The inverse standard normal CDF (Acklam's rational approximation, |rel. error| < 1.2e-9).
pub fn normal_quantile(p: f64) -> f64 {
    const A: [f64; 6] = [
        -3.969_683_028_665_376e1,
        2.209_460_984_245_205e2,
        -2.759_285_104_469_687e2,
        1.383_577_518_672_69e2,
        -3.066_479_806_614_716e1,
        2.506_628_277_459_239,
    ];
    const B: [f64; 5] = [
        -5.447_609_879_822_406e1,
        1.615_858_368_580_409e2,
        -1.556_989_798_598_866e2,
        6.680_131_188_771_972e1,
        -1.328_068_155_288_572e1,
    ];
    const C: [f64; 6] = [
        -7.784_894_002_430_293e-3,
        -3.223_964_580_411_365e-1,
        -2.400_758_277_161_838,
        -2.549_732_539_343_734,
        4.374_664_141_464_968,
        2.938_163_982_698_783,
    ];
    const D: [f64; 4] = [
        7.784_695_709_041_462e-3,
        3.224_671_290_700_398e-1,
        2.445_134_137_142_996,
        3.754_408_661_907_416,
    ];
    let p = p.clamp(1e-300, 1.0 - 1e-16);
    let low = 0.024_25;
    if p < low {
        let q = (-2.0 * p.ln()).sqrt();
        (((((C[0] * q + C[1]) * q + C[2]) * q + C[3]) * q + C[4]) * q + C[5])
            / ((((D[0] * q + D[1]) * q + D[2]) * q + D[3]) * q + 1.0)
    } else if p <= 1.0 - low {
        let q = p - 0.5;
        let r = q * q;
        (((((A[0] * r + A[1]) * r + A[2]) * r + A[3]) * r + A[4]) * r + A[5]) * q
            / (((((B[0] * r + B[1]) * r + B[2]) * r + B[3]) * r + B[4]) * r + 1.0)
    } else {
        let q = (-2.0 * (1.0 - p).ln()).sqrt();
        -(((((C[0] * q + C[1]) * q + C[2]) * q + C[3]) * q + C[4]) * q + C[5])
            / ((((D[0] * q + D[1]) * q + D[2]) * q + D[3]) * q + 1.0)
    }
}

#[cfg(test)]
mod correlated_tests {
    use super::*;

    #[test]
    fn correlated_draws_stay_uniform_and_are_correlated() {
        let mut rng = Rng::new(11);
        let mut c = Correlated::new(0.8);
        let v: Vec<f64> = (0..200_000).map(|_| c.next(&mut rng)).collect();
        let below = |x: f64| v.iter().filter(|&&u| u < x).count() as f64 / v.len() as f64;
        for x in [0.01, 0.1, 0.5, 0.9] {
            assert!((below(x) - x).abs() < 0.01, "P(u < {x}) = {}", below(x));
        }
        let mean = 0.5;
        let cov: f64 =
            v.windows(2).map(|w| (w[0] - mean) * (w[1] - mean)).sum::<f64>() / (v.len() - 1) as f64;
        let corr = cov / (1.0 / 12.0);
        assert!(corr > 0.7 && corr < 0.85, "{corr}");
    }

    #[test]
    fn quantile_inverts_the_cdf() {
        for p in [0.001, 0.02, 0.3, 0.5, 0.77, 0.99, 0.9999] {
            assert!((normal_cdf(normal_quantile(p)) - p).abs() < 1e-6, "{p}");
        }
        assert!((normal_quantile(0.975) - 1.959_964).abs() < 1e-5);
    }
}
