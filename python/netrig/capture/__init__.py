"""Capture files: what netrig reads from pcap/pcapng files and how it draws it."""
