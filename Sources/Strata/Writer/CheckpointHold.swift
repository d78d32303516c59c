/// The writer's checkpoints as its tasks may touch them, lent through the context
/// (``WriterContext/checkpoints``) rather than the writer itself: a backup copying the
/// file holds them off (a checkpoint, or a bulk commit leaving WAL mode, would write the
/// file under the copy), and asks for the one PASSIVE checkpoint its copy starts from.
/// Writer thread.
final class CheckpointHold {
    /// A task is copying the file: the writer neither checkpoints nor leaves WAL mode.
    var held = false

    /// Runs a PASSIVE checkpoint (never waits) unless the disk is nearly full; true if it
    /// copied the whole WAL back into the file. Installed by the writer.
    var passive: () -> Bool = { false }
}
