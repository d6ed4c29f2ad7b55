//! Tables of facts: the names of pcap link types (tcpdump.org's LINKTYPE_ names, as
//! libpcap 1.10's pcap-common.c defines them), and the UDP ports tshark 4.0.17 hands to a
//! protocol by default (`tshark -G decodes`, the udp.port table), which decide, as
//! tshark's UDP dissector tries the lower port first, whether a tunnel port is reached.
//!
//! A registered port's dissector may give a datagram back (a "new-style" dissector that
//! does not recognise it), and tshark then tries the other port. Which ones do was
//! measured: every registered port below a tunnel port, as source and as destination,
//! against each tunnel's own traffic (VXLAN, VXLAN-GPE, Geneve, GTP, GRE- and MPLS-in-UDP)
//! in tshark 4.0.17, one datagram per file (a conversation one datagram sets up changes
//! how the next is read). The ports that gave every tunnel back are `GIVES_BACK`; a few
//! keep some tunnels and give others back (SNMP on 161/162 takes GTP's first byte 0x30
//! for ASN.1 but gives VXLAN back), and two give them back only as the source port.
//! Payloads unlike a tunnel's own traffic may be read otherwise.

/// The LINKTYPE_ name of a pcap link type ("USB_LINUX" for 189), or "unknown".
pub fn link_type_name(link_type: u32) -> &'static str {
    match NAMES.binary_search_by_key(&link_type, |&(n, _)| n) {
        Ok(i) => NAMES[i].1,
        Err(_) => "unknown",
    }
}

/// Whether tshark 4.0.17 gives UDP `port` (below 6635, the highest tunnel port decoded
/// here) to some protocol by default.
pub(crate) fn tshark_udp_port(port: u16) -> bool {
    TSHARK_UDP_PORTS.binary_search(&port).is_ok()
}

/// Whether tshark's protocol on the lower `port` keeps a datagram meant for the tunnel on
/// port `tunnel` (rather than giving it back for `tunnel` to be tried); `as_source`:
/// `port` is the source port only.
pub(crate) fn udp_port_keeps(port: u16, tunnel: u16, as_source: bool) -> bool {
    tshark_udp_port(port) && !gives_back(port, tunnel, as_source)
}

/// The measurement (see the module doc): the protocols that give some tunnels back and
/// keep others, then those that give every tunnel back.
fn gives_back(port: u16, tunnel: u16, as_source: bool) -> bool {
    const GTP: [u16; 2] = [2123, 2152];
    match port {
        161 | 162 => !GTP.contains(&tunnel), // SNMP reads GTP's 0x30 as ASN.1
        177 | 646 | 2055 | 3386 | 3503 | 4739 | 5094 => tunnel != 6635, // MPLS-in-UDP kept
        269 | 4341 => tunnel == 4790,
        698 => GTP.contains(&tunnel) || matches!(tunnel, 4789 | 4790),
        1113 => tunnel == 6081,
        1985 | 2029 => as_source, // they check the destination port
        _ => GIVES_BACK.binary_search(&port).is_ok(),
    }
}

/// Registered ports whose protocol gave every tunnel's datagram back, either way.
const GIVES_BACK: [u16; 66] = [
    88, 473, 502, 539, 573, 623, 654, 699, 750, 1044, 1052, 1069, 1089, 1090, 1091, 1101, 1547, 1645, 1646,
    1700, 1701, 1812, 1813, 2048, 2067, 2190, 2231, 2424, 2427, 2428, 2727, 2960, 3121, 3205, 3222, 3333,
    3478, 3483, 3540, 3622, 3792, 3799, 3819, 3956, 4000, 4011, 4058, 4533, 4534, 4556, 4665, 4672, 4713,
    5000, 5001, 5050, 5060, 5264, 5265, 5555, 5678, 6060, 6084, 6087, 6343, 6543,
];

