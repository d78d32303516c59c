import Foundation

/// A private D-Bus *system* bus on a temporary socket, with mock daemons on it
/// (Debian's python3-dbusmock), for testing the real libupower-glib.
///
/// Only the processes started here are ever signalled, by PID.
final class PrivateSystemBus {
    let directory = TestDirectory("bus")
    private(set) var address = ""
    private var processes: [Process] = []

    /// The environment a child process needs to use this bus as its system bus.
    var environment: [String: String] {
        var env = ProcessInfo.processInfo.environment
        env["DBUS_SYSTEM_BUS_ADDRESS"] = address
        return env
    }

    init() throws {
        let socket = directory.url.appendingPathComponent("system_bus_socket").path
        let config = directory.url.appendingPathComponent("system.conf")
        try """
            <!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
             "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
            <busconfig>
              <type>system</type>
              <listen>unix:path=\(socket)</listen>
              <auth>EXTERNAL</auth>
              <policy context="default">
                <allow user="*"/>
                <allow own="*"/>
                <allow send_destination="*"/>
                <allow receive_sender="*"/>
              </policy>
            </busconfig>
            """.write(to: config, atomically: true, encoding: .utf8)
        let daemon = Process()
        daemon.executableURL = URL(fileURLWithPath: "/usr/bin/dbus-daemon")
        daemon.arguments = ["--config-file=\(config.path)", "--nofork", "--print-address"]
        let out = Pipe()
        daemon.standardOutput = out
        daemon.standardError = FileHandle.nullDevice
        try daemon.run()
        processes.append(daemon)
        // The daemon prints its address once it listens.
        let line = String(decoding: out.fileHandleForReading.availableData, as: UTF8.self)
        address = line.trimmingCharacters(in: .whitespacesAndNewlines)
        guard address.hasPrefix("unix:") else { throw BusError("dbus-daemon did not start: \(line)") }
    }

    deinit {
        // SIGKILL: the mocks have nothing to clean up, and children of the test runner
        // inherit its blocked signals, so SIGTERM may never arrive.
        for process in processes.reversed() where process.isRunning {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
        }
    }

    struct BusError: Error, CustomStringConvertible {
        let description: String
        init(_ description: String) { self.description = description }
    }

    /// Starts a dbusmock template and waits until it owns `name`.
    func startMock(template: String, name: String, parameters: [String: Any] = [:]) throws {
        let mock = Process()
        mock.executableURL = URL(fileURLWithPath: "/usr/bin/python3")   // Debian's, which has dbusmock
        let json = String(decoding: try JSONSerialization.data(withJSONObject: parameters), as: UTF8.self)
        mock.arguments = ["-m", "dbusmock", "--system", "--template", template, "-p", json]
        mock.environment = environment
        mock.standardOutput = FileHandle.nullDevice
        mock.standardError = FileHandle.nullDevice
        try mock.run()
        processes.append(mock)
        guard eventually(timeout: .seconds(30), { (try? self.owns(name)) == true }) else {
            throw BusError("\(template) mock never owned \(name)")
        }
    }

    /// Starts UPower's mock with no devices; `onBattery` is its `OnBattery` property.
    func startUPower(onBattery: Bool) throws {
        try startMock(template: "upower", name: "org.freedesktop.UPower", parameters: ["OnBattery": onBattery])
    }

    /// A process that owns UPower's name and never answers (a hung daemon).
    func startHungUPower() throws {
        let hung = Process()
        hung.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
        hung.arguments = ["-c", "import dbus, time; dbus.SystemBus().request_name('org.freedesktop.UPower'); time.sleep(600)"]
        hung.environment = environment
        hung.standardOutput = FileHandle.nullDevice
        hung.standardError = FileHandle.nullDevice
        try hung.run()
        processes.append(hung)
        guard eventually(timeout: .seconds(30), { (try? self.owns("org.freedesktop.UPower")) == true }) else {
            throw BusError("the hung daemon never owned its name")
        }
    }

    /// Sets UPower's display device (the template does not derive it from batteries).
    /// `state`: 1 charging, 2 discharging, 4 fully charged; `level`: UpDeviceLevel.
    func setDisplayDevice(battery: Bool, state: UInt32, percentage: Double, level: UInt32) throws {
        try send(["--dest=org.freedesktop.UPower", "/org/freedesktop/UPower", "org.freedesktop.DBus.Mock.SetupDisplayDevice",
                  "uint32:\(battery ? 2 : 0)", "uint32:\(state)", "double:\(percentage)", "double:\(percentage / 2)",
                  "double:50.0", "double:5.0", "int64:3600", "int64:0", "boolean:\(battery)", "string:battery",
                  "uint32:\(level)"])
    }

    /// Sets UPower's `OnBattery` (the template does not derive it either).
    func setOnBattery(_ value: Bool) throws {
        try send(["--dest=org.freedesktop.UPower", "/org/freedesktop/UPower", "org.freedesktop.DBus.Properties.Set",
                  "string:org.freedesktop.UPower", "string:OnBattery", "variant:boolean:\(value)"])
    }

    /// Starts NetworkManager's mock; `state`: NMState (20 disconnected, 70 connected).
    func startNetworkManager(state: UInt32) throws {
        try startMock(template: "networkmanager", name: "org.freedesktop.NetworkManager")
        try setNetworkState(state)   // as a uint32, which a JSON parameter would not be
    }

    /// Sets NetworkManager's global state, with its `StateChanged` signal.
    func setNetworkState(_ state: UInt32) throws {
        try send(["--dest=org.freedesktop.NetworkManager", "/org/freedesktop/NetworkManager",
                  "org.freedesktop.DBus.Mock.SetGlobalConnectionState", "uint32:\(state)"])
    }

    func owns(_ name: String) throws -> Bool {
        try send(["--dest=org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus.NameHasOwner", "string:\(name)"])
            .contains("boolean true")
    }

    @discardableResult
    func send(_ arguments: [String]) throws -> String {
        let run = try ChildProcess.run("/usr/bin/dbus-send", ["--system", "--print-reply", "--reply-timeout=5000"] + arguments,
                                       environment: environment)
        guard run.status == 0 else { throw BusError("dbus-send \(arguments) failed: \(run.stderr)") }
        let reply = run.stdout
        return reply
    }
}
