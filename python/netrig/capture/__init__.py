"""Packet capture: on links and interfaces, and what it shows (netrig issue 16)."""