/// tshark 4.0.17's registered UDP ports from 1 to 6634, sorted.
const TSHARK_UDP_PORTS: [u16; 196] = [
    7, 13, 19, 37, 49, 53, 67, 68, 69, 88, 111, 123, 137, 138, 161, 162, 173, 177, 213, 269, 319, 320, 389,
    427, 434, 464, 473, 496, 500, 502, 513, 514, 520, 521, 524, 525, 539, 546, 547, 573, 623, 631, 646, 654,
    664, 698, 699, 701, 750, 853, 854, 910, 921, 925, 1001, 1044, 1052, 1069, 1089, 1090, 1091, 1101, 1113,
    1153, 1194, 1293, 1547, 1628, 1629, 1645, 1646, 1700, 1701, 1718, 1719, 1745, 1755, 1812, 1813, 1900,
    1985, 2029, 2048, 2055, 2067, 2099, 2123, 2152, 2157, 2190, 2221, 2222, 2231, 2246, 2268, 2269, 2313,
    2345, 2424, 2427, 2428, 2727, 2887, 2944, 2945, 2948, 2949, 2960, 3000, 3121, 3130, 3205, 3222, 3250,
    3333, 3343, 3357, 3386, 3389, 3452, 3455, 3478, 3483, 3503, 3540, 3544, 3567, 3622, 3671, 3784, 3785,
    3792, 3799, 3804, 3819, 3863, 3956, 4000, 4011, 4058, 4305, 4306, 4307, 4341, 4342, 4500, 4533, 4534,
    4551, 4555, 4556, 4569, 4665, 4672, 4713, 4729, 4739, 4754, 4784, 4789, 4790, 4791, 4991, 5000, 5001,
    5031, 5050, 5060, 5072, 5094, 5246, 5247, 5264, 5265, 5350, 5351, 5353, 5355, 5404, 5405, 5436, 5555,
    5567, 5678, 5683, 5684, 5868, 6060, 6073, 6081, 6084, 6087, 6118, 6160, 6343, 6543,
];

