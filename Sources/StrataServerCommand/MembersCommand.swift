import ArgumentParser
import Foundation
import StrataServer

/// `strata-server members add|remove|list`: who may do what with a document, straight in
/// PostgreSQL (the operator's tool; effective at the next request, no new token needed).
struct MembersCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "members", abstract: "Grant, revoke and list roles on a document.",
        subcommands: [Add.self, Remove.self, List.self])

    struct Target: ParsableArguments {
        @Option(help: "The PostgreSQL server, e.g. postgresql://strata@/strata?host=/run/postgresql.")
        var database: String

        @Option(help: "The document.")
        var document: String
    }

    struct Add: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Give a subject a role (replacing the one it had).")
        @OptionGroup var target: Target
        @Option(help: "The subject (a token's sub).") var subject: String
        @Option(help: "reader, writer or owner.") var role: String

        func run() throws {
            guard let role = Role(rawValue: role) else { throw ValidationError("--role must be reader, writer or owner") }
            try members(target) { try $0.grant(role, to: subject, on: target.document) }
            print("\(subject) is now a \(role.rawValue) of \"\(target.document)\"")
        }
    }

    struct Remove: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Take a subject's role away.")
        @OptionGroup var target: Target
        @Option(help: "The subject.") var subject: String

        func run() throws {
            let removed = try members(target) { try $0.revoke(subject, on: target.document) }
            print(removed ? "\(subject) is no longer a member of \"\(target.document)\"" : "\(subject) was not a member of \"\(target.document)\"")
        }
    }

    struct List: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "List a document's members.")
        @OptionGroup var target: Target

        func run() throws {
            let all = try members(target) { try $0.list(target.document) }
            if all.isEmpty { print("\"\(target.document)\" has no members") }
            for member in all { print("\(member.role.rawValue)\t\(member.subject)") }
        }
    }
}

private func members<T>(_ target: MembersCommand.Target, _ body: (Members) throws -> T) throws -> T {
    do {
        let members = try Members(url: target.database)
        defer { members.close() }
        return try body(members)
    } catch {
        printError("strata-server members: \(error)")
        throw ExitCode.failure
    }
}
