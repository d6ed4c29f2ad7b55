//! A packet as the link model sees it: its wire length, its flow, its ECN field, and
//! (in the daemon) its bytes. Times are nanoseconds on the caller's clock.

// The ECN code point lives below both the link model and the wire formats
// (`crate::ecn`); link code names it from here.
pub use crate::ecn::Ecn;

#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Packet {
    /// Sequence number given by the link on arrival (for tests and pcap).
    pub id: u64,
    /// Bytes on the wire (frame length; serialization uses this plus the rate stage's
    /// per-frame overhead for each of its `segments`). For an offload superframe, the
    /// bytes of the segments it carries, each with its own headers.
    pub len: u32,
    /// How many frames the wire carries for this packet: an offload superframe's
    /// segments. 0 and 1 both mean one frame (see [`Packet::frames`]).
    pub segments: u32,
    /// Flow identity (a hash of the 5-tuple) for per-flow queueing.
    pub flow: u64,
    pub ecn: Ecn,
    /// When the packet entered the queue (set by the queue).
    pub enqueued_ns: u64,
    /// The frame, when there is one (the daemon); empty in simulations.
    pub data: Vec<u8>,
    /// Bytes of `data` before the Ethernet frame (the daemon's virtio-net header with
    /// offloads on; 0 otherwise).
    pub head: u32,
    /// This packet is the copy the link's `duplicate` stage made.
    pub duplicated: bool,
    /// The link's `corrupt` stage flipped a bit of this packet.
    pub corrupted: bool,
    /// Which bit it flipped (None: the frame had no byte past its Ethernet header), so
    /// that the daemon can give the frame the checksum a device would have computed
    /// before the wire flipped it (offloads on: see netrig-link's `corrupt`).
    pub flip: Option<BitFlip>,
}

/// One bit flipped: `data[byte] ^= mask`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BitFlip {
    pub byte: usize,
    pub mask: u8,
}

impl BitFlip {
    /// Flips the bit (again: a second call undoes the first).
    pub fn apply(self, data: &mut [u8]) {
        if let Some(b) = data.get_mut(self.byte) {
            *b ^= self.mask;
        }
    }
}

impl Packet {
    /// A bare packet for simulations.
    pub fn sized(id: u64, len: u32, flow: u64) -> Packet {
        Packet {
            id,
            len,
            flow,
            ..Default::default()
        }
    }

    /// How many frames the wire carries for this packet (at least one).
    pub fn frames(&self) -> u32 {
        self.segments.max(1)
    }

    /// Marks Congestion Experienced if the packet is ECN-capable; false if it is not
    /// (the caller then drops it instead).
    pub fn mark_ce(&mut self) -> bool {
        if !self.ecn.is_capable() {
            return false;
        }
        self.ecn = Ecn::Ce;
        true
    }
}
