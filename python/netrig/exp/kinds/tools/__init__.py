"""The programs besides netrig-perf that make tcp and udp flows (`tool:`): iperf3 and
iperf2, each its command lines and the reading of its output into netrig-perf's
(iperf3's) document shape."""
