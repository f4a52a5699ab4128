import FoundationEssentials

/// The names owners give their accounts: chosen, changed, and looked up in place of an id.
extension SessionEngine {
    /// Gives the account `id` the name `name` (nil takes its name away). A name is lower-case
    /// letters, digits, `-`, `_` and `.`, starts with a letter, is at most 64 characters, is not
    /// shaped like an account id (`provider-` and 8 hex digits: an id is looked up before a name,
    /// so such a name could come to mean an account made later), and is the owner's name for no
    /// other account.
    public func rename(_ id: String, to name: String?) throws(SessionError) -> Account {
        guard var stored = accounts[id] else { throw .noSuchAccount(id) }
        if let name {
            try Self.checkForm(of: name)
            let owner = stored.account.ownerUID
            if let other = accounts.values.first(where: {
                $0.account.name == name && $0.account.ownerUID == owner && $0.account.id != id
            }) {
                throw .invalidName(name: name, reason: "the owner's account \(other.account.id) has it")
            }
        }
        guard stored.account.name != name else { return stored.account }
        stored.account.name = name
        stored.account.updatedAt = clock.now
        try commit([id: stored], announcing: [])
        return stored.account
    }

    private static func checkForm(of name: String) throws(SessionError) {
        let allowed = name.unicodeScalars.allSatisfy {
            ("a"..."z").contains($0) || ("0"..."9").contains($0) || "-_.".unicodeScalars.contains($0)
        }
        guard allowed, let first = name.unicodeScalars.first, ("a"..."z").contains(first), name.utf8.count <= 64 else {
            throw .invalidName(
                name: String(name.prefix(64)),
                reason: "a name is up to 64 lower-case letters, digits, '-', '_' or '.', starting with a letter"
            )
        }
        // Decided by the form alone: whether some account has that id is not the caller's to learn.
        let tail = name.split(separator: "-").last ?? ""
        if name.contains("-"), tail.count == 8, tail.allSatisfy(\.isHexDigit) {
            throw .invalidName(name: name, reason: "it is shaped like an account id (provider-8 hex digits)")
        }
    }
}

/// Finding the account a caller means: by id, by the name its owner chose, or by its
/// provider's name when that picks one account.
extension Sequence where Element == Account {
    /// The id of the account `reference` names among these (the accounts a caller may see), or
    /// nil. An id names any account the caller may see; a name, or a provider's name with one
    /// account that is not logged out, names only the caller's own accounts: another user must
    /// not be able to name an account so that a script of root's, or of anyone's, picks it up.
    public func id(of reference: String, caller: UInt32) -> String? {
        let owned = filter { $0.ownerUID == caller }
        if contains(where: { $0.id == reference }) { return reference }
        let named = owned.filter { $0.name == reference }
        if named.count == 1 { return named[0].id }
        let ofProvider = owned.filter { $0.provider == reference && $0.state != .loggedOut }
        return ofProvider.count == 1 ? ofProvider[0].id : nil
    }
}
