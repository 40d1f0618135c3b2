import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// The comparison users make for files: the same file copied with OpenSSH (`ssh -c CIPHER …
/// 'cat > FILE' < FILE`) between the same two endpoints as PeerLink's loopback transfer.
///
/// The bench starts its own sshd on 127.0.0.1 with a configuration, host key, client key and
/// authorized key made in a temporary directory and removed afterwards; the machine's sshd
/// configuration and keys are neither read nor changed (sshd needs its privilege-separation
/// directory /run/sshd, which is created if missing, as the ssh service would). Needs root
/// (sshd's privilege separation) and openssh-server and openssh-client (scripts/setup.sh).
final class OpenSSH {
    /// Ciphers tried, fastest first on most machines; the bench measures which is fastest here.
    static let candidates = ["aes128-gcm@openssh.com", "aes256-gcm@openssh.com", "chacha20-poly1305@openssh.com", "aes128-ctr"]

    let dir: String
    let port: UInt16
    private let daemon: pid_t

    /// One copy: seconds and the CPU seconds of both ends (the ssh client, and the sshd
    /// processes that served the connection).
    struct Copy {
        let seconds: Double
        let cpuSeconds: Double
    }

    /// Starts sshd on a free loopback port; nil (with the reason on stderr) when it cannot.
    static func start() -> OpenSSH? {
        func fail(_ why: String) -> OpenSSH? {
            FileHandle.standardError.write(Data("openssh: not compared: \(why)\n".utf8))
            return nil
        }
        for tool in ["/usr/sbin/sshd", "/usr/bin/ssh", "/usr/bin/ssh-keygen"] where !FileManager.default.isExecutableFile(atPath: tool) {
            return fail("\(tool) is not installed (apt-get install openssh-server openssh-client)")
        }
        guard geteuid() == 0 else { return fail("sshd's privilege separation needs root") }
        let dir = NSTemporaryDirectory() + "peerlink-bench-ssh-\(getpid())"
        try? FileManager.default.removeItem(atPath: dir)
        do {
            try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
            if !FileManager.default.fileExists(atPath: "/run/sshd") {
                try FileManager.default.createDirectory(atPath: "/run/sshd", withIntermediateDirectories: true, attributes: [.posixPermissions: 0o755])
            }
        } catch {
            return fail("cannot prepare \(dir): \(error)")
        }
        for (key, comment) in [("host", "peerlink-bench host"), ("client", "peerlink-bench client")] {
            guard run("/usr/bin/ssh-keygen", ["-q", "-t", "ed25519", "-N", "", "-C", comment, "-f", "\(dir)/\(key)"]) == 0 else {
                return fail("ssh-keygen failed")
            }
        }
        guard let port = freeLoopbackPort() else { return fail("no free loopback port") }
        let hostKey = ((try? String(contentsOfFile: "\(dir)/host.pub", encoding: .utf8)) ?? "").split(separator: " ").prefix(2).joined(separator: " ")
        let clientKey = (try? String(contentsOfFile: "\(dir)/client.pub", encoding: .utf8)) ?? ""
        let config = """
            ListenAddress 127.0.0.1
            Port \(port)
            HostKey \(dir)/host
            PidFile \(dir)/sshd.pid
            AuthorizedKeysFile \(dir)/authorized_keys
            AuthenticationMethods publickey
            PubkeyAuthentication yes
            PasswordAuthentication no
            KbdInteractiveAuthentication no
            PermitRootLogin prohibit-password
            UsePAM no
            StrictModes no
            Compression no
            Ciphers \(candidates.joined(separator: ","))
            LogLevel ERROR

            """
        do {
            try config.write(toFile: "\(dir)/sshd_config", atomically: true, encoding: .utf8)
            try clientKey.write(toFile: "\(dir)/authorized_keys", atomically: true, encoding: .utf8)
            try "[127.0.0.1]:\(port) \(hostKey)\n".write(toFile: "\(dir)/known_hosts", atomically: true, encoding: .utf8)
        } catch {
            return fail("cannot write its configuration: \(error)")
        }
        guard let daemon = spawn("/usr/sbin/sshd", ["-D", "-e", "-f", "\(dir)/sshd_config"], stdin: nil, log: "\(dir)/sshd.log") else {
            return fail("cannot start sshd")
        }
        let ssh = OpenSSH(dir: dir, port: port, daemon: daemon)
        // Ready when a command over it succeeds (its socket accepting is not enough).
        let deadline = Date().addingTimeInterval(10)
        while Date() < deadline {
            if ssh.command("true", cipher: candidates[0]) == 0 { return ssh }
            usleep(100_000)
        }
        let log = (try? String(contentsOfFile: "\(dir)/sshd.log", encoding: .utf8)) ?? ""
        ssh.stop()
        return fail("sshd on 127.0.0.1:\(port) did not accept a login within 10 s: \(log.suffix(400))")
    }

