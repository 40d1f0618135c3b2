/// The modes `peerlink-bench` dispatches on (besides a number, the default run's MiB).
let knownModes: Set<String> = [
    "rtt", "cpu", "connect-delay", "idle", "messages", "big-messages", "resource", "file",
    "bluetooth", "bluetooth-one", "handover-recv", "handover-send",
]

/// `peerlink-bench --help`.
let usage = """
    usage: peerlink-bench [MODE] [ARGUMENTS]   (release build; both ends run in this process)

      peerlink-bench [MEGABYTES]             loopback TCP (default 64 MiB per transfer): raw socket and
                                             iperf3 baselines; reliable 64 KiB messages (3 rounds, raw TCP
                                             beside every round, median ratio); a file against raw TCP,
                                             iperf3 and OpenSSH (as `file`); 100 B messages against raw
                                             TCP one send each and 64 per writev (3 rounds); connect +
                                             Noise XX; CPU per GiB; message round trips; one JSON line
      peerlink-bench file [MEGABYTES]        a file (default 256 MiB) over PeerLink against raw TCP, iperf3
                                             and OpenSSH with its fastest cipher here (an sshd the bench
                                             starts on 127.0.0.1 with throwaway keys; needs root and
                                             openssh-server), 3 rounds, and the CPU floor of the job
      peerlink-bench rtt [COUNT]             message round trip (64 B, 1 KiB) vs raw TCP ping-pong, p50/p99
      peerlink-bench cpu [MEGABYTES]         CPU seconds per GiB, both ends, vs iperf3, raw TCP and the
                                         cipher and SHA-256 floors
      peerlink-bench connect-delay [ONE-WAY-MS [RUNS]]
                                             dial to first application byte through a delaying relay, in RTTs
      peerlink-bench idle [PEERS]            threads, memory and CPU of PEERS idle loopback sessions
      peerlink-bench messages [COUNT]        only reliable 100 B messages vs raw TCP, one send each and
                                             64 per writev, 3 rounds
      peerlink-bench big-messages [MEGABYTES]  only reliable 64 KiB messages (for profiling)
      peerlink-bench resource [MEGABYTES]    only the loopback file transfer (for profiling)
      peerlink-bench bluetooth TX RX BASELINE_FILE [MIB [FRAGMENTS]]
                                             inside the Bluetooth lab (scripts/bench-bt.sh): session
                                             throughput over RFCOMM and L2CAP against rctest/l2test
      peerlink-bench bluetooth-one rfcomm|l2cap TX RX [MIB]
                                             one session run in the lab (Hardware/bt-lab/paired-bench.sh)
      peerlink-bench handover-recv|handover-send …   the PeerLink half of scripts/bench-handover.sh

    `peerlink-bench MODE --help` explains rtt, cpu and connect-delay.
    """
