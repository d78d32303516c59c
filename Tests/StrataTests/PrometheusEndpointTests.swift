import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing

/// `strata sim --metrics-port`: the engine's metrics read by a real HTTP request, as a
/// Prometheus server scrapes them.
@Suite struct PrometheusEndpointTests {
    /// GET `url`: the status, the content type and the body.
    static func get(_ url: URL) throws -> (status: Int, type: String, body: String) {
        let done = DispatchSemaphore(value: 0)
        nonisolated(unsafe) var result: (Int, String, String)?
        nonisolated(unsafe) var failure: (any Error)?
        let task = URLSession.shared.dataTask(with: URLRequest(url: url, timeoutInterval: 10)) { data, response, error in
            if let http = response as? HTTPURLResponse {
                result = (http.statusCode, http.value(forHTTPHeaderField: "Content-Type") ?? "", String(decoding: data ?? Data(), as: UTF8.self))
            } else {
                failure = error
            }
            done.signal()
        }
        task.resume()
        done.wait()
        if let failure { throw failure }
        return try #require(result)
    }

    /// A sample's value in a Prometheus text page: `name{labels} value`.
    static func value(_ sample: String, in page: String) -> Double? {
        page.split(separator: "\n").first { $0.hasPrefix(sample + " ") }.flatMap { Double($0.split(separator: " ").last!) }
    }

    @Test(.timeLimit(.minutes(2))) func theSimServesItsMetricsToPrometheus() throws {
        let directory = TestDirectory()
        let sim = Process()
        sim.executableURL = URL(fileURLWithPath: try strataExecutable())
        sim.arguments = ["sim", "--db", directory.url.appendingPathComponent("canvas.db").path, "--entities", "200",
                         "--metrics-port", "0", "--duration", "60"]
        sim.currentDirectoryURL = directory.url
        let out = Pipe()
        sim.standardOutput = out
        sim.standardError = FileHandle.nullDevice
        let output = OutputCollector(out.fileHandleForReading)
        try sim.run()
        defer { if sim.isRunning { kill(sim.processIdentifier, SIGKILL); sim.waitUntilExit() } }

        #expect(eventually(timeout: .seconds(30)) { output.text.contains("/metrics") })
        let line = try #require(output.text.split(separator: "\n").first { $0.contains("metrics at http://") })
        let url = try #require(URL(string: String(line.split(separator: " ").last!)))

        // The exporter reports every 2 s: wait for commits to show, and the job counts (read
        // through the writer, with a 2 s bound: a busy machine's first reports go without them).
        var page = ""
        #expect(eventually(timeout: .seconds(30)) {
            page = (try? Self.get(url).body) ?? ""
            return (Self.value(#"strata_commits_total{durability="full"}"#, in: page) ?? 0) > 0
                && Self.value(#"strata_jobs{status="dead"}"#, in: page) != nil
        }, "\(page.prefix(2000))")
        let answer = try Self.get(url)
        #expect(answer.status == 200)
        #expect(answer.type.hasPrefix("text/plain"))
        #expect(answer.body.contains("# TYPE strata_commits_total counter"))
        #expect(answer.body.contains("# TYPE strata_wal_size_bytes gauge"))
        #expect(answer.body.contains(#"strata_commit_duration_seconds_bucket{durability="full""#), "commit durations as a histogram")
        #expect(Self.value(#"strata_flushes_total{reason="critical_delay"}"#, in: answer.body) != nil)
        #expect(Self.value(#"strata_alert{alert="crash_rate"}"#, in: answer.body) == 0)
        #expect(Self.value(#"strata_jobs{status="dead"}"#, in: answer.body) == 0)

        let missing = try Self.get(url.deletingLastPathComponent().appendingPathComponent("nothing"))
        #expect(missing.status == 404)

        kill(sim.processIdentifier, SIGTERM)
        sim.waitUntilExit()
        #expect(sim.terminationStatus == 0)
    }
}
