import Foundation

/// The devices' networks: one network namespace per device (`strata-dev<i>`), joined to
/// the host by a veth pair (`stv<i>h` here, `stv<i>d` there) on 10.231.i.0/30, the server
/// at 10.231.i.1 and the device at 10.231.i.2. A partition takes the host's end down: the
/// device's packets go nowhere (its calls time out, as on a network that drops them) until
/// it comes up again. Needs root and `ip` (iproute2). The names and addresses are fixed:
/// one checker at a time on a machine (a second waits for the first's lock).
final class SyncTortureNetwork {
    let devices: Int
    private let lock: Int32

    static func namespace(_ index: Int) -> String { "strata-dev\(index)" }
    static func hostAddress(_ index: Int) -> String { "10.231.\(index).1" }
    private static func hostLink(_ index: Int) -> String { "stv\(index)h" }
    private static func deviceLink(_ index: Int) -> String { "stv\(index)d" }

    /// Makes the namespaces and links (any left from an earlier run are replaced).
    init(devices: Int) throws {
        guard getuid() == 0 else { throw TortureSetupError("the sync checker makes network namespaces: run it as root") }
        self.devices = devices
        lock = open("/run/strata-sync-checker.lock", O_CREAT | O_RDWR, 0o644)
        if lock >= 0 { flock(lock, LOCK_EX) }
        teardown()
        for i in 1 ... devices {
            let ns = Self.namespace(i)
            try ip(["netns", "add", ns])
            try ip(["link", "add", Self.hostLink(i), "type", "veth", "peer", "name", Self.deviceLink(i)])
            try ip(["link", "set", Self.deviceLink(i), "netns", ns])
            try ip(["addr", "add", "\(Self.hostAddress(i))/30", "dev", Self.hostLink(i)])
            try ip(["link", "set", Self.hostLink(i), "up"])
            try ip(["netns", "exec", ns, "ip", "addr", "add", "10.231.\(i).2/30", "dev", Self.deviceLink(i)])
            try ip(["netns", "exec", ns, "ip", "link", "set", Self.deviceLink(i), "up"])
            try ip(["netns", "exec", ns, "ip", "link", "set", "lo", "up"])
        }
    }

    /// Cuts device `index` off from the server (`connected: false`) or heals it.
    func set(_ index: Int, connected: Bool) throws {
        try ip(["link", "set", Self.hostLink(index), connected ? "up" : "down"])
    }

    deinit {
        teardown()
        if lock >= 0 { close(lock) }
    }

    /// Removes every namespace and link of the checker (deleting a namespace deletes its
    /// end of the pair, and so the pair).
    func teardown() {
        for i in 1 ... 8 {
            _ = try? ip(["netns", "delete", Self.namespace(i)])
            _ = try? ip(["link", "delete", Self.hostLink(i)])
        }
    }

    private func ip(_ arguments: [String]) throws {
        try SpawnedProcess.run([FileManager.default.isExecutableFile(atPath: "/usr/sbin/ip") ? "/usr/sbin/ip" : "/sbin/ip"] + arguments)
    }
}