    private init(dir: String, port: UInt16, daemon: pid_t) {
        self.dir = dir
        self.port = port
        self.daemon = daemon
    }

    /// The ssh client's arguments for `remote` with `cipher`, this sshd only; through the
    /// connection `master` holds, when given.
    private func arguments(_ remote: String, cipher: String, master: String? = nil, extra: [String] = []) -> [String] {
        ["-F", "/dev/null", "-p", String(port), "-i", "\(dir)/client", "-c", cipher,
         "-o", "UserKnownHostsFile=\(dir)/known_hosts", "-o", "StrictHostKeyChecking=yes", "-o", "BatchMode=yes",
         "-o", "Compression=no", "-o", "IdentitiesOnly=yes", "-o", "LogLevel=ERROR"]
            + (master.map { ["-o", "ControlPath=\($0)", "-o", "ControlMaster=no"] } ?? []) + extra
            + ["\(NSUserName())@127.0.0.1", remote]
    }

    /// Runs `remote` over ssh; its exit status.
    func command(_ remote: String, cipher: String) -> Int32 {
        OpenSSH.run("/usr/bin/ssh", arguments(remote, cipher: cipher))
    }

    /// Copies `source` to `target` as `ssh … 'cat > target' < source` over a connection opened
    /// beforehand (ssh's ControlMaster), so that the time is the copy's, not the key exchange
    /// and login's, as PeerLink's is timed on a session already up; nil when ssh fails. The
    /// CPU counted: the mux client, the master ssh process and every sshd process of the
    /// connection.
    func copy(_ source: String, to target: String, cipher: String) -> Copy? {
        let control = "\(dir)/master"
        guard OpenSSH.run("/usr/bin/ssh", arguments("true", cipher: cipher, extra: [
            "-o", "ControlMaster=yes", "-o", "ControlPath=\(control)", "-o", "ControlPersist=yes"])) == 0 else { return nil }
        defer { OpenSSH.run("/usr/bin/ssh", arguments("", cipher: cipher, master: control, extra: ["-O", "exit"])) }
        let master = masterPID(control)
        let before = daemonCPU() + (master.map(OpenSSH.processCPU) ?? 0)
        let start = DispatchTime.now().uptimeNanoseconds
        guard let pid = OpenSSH.spawn("/usr/bin/ssh", arguments("cat > '\(target)'", cipher: cipher, master: control),
                                      stdin: source, log: "\(dir)/ssh.log") else { return nil }
        var status: Int32 = 0
        var usage = rusage()
        while wait4(pid, &status, 0, &usage) < 0, errno == EINTR {}
        let seconds = Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
        guard status == 0 else { return nil }
        let client = Double(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) + Double(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6
        let after = daemonCPU() + (master.map(OpenSSH.processCPU) ?? 0)
        return Copy(seconds: seconds, cpuSeconds: client + after - before)
    }

    /// The master ssh process behind `control` (`ssh -O check` says "Master running (pid=N)").
    private func masterPID(_ control: String) -> pid_t? {
        let out = "\(dir)/check.out"
        try? FileManager.default.removeItem(atPath: out)
        guard let pid = OpenSSH.spawn("/usr/bin/ssh", arguments("", cipher: OpenSSH.candidates[0], master: control, extra: ["-O", "check"]),
                                      stdin: nil, log: out) else { return nil }
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0, errno == EINTR {}
        let text = (try? String(contentsOfFile: out, encoding: .utf8)) ?? ""
        guard let r = text.range(of: "pid=") else { return nil }
        return pid_t(text[r.upperBound...].prefix { $0.isNumber })
    }

    /// CPU seconds (user + system) of `pid` itself, from /proc.
    private static func processCPU(_ pid: pid_t) -> Double {
        statFields(pid).map { $0[11] + $0[12] } ?? 0
    }

    /// Fields 3… of /proc/PID/stat (after the command name) as numbers, clock ticks scaled
    /// to seconds for the time fields this file reads (utime 14, stime 15, cutime 16,
    /// cstime 17: indices 11–14).
    private static func statFields(_ pid: pid_t) -> [Double]? {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
              let close = stat.lastIndex(of: ")") else { return nil }
        let fields = stat[stat.index(after: close)...].split(separator: " ")
        guard fields.count > 14 else { return nil }
        let tick = Double(sysconf(Int32(_SC_CLK_TCK)))
        return fields.enumerated().map { i, f in (11...14).contains(i) ? (Double(f) ?? 0) / tick : (Double(f) ?? 0) }
    }

    /// CPU seconds of the sshd processes: the listener's reaped children (cutime + cstime)
    /// and every live process below it (utime + stime).
    private func daemonCPU() -> Double {
        var total = OpenSSH.statFields(daemon).map { $0[13] + $0[14] } ?? 0
        var parents: Set<pid_t> = [daemon]
        var grew = true
        let all = ((try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []).compactMap { pid_t($0) }
        var stats: [pid_t: [Double]] = [:]
        for p in all { stats[p] = OpenSSH.statFields(p) }
        while grew {
            grew = false
            for (p, f) in stats where !parents.contains(p) && parents.contains(pid_t(f[1])) {
                parents.insert(p)
                total += f[11] + f[12]
                grew = true
            }
        }
        return total
    }

    /// Stops sshd and removes the directory.
    func stop() {
        kill(daemon, SIGTERM)
        var status: Int32 = 0
        let deadline = Date().addingTimeInterval(5)
        while waitpid(daemon, &status, WNOHANG) == 0, Date() < deadline { usleep(10_000) }
        if Date() >= deadline { kill(daemon, SIGKILL); _ = waitpid(daemon, &status, 0) }
        try? FileManager.default.removeItem(atPath: dir)
    }


    /// A free TCP port on 127.0.0.1 (bound, read, released).
    private static func freeLoopbackPort() -> UInt16? {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return nil }
        defer { Glibc.close(fd) }
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_addr.s_addr = inet_addr("127.0.0.1")
        var len = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, len) == 0 && getsockname(fd, $0, &len) == 0 }
        }
        return bound ? UInt16(bigEndian: addr.sin_port) : nil
    }

    /// Runs `path` with `args` (no input, output discarded); its exit status, -1 if it could not start.
    @discardableResult
    static func run(_ path: String, _ args: [String]) -> Int32 {
        guard let pid = spawn(path, args, stdin: nil, log: "/dev/null") else { return -1 }
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0, errno == EINTR {}
        return status & 0x7f == 0 ? (status >> 8) & 0xff : -1
    }

    /// Starts `path` with `args`, stdin from `stdin` (or /dev/null), stdout and stderr to `log`.
    static func spawn(_ path: String, _ args: [String], stdin: String?, log: String) -> pid_t? {
        let argv: [UnsafeMutablePointer<CChar>?] = ([path] + args).map { strdup($0) } + [nil]
        defer { for a in argv { free(a) } }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, stdin ?? "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, log, O_WRONLY | O_CREAT | O_APPEND, 0o600)
        posix_spawn_file_actions_adddup2(&actions, 1, 2)
        // An empty signal mask: a child started from a Swift concurrency thread would otherwise
        // inherit blocked signals (sshd would ignore SIGTERM).
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var none = sigset_t(), all = sigset_t()
        sigemptyset(&none)
        sigfillset(&all)
        posix_spawnattr_setsigmask(&attributes, &none)
        posix_spawnattr_setsigdefault(&attributes, &all)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))
        var pid: pid_t = 0
        guard posix_spawn(&pid, path, &actions, &attributes, argv, environ) == 0 else { return nil }
        return pid
    }
}