/// LINKTYPE_ values and names, sorted (12 and 14 are the old raw-IP values libpcap's
/// files carried before LINKTYPE_RAW 101).
const NAMES: [(u32, &str); 205] = [
    (0, "NULL"),
    (1, "ETHERNET"),
    (2, "EXP_ETHERNET"),
    (3, "AX25"),
    (4, "PRONET"),
    (5, "CHAOS"),
    (6, "IEEE802_5"),
    (7, "ARCNET_BSD"),
    (8, "SLIP"),
    (9, "PPP"),
    (10, "FDDI"),
    (12, "RAW (old value)"),
    (14, "RAW (old value)"),
    (50, "PPP_HDLC"),
    (51, "PPP_ETHER"),
    (99, "SYMANTEC_FIREWALL"),
    (100, "ATM_RFC1483"),
    (101, "RAW"),
    (102, "SLIP_BSDOS"),
    (103, "PPP_BSDOS"),
    (104, "C_HDLC"),
    (105, "IEEE802_11"),
    (106, "ATM_CLIP"),
    (107, "FRELAY"),
    (108, "LOOP"),
    (109, "ENC"),
    (110, "LANE8023"),
    (111, "HIPPI"),
    (112, "NETBSD_HDLC"),
    (113, "LINUX_SLL"),
    (114, "LTALK"),
    (115, "ECONET"),
    (116, "IPFILTER"),
    (117, "PFLOG"),
    (118, "CISCO_IOS"),
    (119, "IEEE802_11_PRISM"),
    (120, "IEEE802_11_AIRONET"),
    (121, "HHDLC"),
    (122, "IP_OVER_FC"),
    (123, "SUNATM"),
    (124, "RIO"),
    (125, "PCI_EXP"),
    (126, "AURORA"),
    (127, "IEEE802_11_RADIOTAP"),
    (128, "TZSP"),
    (129, "ARCNET_LINUX"),
    (130, "JUNIPER_MLPPP"),
    (131, "JUNIPER_MLFR"),
    (132, "JUNIPER_ES"),
    (133, "JUNIPER_GGSN"),
    (134, "JUNIPER_MFR"),
    (135, "JUNIPER_ATM2"),
    (136, "JUNIPER_SERVICES"),
    (137, "JUNIPER_ATM1"),
    (138, "APPLE_IP_OVER_IEEE1394"),
    (139, "MTP2_WITH_PHDR"),
    (140, "MTP2"),
    (141, "MTP3"),
    (142, "SCCP"),
    (143, "DOCSIS"),
    (144, "LINUX_IRDA"),
    (145, "IBM_SP"),
    (146, "IBM_SN"),
    (147, "USER0"),
    (148, "USER1"),
    (149, "USER2"),
    (150, "USER3"),
    (151, "USER4"),
    (152, "USER5"),
    (153, "USER6"),
    (154, "USER7"),
    (155, "USER8"),
    (156, "USER9"),
    (157, "USER10"),
    (158, "USER11"),
    (159, "USER12"),
    (160, "USER13"),
    (161, "USER14"),
    (162, "USER15"),
    (163, "IEEE802_11_AVS"),
    (164, "JUNIPER_MONITOR"),
    (165, "BACNET_MS_TP"),
    (166, "PPP_PPPD"),
    (167, "JUNIPER_PPPOE"),
    (168, "JUNIPER_PPPOE_ATM"),
    (169, "GPRS_LLC"),
    (170, "GPF_T"),
    (171, "GPF_F"),
    (172, "GCOM_T1E1"),
    (173, "GCOM_SERIAL"),
    (174, "JUNIPER_PIC_PEER"),
    (175, "ERF_ETH"),
    (176, "ERF_POS"),
    (177, "LINUX_LAPD"),
    (178, "JUNIPER_ETHER"),
    (179, "JUNIPER_PPP"),
    (180, "JUNIPER_FRELAY"),
    (181, "JUNIPER_CHDLC"),
    (182, "MFR"),
    (183, "JUNIPER_VP"),
    (184, "A429"),
    (185, "A653_ICM"),
    (186, "USB_FREEBSD"),
    (187, "BLUETOOTH_HCI_H4"),
    (188, "IEEE802_16_MAC_CPS"),
    (189, "USB_LINUX"),
    (190, "CAN20B"),
    (191, "IEEE802_15_4_LINUX"),
    (192, "PPI"),
    (193, "IEEE802_16_MAC_CPS_RADIO"),
    (194, "JUNIPER_ISM"),
    (195, "IEEE802_15_4_WITHFCS"),
    (196, "SITA"),
    (197, "ERF"),
    (198, "RAIF1"),
    (199, "IPMB_KONTRON"),
    (200, "JUNIPER_ST"),
    (201, "BLUETOOTH_HCI_H4_WITH_PHDR"),
    (202, "AX25_KISS"),
    (203, "LAPD"),
    (204, "PPP_WITH_DIR"),
    (205, "C_HDLC_WITH_DIR"),
    (206, "FRELAY_WITH_DIR"),
    (207, "LAPB_WITH_DIR"),
    (209, "IPMB_LINUX"),
    (210, "FLEXRAY"),
    (211, "MOST"),
    (212, "LIN"),
    (213, "X2E_SERIAL"),
    (214, "X2E_XORAYA"),
    (215, "IEEE802_15_4_NONASK_PHY"),
    (216, "LINUX_EVDEV"),
    (217, "GSMTAP_UM"),
    (218, "GSMTAP_ABIS"),
    (219, "MPLS"),
    (220, "USB_LINUX_MMAPPED"),
    (221, "DECT"),
    (222, "AOS"),
    (223, "WIHART"),
    (224, "FC_2"),
    (225, "FC_2_WITH_FRAME_DELIMS"),
    (226, "IPNET"),
    (227, "CAN_SOCKETCAN"),
    (228, "IPV4"),
    (229, "IPV6"),
    (230, "IEEE802_15_4_NOFCS"),
    (231, "DBUS"),
    (232, "JUNIPER_VS"),
    (233, "JUNIPER_SRX_E2E"),
    (234, "JUNIPER_FIBRECHANNEL"),
    (235, "DVB_CI"),
    (236, "MUX27010"),
    (237, "STANAG_5066_D_PDU"),
    (238, "JUNIPER_ATM_CEMIC"),
    (239, "NFLOG"),
    (240, "NETANALYZER"),
    (241, "NETANALYZER_TRANSPARENT"),
    (242, "IPOIB"),
    (243, "MPEG_2_TS"),
    (244, "NG40"),
    (245, "NFC_LLCP"),
    (246, "PFSYNC"),
    (247, "INFINIBAND"),
    (248, "SCTP"),
    (249, "USBPCAP"),
    (250, "RTAC_SERIAL"),
    (251, "BLUETOOTH_LE_LL"),
    (252, "WIRESHARK_UPPER_PDU"),
    (253, "NETLINK"),
    (254, "BLUETOOTH_LINUX_MONITOR"),
    (255, "BLUETOOTH_BREDR_BB"),
    (256, "BLUETOOTH_LE_LL_WITH_PHDR"),
    (257, "PROFIBUS_DL"),
    (258, "PKTAP"),
    (259, "EPON"),
    (260, "IPMI_HPM_2"),
    (261, "ZWAVE_R1_R2"),
    (262, "ZWAVE_R3"),
    (263, "WATTSTOPPER_DLM"),
    (264, "ISO_14443"),
    (265, "RDS"),
    (266, "USB_DARWIN"),
    (267, "OPENFLOW"),
    (268, "SDLC"),
    (269, "TI_LLN_SNIFFER"),
    (270, "LORATAP"),
    (271, "VSOCK"),
    (272, "NORDIC_BLE"),
    (273, "DOCSIS31_XRA31"),
    (274, "ETHERNET_MPACKET"),
    (275, "DISPLAYPORT_AUX"),
    (276, "LINUX_SLL2"),
    (277, "SERCOS_MONITOR"),
    (278, "OPENVIZSLA"),
    (279, "EBHSCR"),
    (280, "VPP_DISPATCH"),
    (281, "DSA_TAG_BRCM"),
    (282, "DSA_TAG_BRCM_PREPEND"),
    (283, "IEEE802_15_4_TAP"),
    (284, "DSA_TAG_DSA"),
    (285, "DSA_TAG_EDSA"),
    (286, "ELEE"),
    (287, "Z_WAVE_SERIAL"),
    (288, "USB_2_0"),
    (289, "ATSC_ALP"),
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tables_are_sorted_and_named() {
        assert!(NAMES.windows(2).all(|w| w[0].0 < w[1].0));
        assert!(TSHARK_UDP_PORTS.windows(2).all(|w| w[0] < w[1]));
        assert!(GIVES_BACK.windows(2).all(|w| w[0] < w[1]));
        assert!(GIVES_BACK.iter().all(|&p| tshark_udp_port(p)));
        assert!(udp_port_keeps(53, 4789, true) && udp_port_keeps(161, 2152, false));
        assert!(!udp_port_keeps(2048, 4789, false) && !udp_port_keeps(161, 4789, false));
        assert!(!udp_port_keeps(1985, 4789, true) && udp_port_keeps(1985, 4789, false));
        assert_eq!(link_type_name(189), "USB_LINUX");
        assert_eq!(link_type_name(1), "ETHERNET");
        assert_eq!(link_type_name(65000), "unknown");
        // tshark's own tunnel ports and DNS are registered; Linux's VXLAN 8472 is not.
        for p in [53, 2152, 4789] {
            assert!(tshark_udp_port(p), "{p}");
        }
        assert!(!tshark_udp_port(4788));
    }
}
