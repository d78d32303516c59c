import Strata

extension Engine.Options {
    /// How a command-line tool opens a document it was asked to change (`strata maintain`,
    /// `strata jobs pause`, `strata sync retry`): it must exist, and a damaged one is
    /// refused and left as it is. Only a repair (`strata maintain --repair`) or the host
    /// sets a file aside and replaces it.
    static var forTools: Engine.Options {
        var options = Engine.Options()
        options.createIfMissing = false
        options.replaceIfCorrupt = false
        options.idleIntegrityCheck = false
        return options
    }
}
