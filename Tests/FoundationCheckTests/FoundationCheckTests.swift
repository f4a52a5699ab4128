import Testing

@testable import sesame_foundation_check

/// Which lines the build's Foundation check takes for an import of Foundation.
struct FoundationCheckTests {
    @Test func everySpellingOfAnImportOfFoundationIsFound() {
        for line in [
            "import Foundation", "  import Foundation", "import Foundation;", "@preconcurrency import Foundation",
            "@_exported import Foundation", "public import Foundation", "package import struct Foundation.URL",
            "import class Foundation.JSONDecoder", "import FoundationNetworking", "import FoundationXML",
        ] {
            #expect(FoundationCheck.importsFoundation(Substring(line)), "\(line)")
        }
    }

    @Test func otherModulesCommentsAndConditionsAreNot() {
        for line in [
            "import FoundationEssentials", "import FoundationInternationalization", "import SesameCore",
            "// import Foundation", "#if canImport(Foundation)", "let import = Foundation", "",
        ] {
            #expect(!FoundationCheck.importsFoundation(Substring(line)), "\(line)")
        }
    }
}
