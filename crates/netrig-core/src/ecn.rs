//! The ECN field of the IP header (RFC 3168 §5): its four code points as a type.
//!
//! Owns only the code point and what it means (is the sender ECN-capable?). Where the two
//! bits sit in an IPv4 or IPv6 header is the wire formats' business (`wire::ethernet`);
//! what a queue does with them is the link model's (`link::packet::Packet::mark_ce`).
//! Both depend on this module, neither on the other.

/// The two ECN bits of the IP header.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Ecn {
    /// 0b00: the sender does not speak ECN.
    #[default]
    NotEct,
    /// 0b01: ECN-capable transport, ECT(1).
    Ect1,
    /// 0b10: ECN-capable transport, ECT(0).
    Ect0,
    /// 0b11: Congestion Experienced, set by a queue instead of dropping.
    Ce,
}

impl Ecn {
    /// True for every code point but Not-ECT: a queue may mark the packet instead of
    /// dropping it.
    pub fn is_capable(self) -> bool {
        !matches!(self, Ecn::NotEct)
    }
}

#[cfg(test)]
mod tests {
    use super::Ecn;

    #[test]
    fn only_not_ect_is_incapable() {
        assert!(!Ecn::NotEct.is_capable());
        assert!(Ecn::default() == Ecn::NotEct);
        for ecn in [Ecn::Ect0, Ecn::Ect1, Ecn::Ce] {
            assert!(ecn.is_capable(), "{ecn:?}");
        }
    }
}
