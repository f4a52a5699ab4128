import Testing

@testable import sesamectl_commands

/// The pages a browser login ends on: everything quoted is escaped, and each page is whole.
struct BrowserPageTests {
    /// Markup a provider might send back, in every kind of line a page has.
    static let quoted = "<script>alert(1)</script>&\"'"

    @Test func everyKindOfLineIsEscaped() {
        let page = BrowserPage(
            kind: .failed,
            heading: Self.quoted,
            lines: [.text(Self.quoted), .fact(Self.quoted, Self.quoted), .command(Self.quoted)]
        )
        let escaped = "&lt;script&gt;alert(1)&lt;/script&gt;&amp;&quot;&#39;"
        #expect(!page.html.contains("<script"))
        #expect(page.html.contains("<h1>\(escaped)</h1>"))
        #expect(page.html.contains("<p>\(escaped)</p>"))
        #expect(page.html.contains("<dt>\(escaped)</dt><dd>\(escaped)</dd>"))
        #expect(page.html.contains("<pre><code>\(escaped)</code></pre>"))
    }

    @Test func consecutiveFactsMakeOneList() {
        let lines: [BrowserPage.Line] = [.fact("a", "1"), .fact("b", "2"), .text("t"), .fact("c", "3")]
        #expect(
            BrowserPage.body(lines)
                == "<dl><dt>a</dt><dd>1</dd><dt>b</dt><dd>2</dd></dl>\n<p>t</p>\n<dl><dt>c</dt><dd>3</dd></dl>"
        )
    }

    @Test(arguments: [
        BrowserPage.notYours, .continuing, .noCode, .otherLogin, .alreadyFinishing,
        .refused(by: "web", error: "access_denied", description: nil), .failed(at: "web", "no"),
    ])
    func everyPageCarriesItsPolicyHeadingAndStyle(page: BrowserPage) {
        #expect(page.html.contains("<meta http-equiv=\"Content-Security-Policy\" content=\"\(BrowserPage.policy)\">"))
        #expect(page.html.contains("<h1>\(page.heading)</h1>"))
        #expect(page.html.contains("<main class=\"\(page.kind.rawValue)\">"))
        #expect(!page.html.contains("url(") && !page.html.contains("http:") && !page.html.contains("https:"))
    }
}
