import Foundation
import Strata

/// The canvas's background work: every finished stroke gets a thumbnail, rendered by a
/// job on the engine's worker pool and kept as an asset file (a 32×32 PGM image) beside
/// the document. Erasing the stroke cancels its job and removes its file.
public enum Thumbnails {
    static let kind = "canvas.thumbnail"
    static let size = 32

    /// The job's payload: the stroke's points, encoded as the component encodes them.
    static func payload(_ xy: [Float]) -> [UInt8] {
        var writer = PayloadWriter()
        writer.write(xy)
        return writer.bytes
    }

    static func points(_ payload: [UInt8]) -> [Float] {
        payload.withUnsafeBytes { buffer in
            var reader = PayloadReader(buffer)
            return (try? reader.read() as [Float]) ?? []
        }
    }

    /// The stroke drawn into a 32×32 grey image (binary PGM): x is the stroke's time, y its height.
    static func render(_ xy: [Float]) -> [UInt8] {
        var pixels = [UInt8](repeating: 255, count: size * size)
        let xs = stride(from: 0, to: xy.count - 1, by: 2).map { xy[$0] }
        let ys = stride(from: 1, to: xy.count, by: 2).map { xy[$0] }
        if let minX = xs.min(), let maxX = xs.max(), let minY = ys.min(), let maxY = ys.max() {
            for (x, y) in zip(xs, ys) {
                let px = maxX > minX ? Int((x - minX) / (maxX - minX) * Float(size - 1)) : size / 2
                let py = maxY > minY ? Int((y - minY) / (maxY - minY) * Float(size - 1)) : size / 2
                pixels[py * size + px] = 0
            }
        }
        return Array("P5\n\(size) \(size)\n255\n".utf8) + pixels
    }

    /// Registers the handler and starts the engine's workers. With `trace`, every finished
    /// render appends "done <stroke id>" to that file (the crash tests read it).
    public static func start(on engine: Engine, trace: String?) {
        let assets = engine.assets
        let traceFD = trace.map { open($0, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0o644) } ?? -1
        engine.registerJobHandler(kind) { context in
            let image = render(points(context.job.payload))
            try context.checkCancellation()
            try assets.write(image, for: context.job.entity, name: "\(context.job.entity).pgm")
            if traceFD >= 0 {
                let line = Array("done \(context.job.entity) \(context.job.id)\n".utf8)
                _ = line.withUnsafeBytes { write(traceFD, $0.baseAddress, $0.count) }
            }
        }
        engine.startWorkers()
    }

    /// Finished strokes with neither a thumbnail nor a job get one queued (a session that
    /// ended before their job was committed). Tick thread, at start.
    public static func catchUp(_ engine: Engine) {
        let world = engine.world
        guard let rendered = try? Set(engine.assets.assets().compactMap(\.entity)) else { return }
        for (entity, style) in world.entities(with: StrokeStyle.self) where style.finished {
            guard let id = world.id(of: entity), !rendered.contains(id) else { continue }
            engine.jobs.enqueueSoon(kind, for: id, payload: payload(world.get(StrokePoints.self, for: entity)?.xy ?? []))
        }
    }
}
