print("peerlink: under construction")
